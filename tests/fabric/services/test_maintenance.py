"""Maintenance: in and out, audited, refused where it must be, kept by sync; what depends."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from fabric import holders
from fabric.choices import ChangeAction, ComponentState, DeviceState, Health
from fabric.holders import Holder
from fabric.models import ChangeRecord, Device, Enclosure, FabricManager, Switch
from fabric.services.maintenance import maintenance_dependents, maintenance_set
from fabric.services.sync import inventory_sync
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db


def test_a_free_device_goes_into_maintenance_and_back_audited(
    small: SmallFabric, admin_user: Any
) -> None:
    gpu = small.gpus[0]
    assert maintenance_set(
        target=gpu, on=True, actor=admin_user, reason="reseat", remote_addr="192.0.2.4"
    )
    assert gpu.state == DeviceState.MAINTENANCE
    assert maintenance_set(target=gpu, on=True, actor=admin_user) is False  # idempotent
    assert maintenance_set(target=gpu, on=False, actor=admin_user)
    assert gpu.state == DeviceState.FREE

    on, off = ChangeRecord.objects.filter(target_type="device", target_id=gpu.pk).order_by("id")
    assert (on.action, on.changes, on.actor, on.remote_addr) == (
        ChangeAction.CHANGED,
        {"state": ["free", "maintenance"]},
        admin_user,
        "192.0.2.4",
    )
    assert on.message == "put in maintenance: reseat"
    assert off.changes == {"state": ["maintenance", "free"]}


def test_a_device_comes_back_as_the_fabric_sees_it(small: SmallFabric, admin_user: Any) -> None:
    bound, failed = small.gpus[0], small.gpus[1]
    Device.objects.filter(pk=bound.pk).update(state=DeviceState.BOUND, bound_host=small.hosts[0])
    Device.objects.filter(pk=failed.pk).update(state=DeviceState.FAILED, health=Health.CRITICAL)
    for device in (bound, failed):
        device.refresh_from_db()
        maintenance_set(target=device, on=True, actor=admin_user)
        assert device.state == DeviceState.MAINTENANCE
        maintenance_set(target=device, on=False, actor=admin_user)
    assert (bound.state, failed.state) == (DeviceState.BOUND, DeviceState.FAILED)


@pytest.mark.parametrize(
    ("state", "field"), [(DeviceState.RESERVED, "on"), (DeviceState.ABSENT, "on")]
)
def test_a_reserved_or_absent_device_is_refused_naming_the_field(
    small: SmallFabric, admin_user: Any, state: str, field: str
) -> None:
    gpu = small.gpus[0]
    Device.objects.filter(pk=gpu.pk).update(state=state)
    with pytest.raises(ValidationError) as caught:
        maintenance_set(target=gpu, on=True, actor=admin_user)
    assert field in caught.value.message_dict
    assert Device.objects.get(pk=gpu.pk).state == state
    assert not ChangeRecord.objects.filter(target_type="device").exists()


def test_bad_input_names_the_field(small: SmallFabric, admin_user: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        maintenance_set(target=small.gpus[0], on=True, actor=admin_user, reason="x" * 201)
    assert "reason" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        maintenance_set(target=small.hosts[0], on=True, actor=admin_user)  # type: ignore[arg-type]
    assert "target" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        maintenance_set(target=small.gpus[0], on="yes", actor=admin_user)  # type: ignore[arg-type]
    assert "on" in caught.value.message_dict


@pytest.mark.parametrize("which", ["switches", "enclosures"])
def test_switches_and_enclosures_move_between_active_and_maintenance(
    small: SmallFabric, admin_user: Any, which: str
) -> None:
    target = getattr(small, which)[0]
    maintenance_set(target=target, on=True, actor=admin_user)
    assert target.state == ComponentState.MAINTENANCE
    maintenance_set(target=target, on=False, actor=admin_user)
    assert target.state == ComponentState.ACTIVE
    type(target).objects.filter(pk=target.pk).update(state=ComponentState.ABSENT)
    target.refresh_from_db()
    with pytest.raises(ValidationError) as caught:
        maintenance_set(target=target, on=True, actor=admin_user)
    assert "on" in caught.value.message_dict


def test_inventory_sync_keeps_maintenance(sim_manager: FabricManager, admin_user: Any) -> None:
    inventory_sync(manager=sim_manager)
    gpu = Device.objects.get(external_id="gpu-a-01-1")
    switch = Switch.objects.get(name="cxl-spine-1")
    enclosure = Enclosure.objects.get(name="gpu-a-02")
    for target in (gpu, switch, enclosure):
        maintenance_set(target=target, on=True, actor=admin_user)
    inventory_sync(manager=sim_manager)
    assert Device.objects.get(pk=gpu.pk).state == DeviceState.MAINTENANCE
    assert Switch.objects.get(pk=switch.pk).state == ComponentState.MAINTENANCE
    assert Enclosure.objects.get(pk=enclosure.pk).state == ComponentState.MAINTENANCE


def test_dependents_of_a_switch_are_what_only_it_connects(
    small: SmallFabric, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = small.gpus[4]  # gpu-b-0, behind sw-b
    Device.objects.filter(pk=held.pk).update(state=DeviceState.BOUND, bound_host=small.hosts[1])

    def lookup(device: Device, user: Any) -> list[Holder]:
        return [Holder(name=f"comp-of-{device.name}", url="/c/1/", state="Bound", owner="Acme")]

    monkeypatch.setattr(holders, "_LOOKUPS", [lookup])
    found = maintenance_dependents(target=small.switches[1], user=admin_user)

    reasons = {row["name"]: row["reason"] for row in found.devices}
    # gpu-b and host-b hang off sw-b alone: they are lost. gpu-a is lost to host-b only,
    # which is lost anyway, and host-a only no longer reaches what is lost: neither counts.
    assert reasons == dict.fromkeys(
        ["gpu-b-0", "gpu-b-1", "gpu-b-2", "gpu-b-3"], "cut off: no path to any host"
    )
    assert [(row["name"], row["reason"]) for row in found.hosts] == [
        ("host-b", "cut off: loses its last uplink")
    ]
    assert found.devices_degraded == 0
    assert found.held_count == 1
    ((device, rows),) = found.holders
    assert device.pk == held.pk
    assert [h.name for h in rows] == ["comp-of-gpu-b-0"]


def test_a_device_depends_only_on_itself(small: SmallFabric, admin_user: Any) -> None:
    found = maintenance_dependents(target=small.gpus[0], user=admin_user)
    assert [row["name"] for row in found.devices] == ["gpu-a-0"]
    assert (found.held_count, found.holders) == (0, [])
