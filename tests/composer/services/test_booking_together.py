"""A series placed once for all its occurrences: the same devices in every window when some
are free in all of them, each window on its own when none are; and the database's sums of
what the windows hold equal the sums of the holds read one by one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import OccurrenceState
from composer.errors import ClaimConflict
from composer.models import Booking, BookingHold, Occurrence
from composer.recurrence import Window
from composer.selectors.booked_totals import HeldTotals, held_totals
from composer.selectors.bookings import booked_between
from composer.services.booking_holds import holds_write, snapshot_less_held
from composer.services.bookings import booking_request
from composer.services.composition_placement import placement_snapshot
from fabric.models import Device, FabricManager

pytestmark = pytest.mark.django_db

TWO_GPUS = {"items": [{"kind": "gpu", "count": 2}]}


def day_at(days: int, hour: int) -> datetime:
    day = (timezone.now() + timedelta(days=days)).date()
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def book(tenant: Any, spec: dict, start: datetime, end: datetime, **kw: Any) -> Booking:
    return booking_request(
        tenant=tenant, requested_by=None, name=kw.pop("name", "b"), spec=spec,
        starts_at=start, ends_at=end, **kw,
    )  # fmt: skip


def held_by_occurrence(booking: Booking) -> list[tuple[int, ...]]:
    """The devices each occurrence holds, in the occurrences' order."""
    return [
        tuple(sorted(BookingHold.objects.filter(occurrence=o).values_list("device_id", flat=True)))
        for o in booking.occurrences.order_by("starts_at")
    ]


def test_a_series_holds_the_same_devices_and_host_in_every_occurrence(
    synced: FabricManager, acme: Any, globex: Any
) -> None:
    # Globex takes two GPUs on the second day only: two others are free every day.
    other = book(globex, TWO_GPUS, day_at(2, 9), day_at(2, 10), name="other")
    series = book(
        acme, {**TWO_GPUS, "cores": 4}, day_at(1, 8), day_at(1, 12),
        recurrence="daily", until=day_at(4, 0).date(),
    )  # fmt: skip

    devices = held_by_occurrence(series)
    assert len(devices) == 4 and len(set(devices)) == 1
    assert not set(devices[0]) & set(held_by_occurrence(other)[0])
    hosts = set(series.occurrences.values_list("host_id", flat=True))
    assert len(hosts) == 1 and None not in hosts


def test_each_occurrence_is_placed_alone_when_no_devices_are_free_in_every_window(
    synced: FabricManager, acme: Any, globex: Any
) -> None:
    """Four GPUs. Globex holds two on day one until 13:00 and the other two from 12:00 on
    day one to 12:00 on day two: Acme's 08:00-12:00 finds two free each day, but never the
    same two."""
    first = book(globex, TWO_GPUS, day_at(1, 8), day_at(1, 13), name="first")
    second = book(globex, TWO_GPUS, day_at(1, 12), day_at(2, 12), name="second")
    assert not set(held_by_occurrence(first)[0]) & set(held_by_occurrence(second)[0])

    series = book(
        acme, TWO_GPUS, day_at(1, 8), day_at(1, 12), recurrence="daily",
        until=day_at(2, 0).date(),
    )  # fmt: skip

    day_one, day_two = held_by_occurrence(series)
    assert day_one == held_by_occurrence(second)[0]
    assert day_two == held_by_occurrence(first)[0]


