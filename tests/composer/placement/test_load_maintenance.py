"""build_snapshot() leaves out what an operator put in maintenance (fabric.services.maintenance)."""

from __future__ import annotations

from typing import Any

import pytest

from composer.placement.engine import place
from composer.placement.load import build_snapshot
from composer.placement.request import DeviceItem, Placement, PlacementRequest, Rejection
from fabric.services.maintenance import maintenance_set
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


def test_nothing_in_maintenance_is_placeable(admin_user: Any) -> None:
    fabric = fabric_small()
    host_a, host_b = (f"host:{h.pk}" for h in fabric.hosts)
    gpu_a, gpu_b, _box = (f"enclosure:{e.pk}" for e in fabric.enclosures)

    maintenance_set(target=fabric.gpus[1], on=True, actor=admin_user)
    maintenance_set(target=fabric.enclosures[2], on=True, actor=admin_user)  # the memory box
    # A switch in maintenance carries no new path: gpu-b hangs off sw-b alone.
    maintenance_set(target=fabric.switches[1], on=True, actor=admin_user)
    snapshot = build_snapshot()

    names = {d.name for d in snapshot.devices.values()}
    assert "gpu-a-1" not in names and not names & {"mem-a-0", "mem-a-1"}
    assert set(snapshot.reach[host_a]) == {gpu_a}
    assert snapshot.reach[host_b] == {}
    assert isinstance(
        place(PlacementRequest(items=(DeviceItem("gpu", 1),), host=host_b), snapshot), Rejection
    )
    plan = place(PlacementRequest(items=(DeviceItem("gpu", 3),), host=host_a), snapshot)
    assert isinstance(plan, Placement)
    assert {d.name for d in plan.devices} == {"gpu-a-0", "gpu-a-2", "gpu-a-3"}
    assert gpu_b not in {d.enclosure for d in plan.devices}

    maintenance_set(target=fabric.switches[1], on=False, actor=admin_user)
    assert set(build_snapshot().reach[host_b]) == {gpu_a, gpu_b}
