"""Pool list and pool pages: availability for everyone, the way to the devices for operators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fabric.choices import DeviceState, Health
from fabric.models import Device
from tests.factories.fabric import DeviceFactory, SmallFabric
from tests.support.personas import PERSONAS, TENANTS

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", PERSONAS)
def test_every_persona_sees_the_pools(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    client = client_as(persona(who))
    response = client.get(reverse("composer:pool_list"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "H100 GPUs" in body and "CXL memory" in body and "2 TiB" in body
    for pool in small.pools:
        assert client.get(reverse("composer:pool_detail", args=[pool.slug])).status_code == 200


def test_the_pool_page_counts_devices_by_model_and_state(
    small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    Device.objects.filter(name__in=["gpu-a-0", "gpu-a-1"]).update(state=DeviceState.BOUND)
    Device.objects.filter(name="gpu-b-0").update(state=DeviceState.MAINTENANCE)
    DeviceFactory(name="gpu-x", model="H100 NVL", pool=small.pools[0], health=Health.WARNING)
    DeviceFactory(name="gpu-gone", pool=small.pools[0], state=DeviceState.ABSENT)
    response = client_as(alice).get(reverse("composer:pool_detail", args=["h100"]))
    rows = {r.model: r for r in response.context["model_rows"]}
    assert rows["H100 SXM"].devices == {"free": 5, "bound": 2, "maintenance": 1}
    assert rows["H100 NVL"].devices == {"free": 1}
    assert response.context["device_total"] == 9  # the absent one counts nowhere
    cap = response.context["cap"]
    assert (cap.capacity, cap.allocated, cap.free, cap.unavailable) == (9, 2, 6, 1)
    assert 'class="progress-stacked capacity-bar capacity-bar-lg"' in response.content.decode()


def test_a_memory_pool_is_counted_in_gib(
    small: SmallFabric, bob: Any, client_as: Callable[[Any], Client]
) -> None:
    Device.objects.filter(name="mem-a-1").update(state=DeviceState.BOUND, allocated_gib=1024)
    response = client_as(bob).get(reverse("composer:pool_detail", args=["cxl-memory"]))
    body = response.content.decode()
    assert response.context["cap"].unit == "GiB"
    assert "Allocated 1 TiB" in body and "Capacity 2 TiB" in body
    assert "in GiB slices" in body


def test_operators_get_the_pool_s_device_list(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(admin_user).get(reverse("composer:pool_detail", args=["h100"])).content
    assert f"{reverse('fabric:device_list')}?pool=h100" in body.decode()


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_see_availability_only(
    who: str, small: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(reverse("composer:pool_detail", args=["h100"]))
    body = response.content.decode()
    assert 'id="pool-devices-link"' not in body
    assert "?pool=h100" not in body
    for gpu in small.gpus:
        assert gpu.serial not in body


def test_an_unknown_pool_is_404(
    small: SmallFabric, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    assert client_as(carol).get(reverse("composer:pool_detail", args=["nope"])).status_code == 404
