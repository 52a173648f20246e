"""build_snapshot() over fabric_small(): what is free, what each host reaches, in a fixed
number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from composer.placement.engine import place
from composer.placement.load import build_snapshot
from composer.placement.request import DeviceItem, Placement, PlacementRequest
from fabric.choices import DeviceState, Health
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


def test_build_snapshot_sees_the_free_devices_and_what_each_host_reaches() -> None:
    fabric = fabric_small()
    taken, sick = fabric.gpus[0], fabric.gpus[5]
    taken.state = DeviceState.BOUND
    taken.save()
    sick.health = Health.CRITICAL
    sick.save()
    memory = fabric.memory[0]
    memory.attributes = {"bound_gib": 1000}
    memory.save()

    with CaptureQueriesContext(connection) as captured:
        snapshot = build_snapshot()
    queries = len(captured)

    names = {d.name for d in snapshot.devices.values()}
    assert names == {"gpu-a-1", "gpu-a-2", "gpu-a-3", "gpu-b-0", "gpu-b-2", "gpu-b-3",
                     "mem-a-0", "mem-a-1"}  # fmt: skip
    assert snapshot.devices[f"device:{memory.pk}"].free_gib == 24
    host_a, host_b = (f"host:{h.pk}" for h in fabric.hosts)
    gpu_a, gpu_b, box = (f"enclosure:{e.pk}" for e in fabric.enclosures)
    assert snapshot.reach[host_a][gpu_a].latency_ns == 120 + 250
    assert snapshot.reach[host_a][gpu_b].latency_ns == 120 + 300 + 250
    assert snapshot.reach[host_a][gpu_a].bottleneck_gbps == 64.0
    assert set(snapshot.reach[host_b]) == {gpu_a, gpu_b}  # the memory box has no link
    assert snapshot.hosts[host_a].switches == (f"switch:{fabric.switches[0].pk}",)
    assert snapshot.hosts[host_a].uplink_used_gbps == 0.0
    assert box in snapshot.enclosures

    for slot in range(4, 8):  # more of the same: the query count does not grow
        fabric.gpus[0].__class__.objects.create(
            manager=fabric.manager, name=f"gpu-a-{slot}", external_id=f"gpu-a-{slot}",
            kind="gpu", model="H100 SXM", memory_gib=80, enclosure=fabric.enclosures[0],
            health=Health.OK,
        )  # fmt: skip
    with CaptureQueriesContext(connection) as captured:
        bigger = build_snapshot()
    assert len(captured) == queries == 9
    assert len(bigger.devices) == len(snapshot.devices) + 4

    plan = place(PlacementRequest(items=(DeviceItem("gpu", 3),), host=host_b), snapshot)
    assert isinstance(plan, Placement)
    assert {d.name for d in plan.devices} == {"gpu-b-0", "gpu-b-2", "gpu-b-3"}
