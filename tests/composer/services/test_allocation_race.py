"""Rule 1 under real concurrency: eight OS processes race on PostgreSQL for the last free
devices and GiB. Exactly what is free is granted, no device twice, no GiB over capacity.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from django.db.models import Sum

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from composer.services.allocations import (
    Claim,
    allocation_mark_bound,
    allocations_claim,
    allocations_release,
    release,
)
from fabric.choices import ChangeAction, DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import ChangeRecord, Device, FabricManager
from tests.composer.services.test_memory_slices import two_slices
from tests.factories.composer import TenantFactory
from tests.support import race
from tests.support.worker import run_race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PROCESSES = 8


def test_eight_processes_requesting_a_gpu_each_get_exactly_the_four_free_ones(
    postgres: None, synced: FabricManager
) -> None:
    tenants = [TenantFactory.create() for _ in range(PROCESSES)]
    jobs = [
        {"tenant": t.pk, "name": f"race-{i}", "spec": {"items": [{"kind": "gpu", "count": 1}]}}
        for i, t in enumerate(tenants)
    ]

    outcomes = run_race(race.request_child, jobs)

    granted = Counter(state == CompositionState.PLACING for _, state, _ in outcomes)
    assert granted == {True: 4, False: 4}, outcomes
    # Each winner's compose job ran (eagerly, after commit) in its own process.
    states = Counter(Composition.objects.values_list("state", flat=True))
    assert states == {CompositionState.READY: 4, CompositionState.REJECTED: 4}
    held = list(
        Allocation.objects.filter(released_at__isnull=True).values_list("device_id", flat=True)
    )
    gpus = set(Device.objects.filter(kind="gpu").values_list("pk", flat=True))
    assert sorted(held) == sorted(gpus)  # every GPU granted, none twice
    assert set(Device.objects.filter(kind="gpu").values_list("state", flat=True)) == {
        DeviceState.BOUND
    }
    bindings = get_driver(synced).bindings()
    assert len(bindings) == 4 == len({b.device_id for b in bindings})


def test_eight_processes_claiming_the_same_two_gpus_grant_them_once(
    postgres: None, synced: FabricManager, acme: Any
) -> None:
    gpus = list(Device.objects.filter(kind="gpu").order_by("pk").values_list("pk", flat=True))[:2]
    compositions = [
        Composition.objects.create(tenant=acme, name=f"c{i}", spec={}) for i in range(PROCESSES)
    ]
    jobs = [
        {"composition": c.pk, "claims": [[gpus[1], None], [gpus[0], None]]} for c in compositions
    ]

    outcomes = run_race(race.claim_child, jobs)

    assert sum(1 for _, granted, _ in outcomes if granted) == 1, outcomes
    assert Allocation.objects.count() == 2
    assert Allocation.objects.values("composition").distinct().count() == 1
    assert set(Device.objects.filter(pk__in=gpus).values_list("state", flat=True)) == {
        DeviceState.RESERVED
    }


def test_eight_processes_slicing_one_memory_device_never_exceed_its_capacity(
    postgres: None, synced: FabricManager, acme: Any
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    assert memory.memory_gib == 1024
    compositions = [
        Composition.objects.create(tenant=acme, name=f"c{i}", spec={}) for i in range(PROCESSES)
    ]
    jobs = [{"composition": c.pk, "claims": [[memory.pk, 300]]} for c in compositions]

    outcomes = run_race(race.claim_child, jobs)

    assert sum(1 for _, granted, _ in outcomes if granted) == 3, outcomes  # 3 x 300 <= 1024
    total = Allocation.objects.filter(device=memory).aggregate(total=Sum("gib"))["total"]
    assert total == 900 <= memory.memory_gib
    # The figure every page reads was kept by the same transactions.
    memory.refresh_from_db()
    assert (memory.allocated_gib, memory.state) == (900, DeviceState.RESERVED)
    assert (memory.capacity.allocated, memory.capacity.free) == (900, 124)


def test_slices_claimed_and_released_at_once_keep_the_device_s_figure_exact(
    postgres: None, synced: FabricManager, acme: Any
) -> None:
    """Three processes give their slices back while five others claim: whatever the order,
    the device's allocated GiB are the sum of the slices held, never over its capacity."""
    memory = Device.objects.get(kind="cxl_memory")
    holders = [Composition.objects.create(tenant=acme, name=f"h{i}", spec={}) for i in range(3)]
    for holder in holders:
        allocations_claim(composition=holder, claims=[Claim(memory.pk, 300)], host=None)
    claimants = [Composition.objects.create(tenant=acme, name=f"c{i}", spec={}) for i in range(5)]
    jobs = [{"composition": h.pk, "release": True} for h in holders] + [
        {"composition": c.pk, "claims": [[memory.pk, 200]]} for c in claimants
    ]

    outcomes = run_race(race.claim_or_release_child, jobs)

    granted = sum(1 for pk, ok, _ in outcomes if ok is True and pk in {c.pk for c in claimants})
    held = Allocation.objects.filter(device=memory, released_at__isnull=True)
    total = held.aggregate(total=Sum("gib"))["total"] or 0
    memory.refresh_from_db()
    assert memory.allocated_gib == total == 200 * granted <= memory.memory_gib, outcomes
    assert memory.state == (DeviceState.RESERVED if granted else DeviceState.FREE)


