"""A fabric manager that gives no link latency: placement estimates it from hop counts, at a
stated figure per hop, and says so in the explanation and in a latency rejection."""

from __future__ import annotations

import pytest

from composer.placement.engine import place
from composer.placement.load import build_snapshot, structure_memo_clear
from composer.placement.request import DeviceItem, Placement, PlacementRequest, Rejection
from fabric.latency import ESTIMATED_HOP_LATENCY_NS
from fabric.models import Link
from fabric.services.sync import inventory_sync
from fabric.simulator.models import SimulatedElement
from tests.fabric.simulated_world import simulated_manager
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


def _words(plan: Placement) -> str:
    return " ".join(note.text(operator=True) for note in plan.explanation)


def test_a_path_without_reported_latency_is_estimated_from_its_hops_and_said_to_be() -> None:
    fabric = fabric_small()
    structure_memo_clear()
    host_a = f"host:{fabric.hosts[0].pk}"
    gpu_a, gpu_b, _box = (f"enclosure:{e.pk}" for e in fabric.enclosures)
    measured = place(PlacementRequest(items=(DeviceItem("gpu", 1),), host=host_a), build_snapshot())
    assert isinstance(measured, Placement)
    assert "estimated" not in _words(measured)

    Link.objects.update(latency_ns=0)  # the manager gives none
    snapshot = build_snapshot()
    near, far = snapshot.reach[host_a][gpu_a], snapshot.reach[host_a][gpu_b]
    assert (near.latency_ns, near.hops, near.estimated_hops) == (
        2 * ESTIMATED_HOP_LATENCY_NS,
        2,
        2,
    )
    assert far.latency_ns == 3 * ESTIMATED_HOP_LATENCY_NS and far.estimated_hops == 3

    plan = place(PlacementRequest(items=(DeviceItem("gpu", 1),), host=host_a), snapshot)
    assert isinstance(plan, Placement)
    (pick,) = plan.devices
    assert pick.latency_ns == 2 * ESTIMATED_HOP_LATENCY_NS
    words = _words(plan)
    assert "estimated from hop counts" in words
    assert f"{ESTIMATED_HOP_LATENCY_NS} ns" in words
    tenant_words = " ".join(note.text(operator=False) for note in plan.explanation)
    assert "estimated from hop counts" in tenant_words


def test_a_latency_ceiling_over_estimated_paths_says_the_latency_is_estimated() -> None:
    fabric = fabric_small()
    structure_memo_clear()
    Link.objects.update(latency_ns=0)
    request = PlacementRequest(
        items=(DeviceItem("gpu", 1),),
        host=f"host:{fabric.hosts[0].pk}",
        max_latency_ns=ESTIMATED_HOP_LATENCY_NS,  # one hop: no enclosure is that near
    )
    rejection = place(request, build_snapshot())
    assert isinstance(rejection, Rejection) and rejection.code == "latency"
    assert "estimated from hop counts" in rejection.nearest.text(operator=True)


def test_a_latency_the_driver_marks_as_not_reported_is_stored_as_none_given() -> None:
    manager = simulated_manager()
    element = SimulatedElement.objects.filter(kind="link").order_by("external_id").first()
    assert element is not None and element.data["latency_ns"] > 0
    element.data = {**element.data, "attributes": {"latency_reported": False}}
    element.save()
    inventory_sync(manager=manager)
    assert Link.objects.get(external_id=element.external_id).latency_ns == 0
    assert not Link.objects.exclude(external_id=element.external_id).filter(latency_ns=0)
