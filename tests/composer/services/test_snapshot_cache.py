"""The base placement snapshot is reused while the inventory generation has not moved
(composer/services/snapshot_cache.py), and never after a change: a composition, a release,
a device fault, maintenance, an inventory sync. Whatever is reused equals a fresh build, so
every decision is the one a fresh build gives.

Transactional tests on PostgreSQL (the generation's triggers exist there only): each change
is committed, as in production, and seen through the cache by the next call.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import composer.services.composition_placement as composition_placement
import composer.services.snapshot_cache as snapshot_cache
from composer.models import Composition
from composer.placement.engine import place
from composer.placement.request import DeviceItem, Placement, PlacementRequest
from composer.placement.snapshot import Snapshot
from composer.recurrence import windows_expand
from composer.selectors.bookings import Booked, booked_between
from composer.services.allocations import allocations_release
from composer.services.booking_admission import admission_check
from composer.services.booking_holds import snapshot_less_booked
from composer.services.bookings import booking_request
from composer.services.composition_placement import (
    place_on,
    placement_request,
    placement_snapshot,
)
from composer.services.compositions import composition_request
from composer.services.snapshot_cache import inventory_generation, snapshot_forget
from composer.specs import spec_normalise
from composer.tasks import inventory_changes_prune_task
from fabric.models import Device, FabricManager, Switch
from fabric.services.maintenance import maintenance_set
from fabric.services.sync import inventory_sync
from fabric.simulator.console.faults import simulator_fault
from fabric.simulator.models import SimulatedElement
from tests.composer.placement.test_incremental import same
from tests.factories.composer import TenantFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TABLES = importlib.import_module("composer.migrations.0028_inventory_generation").TABLES
REQUEST = PlacementRequest(items=(DeviceItem("gpu", 1),), cores=2)


@pytest.fixture(autouse=True)
def forgotten() -> Iterator[None]:
    snapshot_forget()
    yield
    snapshot_forget()


def fresh() -> Snapshot:
    """A snapshot built now, bypassing what is kept."""
    return composition_placement._base_snapshot()


def base() -> Snapshot:
    return placement_snapshot(honour_bookings=False)


def check_rebuilt_after(change: Callable[[], object]) -> None:
    """`change` (committed) makes the next snapshot a new one, equal to a fresh build."""
    before = base()
    assert base() is before  # nothing changed: reused
    change()
    after = base()
    assert after is not before
    same(after, fresh())
    assert place(REQUEST, after) == place(REQUEST, fresh())
    assert base() is after  # and reused again from then on


def test_the_snapshot_is_reused_while_nothing_changes(
    postgres: None, synced: FabricManager
) -> None:
    first = base()
    with CaptureQueriesContext(connection) as captured:
        again = base()
    assert again is first
    assert len(captured) == 1  # the generation, nothing else
    same(again, fresh())


def test_the_snapshot_reads_only_tables_the_generation_watches(
    postgres: None, synced: FabricManager
) -> None:
    with CaptureQueriesContext(connection) as captured:
        fresh()
    read = {t for q in captured for t in re.findall(r'(?:FROM|JOIN) "(\w+)"', q["sql"])}
    assert read and read <= set(TABLES)


def test_a_composition_makes_a_new_snapshot(postgres: None, synced: FabricManager) -> None:
    tenant = TenantFactory.create()
    check_rebuilt_after(
        lambda: composition_request(
            tenant=tenant, requested_by=None, spec={"items": [{"kind": "gpu", "count": 1}]},
            name="c",
        )
    )  # fmt: skip


def test_a_release_makes_a_new_snapshot(postgres: None, synced: FabricManager) -> None:
    composition = composition_request(
        tenant=TenantFactory.create(),
        requested_by=None,
        spec={"items": [{"kind": "gpu", "count": 1}]},
        name="c",
    )
    assert composition.allocations.filter(released_at__isnull=True).exists()

    def release() -> None:
        with transaction.atomic():
            locked = Composition.objects.select_for_update().get(pk=composition.pk)
            assert allocations_release(composition=locked, source="test") == 1

    check_rebuilt_after(release)


def test_a_device_fault_makes_a_new_snapshot(postgres: None, synced: FabricManager) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    check_rebuilt_after(
        lambda: simulator_fault(
            manager=synced, target_type="device", target_id=gpu.name, action="fail"
        )
    )
    assert f"device:{gpu.pk}" not in base().devices


def test_maintenance_makes_a_new_snapshot(postgres: None, synced: FabricManager) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    switch = Switch.objects.order_by("pk").first()
    assert gpu is not None and switch is not None
    check_rebuilt_after(lambda: maintenance_set(target=gpu, on=True, reason="fan"))
    assert f"device:{gpu.pk}" not in base().devices
    check_rebuilt_after(lambda: maintenance_set(target=switch, on=True, reason="firmware"))


def test_an_inventory_sync_makes_a_new_snapshot(postgres: None, synced: FabricManager) -> None:
    SimulatedElement.objects.filter(external_id="gpu-a-02-2").update(is_present=False)
    check_rebuilt_after(lambda: inventory_sync(manager=synced))
    gone = Device.objects.get(external_id="gpu-a-02-2")
    assert f"device:{gone.pk}" not in base().devices


def test_a_plain_update_of_any_watched_table_moves_the_generation(
    postgres: None, synced: FabricManager
) -> None:
    # What no service is needed for: a bulk update straight on the table is seen too.
    check_rebuilt_after(lambda: Device.objects.filter(kind="gpu").update(health="warning"))


def test_a_transaction_that_changed_the_inventory_builds_its_own_snapshot(
    postgres: None, synced: FabricManager
) -> None:
    kept = base()
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    with transaction.atomic():
        Device.objects.filter(pk=gpu.pk).update(health="critical")
        assert inventory_generation() is None
        mine = base()
        assert mine is not kept and f"device:{gpu.pk}" not in mine.devices
        transaction.set_rollback(True)
    assert base() is kept  # rolled back: what was kept is still the inventory


def test_an_uncommitted_change_elsewhere_is_not_seen_until_it_commits(
    postgres: None, synced: FabricManager
) -> None:
    kept = base()
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    written, commit, done = threading.Event(), threading.Event(), threading.Event()

    def other() -> None:
        try:
            with transaction.atomic():
                Device.objects.filter(pk=gpu.pk).update(health="critical")
                written.set()
                commit.wait(10)
        finally:
            connections.close_all()
            done.set()

    thread = threading.Thread(target=other)
    thread.start()
    assert written.wait(10)
    assert base() is kept  # not committed: the inventory as it is
    commit.set()
    assert done.wait(10)
    thread.join()
    after = base()
    assert after is not kept and f"device:{gpu.pk}" not in after.devices
    same(after, fresh())


def test_pruning_moves_the_epoch_and_keeps_snapshots_right(
    postgres: None, synced: FabricManager, monkeypatch: Any
) -> None:
    monkeypatch.setattr(snapshot_cache, "PRUNE_AT", 0)
    Device.objects.filter(kind="nvme").update(health="warning")
    epoch = inventory_generation()
    assert epoch is not None and epoch[2] >= 1
    first = base()  # built, and the rows counted so far pruned
    pruned = inventory_generation()
    assert pruned is not None and pruned[0] > epoch[0] and pruned[2] == 0
    second = base()  # the epoch moved: built once more (what a prune costs)
    assert second is not first
    same(second, fresh())
    assert base() is second  # nothing to prune: reused


def test_the_hourly_prune_removes_the_rows_no_placement_pruned(
    postgres: None, synced: FabricManager, monkeypatch: Any, settings: Any
) -> None:
    """Health polls and syncs write the inventory while nobody places: the beat prunes."""
    entry = settings.CELERY_BEAT_SCHEDULE["inventory-changes-prune"]
    assert entry["task"] == "composer.tasks.inventory_changes_prune_task"
    monkeypatch.setattr(snapshot_cache, "PRUNE_AT", 2)
    kept = base()  # a build prunes what the fixture wrote
    assert inventory_changes_prune_task() == 0  # at most PRUNE_AT rows: kept
    for health in ("warning", "critical", "ok"):  # three transactions, three rows
        Device.objects.filter(kind="nvme").update(health=health)
    before = inventory_generation()
    assert before is not None and before[2] >= 3
    assert inventory_changes_prune_task() == before[2]
    after = inventory_generation()
    assert after is not None and after[0] > before[0] and after[2] == 0
    rebuilt = base()
    assert rebuilt is not kept
    same(rebuilt, fresh())


def test_an_admission_decides_as_on_a_fresh_snapshot_and_a_full_read_of_holds(
    postgres: None, synced: FabricManager
) -> None:
    """The kept snapshot and the holds summed in the database give the plans that a fresh
    snapshot and every hold of the span give; so does each window's patched snapshot."""
    tenants = [TenantFactory.create() for _ in range(3)]
    day = (timezone.now() + timedelta(days=1)).date()
    first = datetime(day.year, day.month, day.day, 8, tzinfo=UTC)
    for i, tenant in enumerate(tenants):  # weekly and daily holds of 1 GPU and of memory
        booking_request(
            tenant=tenant,
            requested_by=None,
            name=f"b{i}",
            spec={"items": [{"kind": "gpu", "count": 1}], "memory_gib": 64 * (i + 1)},
            starts_at=first + timedelta(hours=2 * i),
            ends_at=first + timedelta(hours=2 * i + 4),
            recurrence="weekly" if i % 2 == 0 else "daily",
            until=day + timedelta(days=20),
        )
    spec = spec_normalise({"items": [{"kind": "gpu", "count": 1}], "cores": 4})
    request = placement_request(tenants[0], spec, None, [])
    windows = windows_expand(
        starts_at=first + timedelta(hours=1),
        ends_at=first + timedelta(hours=7),
        zone=ZoneInfo("UTC"),
        recurrence="weekly",
        until=day + timedelta(days=20),
    )
    kept = base()
    assert base() is kept

    def admit(snapshot: Snapshot) -> list[Placement]:
        return admission_check(
            tenant=tenants[0], spec=spec, request=request, host=None, pins=[],
            base=snapshot, windows=windows, zone=ZoneInfo("UTC"),
        )  # fmt: skip

    plans = admit(kept)
    assert plans == admit(fresh())
    # Placed once for every window (devices free in all of them), on a snapshot rebuilt
    # rather than patched, less every hold of the span that overlaps a window.
    everything = booked_between(windows[0].starts_at, windows[-1].ends_at)
    overlapping = unique(
        Booked(
            tuple(h for w in windows for h in everything.during(w).holds),
            tuple(o for w in windows for o in everything.during(w).occupants),
        )
    )
    assert overlapping.holds  # the windows do overlap other bookings
    rebuilt = fresh()
    assert all(plan == plans[0] for plan in plans)
    together = rebuilt_alone(snapshot_less_booked(rebuilt, overlapping))
    assert place_on(together, request, None, []) == plans[0]
    # Each window alone (the path of a series whose windows share no free devices): its
    # patched snapshot decides as one rebuilt from its holds.
    for window in windows:
        during = everything.during(window)
        patched = place_on(snapshot_less_booked(kept, during), request, None, [])
        alone = rebuilt_alone(snapshot_less_booked(rebuilt, during))
        assert place_on(alone, request, None, []) == patched


def unique(booked: Booked) -> Booked:
    """`booked` with each hold and occupant once (windows can overlap the same hold)."""
    return Booked(tuple(dict.fromkeys(booked.holds)), tuple(dict.fromkeys(booked.occupants)))


def rebuilt_alone(taken: Snapshot) -> Snapshot:
    """`taken` built anew from its contents: no index or memo carried over from a patch."""
    return Snapshot.build(
        hosts=taken.hosts.values(), enclosures=taken.enclosures.values(),
        devices=taken.devices.values(), reach=taken.reach,
        switch_names=taken.switch_names, holders=taken.holders, critical=taken.critical,
        sliced=taken.sliced, oversubscription=taken.oversubscription,
        workload=taken.workload,
    )  # fmt: skip