def test_one_composition_released_by_eight_processes_at_once_gives_its_gib_back_once(
    postgres: None, synced: FabricManager, acme: Any
) -> None:
    """A release read before another committed must not give the same GiB back again: the
    other composition's slice stays counted, so the GiB are never handed out twice."""
    memory, _, slice_x, _ = two_slices(acme)
    jobs = [
        {"composition": slice_x.composition_id, "allocation": slice_x.pk} for _ in range(PROCESSES)
    ]

    outcomes = run_race(race.release_twice_child, jobs)

    assert sorted(released for _, released, _ in outcomes) == [0] * (PROCESSES - 1) + [1]
    memory.refresh_from_db()
    assert (memory.allocated_gib, memory.state) == (200, DeviceState.RESERVED)
    changes = ChangeRecord.objects.filter(
        target_type="device", target_id=memory.pk, action=ChangeAction.CHANGED
    ).order_by("pk")
    held = [c["allocated_gib"] for c in changes.values_list("changes", flat=True)]
    assert held == [[0, 100], [100, 300], [300, 200]]  # given back once, audited once


def test_a_slice_bound_while_another_is_given_back_leaves_the_device_bound(
    postgres: None, synced: FabricManager, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The give-back of one slice reads which slices still hold the device, under its row
    lock; the bind of another slice must wait for that lock, or the device ends RESERVED
    while a slice of it is bound."""
    memory, host, slice_x, slice_y = two_slices(acme)
    allocation_mark_bound(allocation=slice_x, binding_id="b-x", host=host)
    read, go = threading.Event(), threading.Event()
    real = release.allocation_held_states

    def read_then_wait(device_ids: Any) -> dict[int, str]:
        found = real(device_ids)  # Y's slice: reserved, not bound yet
        read.set()
        go.wait(timeout=10)
        return found

    monkeypatch.setattr(release, "allocation_held_states", read_then_wait)

    def in_thread(work: Any) -> threading.Thread:
        def run() -> None:
            try:
                work()
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    releasing = in_thread(lambda: allocations_release(composition=slice_x.composition))
    assert read.wait(timeout=10)
    binding = in_thread(
        lambda: allocation_mark_bound(
            allocation=Allocation.objects.get(pk=slice_y.pk), binding_id="b-y", host=host
        )
    )
    binding.join(timeout=1)  # it must wait for the release's lock on the device
    go.set()
    releasing.join(timeout=10)
    binding.join(timeout=10)

    memory.refresh_from_db()
    assert (memory.allocated_gib, memory.state) == (200, DeviceState.BOUND)
