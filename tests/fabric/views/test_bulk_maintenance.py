"""The bulk maintenance pages: ticked rows on the device, enclosure and switch lists, a
confirmation naming every element and what they take down together, then all or none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fabric.choices import ComponentState, DeviceState
from fabric.models import ChangeRecord, Device, Switch
from fabric.services.maintenance import BULK_MAX
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db

BULK = reverse("fabric:bulk_maintenance")


def test_lists_offer_ticks_to_operators_only(
    small: SmallFabric, admin_user: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    operator = client_as(admin_user)
    for name in ("fabric:device_list", "fabric:switch_list", "fabric:enclosure_list"):
        body = operator.get(reverse(name)).content.decode()
        assert "data-bulk-form" in body and 'name="ids"' in body, name
    member = client_as(alice).get(reverse("fabric:device_list")).content.decode()
    assert "data-bulk-form" not in member and 'name="ids"' not in member


def test_the_confirmation_names_each_element_and_what_they_take_down(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    sw_a, sw_b = small.switches
    response = client_as(admin_user).get(
        BULK,
        {
            "kind": "switch",
            "ids": [str(sw_a.pk), str(sw_b.pk)],
            "on": "1",
            "next": "/fabric/switches/?q=sw",
        },
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "Put 2 switches in maintenance?" in body
    assert "sw-a" in body and "sw-b" in body
    assert {d["name"] for d in response.context["dependents"].devices} >= {"gpu-a-0", "gpu-b-3"}
    assert 'name="next" value="/fabric/switches/?q=sw"' in body
    assert Switch.objects.filter(state=ComponentState.MAINTENANCE).count() == 0  # only asked


def test_confirming_changes_all_and_goes_back_to_the_list(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    gpus = small.gpus[:3]
    client = client_as(admin_user)
    response = client.post(
        BULK,
        {
            "kind": "device",
            "ids": [g.pk for g in gpus],
            "on": "1",
            "reason": "reseat",
            "next": "/fabric/devices/?kind=gpu",
        },
        follow=True,
    )
    assert response.redirect_chain == [("/fabric/devices/?kind=gpu", 302)]
    assert "3 devices in maintenance" in response.content.decode()
    assert set(
        Device.objects.filter(pk__in=[g.pk for g in gpus]).values_list("state", flat=True)
    ) == {DeviceState.MAINTENANCE}
    assert (
        ChangeRecord.objects.filter(
            target_type="device", message="put in maintenance: reseat"
        ).count()
        == 3
    )
    back = client.post(
        BULK, {"kind": "device", "ids": [g.pk for g in gpus], "on": "0"}, follow=True
    )
    assert "3 devices back in service" in back.content.decode()
    assert back.redirect_chain[-1][0] == reverse("fabric:device_list")


def test_a_refusal_changes_nothing_and_says_which(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    Device.objects.filter(pk=small.gpus[1].pk).update(state=DeviceState.RESERVED)
    response = client_as(admin_user).post(
        BULK,
        {"kind": "device", "ids": [small.gpus[0].pk, small.gpus[1].pk], "on": "1"},
        follow=True,
    )
    body = response.content.decode()
    assert f"Device {small.gpus[1].name} is reserved" in body and "Nothing changed." in body
    assert Device.objects.get(pk=small.gpus[0].pk).state == DeviceState.FREE


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"kind": "device", "on": "1"}, "Elements: Choose at least one element."),
        ({"kind": "device", "ids": "abc", "on": "1"}, "Elements: Not element ids: abc."),
        ({"kind": "device", "ids": "999999", "on": "1"}, "Elements: No device with id 999999."),
        ({"kind": "host", "ids": "1", "on": "1"}, "Kind: Select a valid choice."),
        ({"kind": "device", "ids": "1", "on": "maybe"}, "Maintenance: Select a valid choice."),
        (
            {"kind": "device", "ids": ",".join(str(i) for i in range(1, BULK_MAX + 2)), "on": "1"},
            f"Elements: At most {BULK_MAX} elements at once",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    params: dict[str, str],
    words: str,
) -> None:
    response = client_as(admin_user).get(BULK, params)
    assert response.status_code == 400
    assert words in response.content.decode()


def test_next_never_leaves_the_site(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).post(
        BULK,
        {
            "kind": "switch",
            "ids": [small.switches[0].pk],
            "on": "1",
            "next": "https://evil.example/",
        },
    )
    assert response["Location"] == reverse("fabric:switch_list")


def test_tenant_members_get_404(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    params: dict[str, Any] = {"kind": "device", "ids": [small.gpus[0].pk], "on": "1"}
    assert client.get(BULK, params).status_code == 404
    assert client.post(BULK, params).status_code == 404
    assert Device.objects.get(pk=small.gpus[0].pk).state == DeviceState.FREE
