"""Several elements into maintenance at once: what they take down together, all of them or
none, each change audited as its own."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from fabric.choices import ComponentState, DeviceState, PortRole
from fabric.models import ChangeRecord, Device, Switch
from fabric.services.maintenance import (
    BULK_MAX,
    maintenance_dependents,
    maintenance_dependents_all,
    maintenance_set_all,
)
from tests.factories.fabric import LinkFactory, PortFactory, SmallFabric

pytestmark = pytest.mark.django_db


def _second_uplink(small: SmallFabric) -> None:
    """host-a gets a second uplink, to sw-b: either switch alone no longer cuts it off."""
    host_port = PortFactory.create(
        manager=small.manager, switch=None, host=small.hosts[0], role=PortRole.UPLINK, name="up1"
    )
    switch_port = PortFactory.create(
        manager=small.manager, switch=small.switches[1], role=PortRole.HOST, name="p12"
    )
    LinkFactory.create(manager=small.manager, a_port=switch_port, b_port=host_port)


def test_what_several_take_down_together_is_more_than_each_alone(
    small: SmallFabric, admin_user: Any
) -> None:
    _second_uplink(small)
    sw_a, sw_b = small.switches
    alone = [maintenance_dependents(target=s, user=admin_user) for s in (sw_a, sw_b)]
    assert all("host-a" not in {h["name"] for h in d.hosts} for d in alone)
    together = maintenance_dependents_all(targets=[sw_a, sw_b], user=admin_user)
    assert {h["name"] for h in together.hosts} == {"host-a", "host-b"}
    assert {d["name"] for d in together.devices} >= {"gpu-a-0", "gpu-b-0"}


def test_all_change_audited_each_or_none(small: SmallFabric, admin_user: Any) -> None:
    sw_a, sw_b = small.switches
    changed = maintenance_set_all(
        targets=[sw_a, sw_b],
        on=True,
        actor=admin_user,
        reason="firmware 4.2",
        remote_addr="192.0.2.9",
    )
    assert changed == [sw_a, sw_b]
    assert set(Switch.objects.values_list("state", flat=True)) == {ComponentState.MAINTENANCE}
    records = ChangeRecord.objects.filter(target_type="switch").order_by("target_id")
    assert [(r.target_id, r.message, r.remote_addr) for r in records] == [
        (sw_a.pk, "put in maintenance: firmware 4.2", "192.0.2.9"),
        (sw_b.pk, "put in maintenance: firmware 4.2", "192.0.2.9"),
    ]
    # Again: nothing changes, nothing more is recorded.
    assert maintenance_set_all(targets=[sw_a, sw_b], on=True, actor=admin_user) == []
    assert ChangeRecord.objects.filter(target_type="switch").count() == 2


def test_one_refusal_rolls_the_others_back_and_names_the_element(
    small: SmallFabric, admin_user: Any
) -> None:
    free, reserved = small.gpus[0], small.gpus[1]
    Device.objects.filter(pk=reserved.pk).update(state=DeviceState.RESERVED)
    reserved.refresh_from_db()
    with pytest.raises(ValidationError) as caught:
        maintenance_set_all(targets=[free, reserved], on=True, actor=admin_user)
    (message,) = caught.value.message_dict["targets"]
    assert message.startswith(f"Device {reserved.name} is reserved")
    assert message.endswith("Nothing changed.")
    assert Device.objects.get(pk=free.pk).state == DeviceState.FREE
    assert not ChangeRecord.objects.filter(target_type="device").exists()


def test_bad_input_names_the_field(small: SmallFabric, admin_user: Any) -> None:
    with pytest.raises(ValidationError) as nothing:
        maintenance_set_all(targets=[], on=True, actor=admin_user)
    assert "targets" in nothing.value.message_dict
    with pytest.raises(ValidationError) as too_many:
        maintenance_set_all(targets=[small.gpus[0]] * (BULK_MAX + 1), on=True)
    assert "At most" in too_many.value.message_dict["targets"][0]
    with pytest.raises(ValidationError) as reason:
        maintenance_set_all(targets=small.gpus[:2], on=True, reason="x" * 201)
    assert "reason" in reason.value.message_dict
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}
