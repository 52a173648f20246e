"""build_snapshot() over fabric_small(): what is free, what each host reaches, in a fixed
number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from composer.placement.engine import place
from composer.placement.load import build_snapshot, structure_memo_clear
from composer.placement.request import DeviceItem, Placement, PlacementRequest
from fabric.choices import ComponentState, DeviceState, Health, LinkState
from fabric.models import Enclosure, Host, Link, Switch
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


def test_build_snapshot_sees_the_free_devices_and_what_each_host_reaches() -> None:
    fabric = fabric_small()
    taken, sick = fabric.gpus[0], fabric.gpus[5]
    taken.state = DeviceState.BOUND
    taken.save()
    sick.health = Health.CRITICAL
    sick.save()
    memory = fabric.memory[0]  # sliced, and still taking slices while it has GiB free
    memory.state, memory.allocated_gib = DeviceState.BOUND, 1000
    memory.save()
    full = fabric.memory[1]  # sliced whole: nothing left to place on it
    full.state, full.allocated_gib = DeviceState.BOUND, full.memory_gib
    full.save()

    with CaptureQueriesContext(connection) as captured:
        snapshot = build_snapshot()
    queries = len(captured)

    names = {d.name for d in snapshot.devices.values()}
    assert names == {"gpu-a-1", "gpu-a-2", "gpu-a-3", "gpu-b-0", "gpu-b-2", "gpu-b-3",
                     "mem-a-0"}  # fmt: skip
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
    assert len(captured) == queries == 5  # load_graph(lean=True, device_attributes=True)
    assert len(bigger.devices) == len(snapshot.devices) + 4

    plan = place(PlacementRequest(items=(DeviceItem("gpu", 3),), host=host_b), snapshot)
    assert isinstance(plan, Placement)
    assert {d.name for d in plan.devices} == {"gpu-b-0", "gpu-b-2", "gpu-b-3"}


def test_reach_is_reused_until_a_link_or_an_active_set_changes() -> None:
    """The memo of reach (composer.placement.load._structure) is keyed on the link rows and
    the active hosts and enclosures read for each snapshot: reused while they are the same,
    recomputed the moment one changes; devices are read fresh either way."""
    fabric = fabric_small()
    structure_memo_clear()
    host_a, host_b = (f"host:{h.pk}" for h in fabric.hosts)
    gpu_a, gpu_b, _box = (f"enclosure:{e.pk}" for e in fabric.enclosures)
    host_link, _enc_link, _host_b_link, _enc_b_link, isl = fabric.links

    first = build_snapshot()
    again = build_snapshot()
    assert again.reach[host_a][gpu_b] is first.reach[host_a][gpu_b]  # reused, not recomputed

    fabric.gpus[1].state = DeviceState.BOUND  # not part of the key: read fresh anyway
    fabric.gpus[1].save()
    assert f"device:{fabric.gpus[1].pk}" not in build_snapshot().devices

    Link.objects.filter(pk=isl.pk).update(latency_ns=500)
    assert build_snapshot().reach[host_a][gpu_b].latency_ns == 120 + 500 + 250
    Link.objects.filter(pk=isl.pk).update(bandwidth_gbps=16.0)
    assert build_snapshot().reach[host_a][gpu_b].bottleneck_gbps == 16.0
    Link.objects.filter(pk=isl.pk).update(state=LinkState.DOWN)
    assert set(build_snapshot().reach[host_a]) == {gpu_a}
    Link.objects.filter(pk=isl.pk).update(state=LinkState.UP)
    assert set(build_snapshot().reach[host_a]) == {gpu_a, gpu_b}

    Host.objects.filter(pk=fabric.hosts[0].pk).update(state=ComponentState.MAINTENANCE)
    assert host_a not in build_snapshot().reach
    Host.objects.filter(pk=fabric.hosts[0].pk).update(state=ComponentState.ACTIVE)
    Enclosure.objects.filter(pk=fabric.enclosures[1].pk).update(state=ComponentState.MAINTENANCE)
    assert set(build_snapshot().reach[host_b]) == {gpu_a}
    Enclosure.objects.filter(pk=fabric.enclosures[1].pk).update(state=ComponentState.ACTIVE)
    Switch.objects.filter(pk=fabric.switches[1].pk).update(state=ComponentState.MAINTENANCE)
    assert build_snapshot().reach[host_b] == {}
    Switch.objects.filter(pk=fabric.switches[1].pk).update(state=ComponentState.ACTIVE)
    Link.objects.filter(pk=host_link.pk).update(is_present=False)
    assert build_snapshot().hosts[host_a].uplink_gbps == 0.0

    # Back where it started: the same figures as a snapshot computed from scratch.
    Link.objects.filter(pk=host_link.pk).update(is_present=True)
    Link.objects.filter(pk=isl.pk).update(latency_ns=300, bandwidth_gbps=isl.bandwidth_gbps)
    memoised = build_snapshot()
    structure_memo_clear()
    assert build_snapshot().reach == memoised.reach == first.reach


def test_a_shared_gpu_is_partly_shared_on_its_host_charged_by_its_shares_and_placed_there() -> None:
    fabric = fabric_small()
    host_a, host_b = fabric.hosts
    shared, full = fabric.gpus[0], fabric.gpus[1]
    shared.state, shared.allocated_shares, shared.shared_host = DeviceState.BOUND, 250, host_a
    shared.bound_host = host_a
    shared.save()
    full.state, full.allocated_shares, full.shared_host = DeviceState.RESERVED, 1000, host_a
    full.save()

    snapshot = build_snapshot()

    info = snapshot.devices[f"device:{shared.pk}"]
    assert (info.shared_host, info.shares_free) == (f"host:{host_a.pk}", 750)
    assert f"device:{full.pk}" not in snapshot.devices  # no share left
    gpu_a = f"enclosure:{fabric.enclosures[0].pk}"
    bottleneck = snapshot.reach[f"host:{host_a.pk}"][gpu_a].bottleneck_gbps
    # Charged as the engine charges shares: 250/1000 and 1000/1000 of the path, not twice
    # for the one bound as well.
    assert snapshot.hosts[f"host:{host_a.pk}"].uplink_used_gbps == bottleneck * 1.25
    plan = place(
        PlacementRequest(items=(DeviceItem("gpu", 1, share=500),), host=f"host:{host_a.pk}"),
        snapshot,
    )
    assert isinstance(plan, Placement)
    assert [(d.name, d.share) for d in plan.devices] == [(shared.name, 500)]
    other = place(
        PlacementRequest(items=(DeviceItem("gpu", 1, share=500),), host=f"host:{host_b.pk}"),
        snapshot,
    )
    assert isinstance(other, Placement)
    assert shared.name not in {d.name for d in other.devices}  # another host breaks a free one
