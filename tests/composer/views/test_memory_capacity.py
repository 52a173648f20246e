"""Every capacity figure of CXL memory counts the slices compositions hold: the dashboard, the
pool page, the device table (page and API, with its filters), the pool API and the topology.

Alice holds a 256 GiB slice of the tiny world's one 1 TiB memory device (composed for real
on the simulated fabric); admin and alice see the same figures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.models import Composition
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager, Pool
from tests.composer.services.test_health import compose

pytestmark = pytest.mark.django_db

VIEWERS = ["admin_user", "alice"]


@pytest.fixture
def memory(synced: FabricManager) -> Device:
    """The world's memory device, in a pool of its own."""
    pool = Pool.objects.create(name="CXL memory", slug="cxl-memory", kind="cxl_memory")
    Device.objects.filter(kind="cxl_memory").update(pool=pool)
    return Device.objects.get(kind="cxl_memory")


@pytest.fixture
def sliced(memory: Device, acme: Any, alice: Any) -> Composition:
    """Alice's composition holding 256 GiB of the memory device (and a GPU)."""
    return compose(
        acme, alice, {"items": [{"kind": "gpu", "count": 1}], "memory_gib": 256}, name="llm-serve"
    )


@pytest.mark.parametrize("who", VIEWERS)
def test_the_dashboard_counts_the_gib_slices_hold(
    who: str,
    sliced: Composition,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(persona(who)).get(reverse("composer:dashboard"))
    body = response.content.decode()
    assert response.context["memory_totals"] == {"capacity": 1024, "allocated": 256, "free": 768}
    assert "768 GiB free · 256 GiB allocated" in body
    assert "768 GiB free of 1 TiB · 25% allocated" in " ".join(body.split())


@pytest.mark.parametrize("who", VIEWERS)
def test_the_pool_page_counts_the_gib_slices_hold(
    who: str,
    sliced: Composition,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(persona(who)).get(reverse("composer:pool_detail", args=["cxl-memory"]))
    body = response.content.decode()
    cap = response.context["cap"]
    assert (cap.capacity, cap.allocated, cap.free, cap.unavailable) == (1024, 256, 768, 0)
    assert "Allocated 256 GiB" in body and "Free 768 GiB" in body
    assert "llm-serve" in body  # beside the holder that explains the figure
    # The capacity card: the figure carries its unit; what is under it is no second unit.
    capacity_card = body.split('<div class="stat-label">Capacity</div>')[1].split("</div></div>")[0]
    assert "1 TiB" in capacity_card and "in 1 device" in capacity_card
    assert ">GiB<" not in capacity_card


@pytest.mark.parametrize("who", VIEWERS)
def test_the_device_table_finds_a_sliced_device_as_bound_with_its_gib(
    who: str,
    sliced: Composition,
    memory: Device,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    response = client.get(reverse("fabric:device_list"), {"kind": "cxl_memory", "state": "bound"})
    assert [d.name for d in response.context["page"]] == [memory.name]
    assert "256 GiB allocated, 768 GiB free" in response.content.decode()
    free = client.get(reverse("fabric:device_list"), {"kind": "cxl_memory", "state": "free"})
    assert list(free.context["page"]) == []

    detail = client.get(reverse("fabric:device_detail", args=[memory.pk])).content.decode()
    assert "256 GiB allocated, 768 GiB free" in detail


@pytest.mark.parametrize("who", VIEWERS)
def test_the_api_gives_the_same_figures(
    who: str, sliced: Composition, memory: Device, persona: Callable[[str], Any], api_as: Any
) -> None:
    api = api_as(persona(who))
    rows = api.get("/api/v1/devices/", {"kind": "cxl_memory", "state": "bound"}).json()["results"]
    assert [(r["name"], r["state"], r["allocated_gib"], r["free_gib"]) for r in rows] == [
        (memory.name, DeviceState.BOUND, 256, 768)
    ]
    gpu = api.get("/api/v1/devices/", {"kind": "gpu", "state": "bound"}).json()["results"][0]
    assert (gpu["allocated_gib"], gpu["free_gib"]) == (0, None)  # bound whole, not sliced
    pool = api.get("/api/v1/pools/cxl-memory/").json()
    assert (pool["unit"], pool["allocated"], pool["free"], pool["unavailable"]) == (
        "GiB",
        256,
        768,
        0,
    )


@pytest.mark.parametrize("collapse", ["false", "true"])
def test_the_topology_colours_a_sliced_device_by_its_use(
    collapse: str, sliced: Composition, memory: Device, admin_user: Any, api_as: Any
) -> None:
    body = api_as(admin_user).get("/api/v1/topology/", {"collapse": collapse}).json()
    nodes = {n["data"]["id"]: n["data"] for n in body["nodes"]}
    box = nodes[f"enclosure:{memory.enclosure_id}"]
    if collapse == "true":
        assert (box["memory_gib"], box["allocated_gib"], box["devices_bound"]) == (1024, 256, 1)
        assert f"device:{memory.pk}" not in nodes
    else:
        device = nodes[f"device:{memory.pk}"]
        assert (device["state"], device["allocated_gib"], device["free_gib"]) == ("bound", 256, 768)
