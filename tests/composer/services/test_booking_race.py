"""Rule 7 under real concurrency: sixteen OS processes on PostgreSQL book overlapping
windows for the last GPUs, and race to write holds with no placement lock at all (only the
database's exclusion constraint and the devices' row locks keep them apart). No device is
ever held by two overlapping windows, no memory device over its capacity.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.models import Allocation, Booking, BookingHold, Occurrence
from composer.services.compositions import composition_request
from fabric.models import Device, FabricManager
from tests.factories.composer import TenantFactory
from tests.support import booking_race
from tests.support.worker import run_race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PROCESSES = 16


def base() -> datetime:
    day = (timezone.now() + timedelta(days=1)).date()
    return datetime(day.year, day.month, day.day, 8, tzinfo=UTC)


def overlapping_pairs(rows: list[tuple[int, datetime, datetime]]) -> list[tuple[Any, Any]]:
    """Whole-device holds of one device whose windows overlap: must be none."""
    clashes = []
    for i, (device, start, end) in enumerate(rows):
        for other, o_start, o_end in rows[i + 1 :]:
            if device == other and start < o_end and o_start < end:
                clashes.append(((device, start, end), (other, o_start, o_end)))
    return clashes


def test_sixteen_processes_booking_overlapping_windows_for_the_last_gpus_double_book_none(
    postgres: None, synced: FabricManager
) -> None:
    # A composition holds two of the four GPUs now: two are left for the windows.
    holder = TenantFactory.create()
    composition_request(
        tenant=holder, requested_by=None, spec={"items": [{"kind": "gpu", "count": 2}]}, name="h"
    )
    tenants = [TenantFactory.create() for _ in range(PROCESSES)]
    start = base()
    # Staggered by 5 minutes: every window overlaps every other (all share 09:15-10:00).
    jobs = [
        {
            "tenant": t.pk,
            "name": f"race-{i}",
            "spec": {"items": [{"kind": "gpu", "count": 1}]},
            "window": [
                (start + timedelta(minutes=5 * i)).isoformat(),
                (start + timedelta(hours=2, minutes=5 * i)).isoformat(),
            ],
        }
        for i, t in enumerate(tenants)
    ]

    outcomes = run_race(booking_race.book_child, jobs, wait_s=180)

    assert Counter(refused for _, refused, _ in outcomes) == {False: 2, True: 14}, outcomes
    assert Booking.objects.count() == 2
    rows = list(BookingHold.objects.values_list("device_id", "starts_at", "ends_at"))
    assert len(rows) == 2
    assert overlapping_pairs(rows) == []
    # Not the GPUs the composition holds now.
    held_now = Allocation.objects.filter(released_at__isnull=True).values_list("device", flat=True)
    assert len(held_now) == 2 and not {r[0] for r in rows} & set(held_now)


def _occurrences(n: int) -> list[Occurrence]:
    tenant = TenantFactory.create()
    start = base()
    booking = Booking.objects.create(
        tenant=tenant, name="b", spec={}, starts_at=start, ends_at=start + timedelta(hours=1)
    )
    return [
        Occurrence.objects.create(
            booking=booking, starts_at=start, ends_at=start + timedelta(hours=1)
        )
        for _ in range(n)
    ]


def test_sixteen_holds_of_one_gpu_written_at_once_without_the_lock_grant_one(
    postgres: None, synced: FabricManager
) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    start = base()
    jobs = [
        {
            "occurrence": occurrence.pk,
            "device": gpu.pk,
            "window": [
                (start + timedelta(minutes=i)).isoformat(),
                (start + timedelta(hours=1, minutes=i)).isoformat(),
            ],
        }
        for i, occurrence in enumerate(_occurrences(PROCESSES))
    ]

    outcomes = run_race(booking_race.holds_child, jobs, wait_s=180)

    assert sum(1 for _, granted, _ in outcomes if granted) == 1, outcomes
    assert BookingHold.objects.filter(device=gpu).count() == 1


def test_sixteen_slices_of_one_memory_device_at_once_never_exceed_its_capacity(
    postgres: None, synced: FabricManager
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    assert memory.memory_gib == 1024
    start = base()
    jobs = [
        {
            "occurrence": occurrence.pk,
            "device": memory.pk,
            "gib": 300,
            "window": [start.isoformat(), (start + timedelta(hours=1)).isoformat()],
        }
        for occurrence in _occurrences(PROCESSES)
    ]

    outcomes = run_race(booking_race.holds_child, jobs, wait_s=180)

    assert sum(1 for _, granted, _ in outcomes if granted) == 3, outcomes  # 3 x 300 <= 1024
    assert sum(BookingHold.objects.filter(device=memory).values_list("gib", flat=True)) == 900