def test_the_database_sums_what_the_windows_hold_as_the_holds_read_one_by_one(
    synced: FabricManager, acme: Any, globex: Any
) -> None:
    """Whole GPUs with cores and host memory, GPU shares on a host, memory slices for a
    host, a window the series does not reach, and a running occurrence (its composition
    holds its devices: not counted)."""
    book(acme, {**TWO_GPUS, "cores": 6, "host_memory_gib": 32}, day_at(1, 8), day_at(1, 12),
         recurrence="daily", until=day_at(3, 0).date(), name="whole")  # fmt: skip
    book(globex, {"items": [{"kind": "gpu", "share": 500}], "cores": 2}, day_at(1, 9),
         day_at(1, 11), name="share")  # fmt: skip
    book(globex, {"memory_gib": 300}, day_at(2, 10), day_at(2, 14), name="slice")
    book(globex, {"memory_gib": 200}, day_at(3, 20), day_at(3, 22), name="outside")
    running = book(acme, {"items": [{"kind": "gpu", "count": 1}]}, day_at(1, 6), day_at(2, 9),
                   name="running")  # fmt: skip
    Occurrence.objects.filter(booking=running).update(state=OccurrenceState.RUNNING)
    windows = [Window(day_at(d, 7), day_at(d, 13)) for d in (1, 2, 3)]

    summed = held_totals(windows)

    read = booked_between(windows[0].starts_at, windows[-1].ends_at, windows=windows)
    assert summed == HeldTotals.of(read)
    # Each kind of hold is there, and nothing of the running occurrence or the late window.
    assert len(summed.whole) == 2 and summed.cores and summed.host_memory_gib
    ((share_host, share),) = [(h, n) for per in summed.shares.values() for h, n in per.items()]
    assert share == 500 and share_host.startswith("host:")
    assert sum(summed.gib.values()) == 300 and summed.sliced
    running_devices = {
        f"device:{pk}"
        for pk in BookingHold.objects.filter(occurrence__booking=running).values_list(
            "device_id", flat=True
        )
    }
    assert running_devices and not running_devices & summed.whole
    # Three daily windows of the 6-core, 32 GiB series on one host: summed across windows.
    assert max(summed.cores.values()) >= 3 * 6 and max(summed.host_memory_gib.values()) == 96
    assert held_totals([Window(day_at(5, 0), day_at(5, 1))]) == HeldTotals()


def test_a_gpu_held_whole_in_one_window_and_shared_in_another_stays_taken_whole(
    synced: FabricManager, acme: Any, globex: Any
) -> None:
    """Summed over a series' windows, one GPU may be held whole (Monday's booking) and in
    shares (Tuesday's): the series must not be offered what is left of its shares."""
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    book(acme, {"devices": [{"device": gpu.pk}]}, day_at(1, 8), day_at(1, 12), name="whole")
    book(globex, {"items": [{"kind": "gpu", "share": 500}]}, day_at(2, 8), day_at(2, 12),
         name="share")  # fmt: skip
    # Wherever the engine put Tuesday's share, the state to test is a share of that GPU.
    BookingHold.objects.filter(occurrence__booking__name="share").update(device_id=gpu.pk)
    windows = [Window(day_at(1, 7), day_at(1, 13)), Window(day_at(2, 7), day_at(2, 13))]
    summed = held_totals(windows)
    assert f"device:{gpu.pk}" in summed.whole and f"device:{gpu.pk}" in summed.shares

    taken = snapshot_less_held(placement_snapshot(honour_bookings=False), summed)

    assert f"device:{gpu.pk}" not in taken.devices


def test_the_database_never_holds_a_device_whole_and_in_shares_at_once(
    synced: FabricManager, acme: Any, globex: Any
) -> None:
    """Should a plan ever be wrong (as the summed snapshot once was), the write refuses a
    share over a whole hold and a whole hold over a share, in overlapping windows."""
    gpus = list(Device.objects.filter(kind="gpu").order_by("pk"))
    whole = book(acme, {"devices": [{"device": gpus[0].pk}]}, day_at(1, 8), day_at(1, 12))
    shared = book(globex, {"items": [{"kind": "gpu", "share": 500}]}, day_at(2, 8),
                  day_at(2, 12), name="share")  # fmt: skip
    on_whole = shared.occurrences.get()
    share_hold = BookingHold.objects.get(occurrence=on_whole)

    with pytest.raises(ClaimConflict, match="whole by one request and in parts"):
        holds_write([BookingHold(occurrence=on_whole, device_id=gpus[0].pk,
                                 host_id=share_hold.host_id, share=250,
                                 starts_at=day_at(1, 9), ends_at=day_at(1, 10))])  # fmt: skip
    with pytest.raises(ClaimConflict, match="whole by one request and in parts"):
        holds_write([BookingHold(occurrence=whole.occurrences.get(),
                                 device_id=share_hold.device_id, host_id=share_hold.host_id,
                                 starts_at=day_at(2, 11), ends_at=day_at(2, 13))])  # fmt: skip
    # Back to back is no overlap.
    holds_write([BookingHold(occurrence=on_whole, device_id=gpus[0].pk,
                             host_id=share_hold.host_id, share=250,
                             starts_at=day_at(1, 12), ends_at=day_at(1, 13))])  # fmt: skip
