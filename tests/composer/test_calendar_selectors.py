"""The calendar selector on a small inventory, checked by hand: eight H100 GPUs, one in
maintenance; Acme books three 01:00-04:00 and Globex four 02:00-06:00.

Hour by hour booked is 0,3,7,7,4,4,0...; free (8 - 1 - booked) is 7,4,0,0,3,3,7...
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from composer.choices import AllocationState, CompositionState, OccurrenceState
from composer.models import Allocation, BookingHold, Composition, Occurrence
from composer.selectors.calendar import calendar
from fabric.choices import DeviceState
from fabric.models import Device
from tests.factories.fabric import SmallFabric
from tests.support.calendar import DAY, at, book_window, booked_world

pytestmark = pytest.mark.django_db

NOW = DAY - timedelta(days=1)


def day_calendar(user: Any, **kw: Any) -> Any:
    return calendar(user=user, start=DAY, end=DAY + timedelta(days=1), now=NOW, **kw)


def h100(cal: Any) -> Any:
    return next(p for p in cal.pools if p.pool.slug == "h100")


def test_load_and_free_hour_by_hour(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any
) -> None:
    booked_world(small, acme, globex)
    load = h100(day_calendar(admin_user))

    assert (load.unit, load.capacity, load.unavailable, load.standing) == ("devices", 8, 1, 0)
    assert load.booked[:8] == [0, 3, 7, 7, 4, 4, 0, 0]
    assert load.free[:8] == [7, 4, 0, 0, 3, 3, 7, 7]
    assert len(load.booked) == 24
    (day,) = load.days
    assert (day.day, day.peak_booked, day.least_free) == (DAY.date(), 7, 0)


def test_free_windows_are_the_runs_with_enough_free(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any
) -> None:
    booked_world(small, acme, globex)

    windows = h100(day_calendar(admin_user, min_free=4)).free_windows
    assert [(w.starts_at, w.ends_at, w.free, w.hours) for w in windows] == [
        (at(0), at(2), 4, 2),
        (at(6), at(24), 7, 18),
    ]
    # Three free: 04:00-06:00 counts too and joins 06:00-24:00.
    windows = h100(day_calendar(admin_user, min_free=3)).free_windows
    assert [(w.starts_at, w.ends_at, w.free) for w in windows] == [
        (at(0), at(2), 4),
        (at(4), at(24), 3),
    ]
    assert h100(day_calendar(admin_user, min_free=8)).free_windows == []


def test_members_see_their_tenants_windows_and_every_pools_aggregate_load(
    small: SmallFabric, acme: Any, globex: Any, alice: Any, carol: Any, admin_user: Any
) -> None:
    world = booked_world(small, acme, globex)

    mine = day_calendar(alice)
    assert [o.id for o in mine.occurrences] == [world.acme_window.pk]
    assert mine.occurrences[0].pools == {"h100": 3}
    assert h100(mine).booked[:8] == [0, 3, 7, 7, 4, 4, 0, 0]  # every tenant's, together
    assert [o.id for o in day_calendar(carol).occurrences] == [world.globex_window.pk]
    everyone = day_calendar(admin_user)
    assert [o.id for o in everyone.occurrences] == [world.acme_window.pk, world.globex_window.pk]
    only_globex = day_calendar(admin_user, tenant=globex)
    assert [o.id for o in only_globex.occurrences] == [world.globex_window.pk]


def test_a_pool_filter_keeps_the_windows_that_hold_there(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any
) -> None:
    booked_world(small, acme, globex)
    memory = small.memory[0].pool
    assert memory is not None

    cal = day_calendar(admin_user, pool=memory)
    assert cal.occurrences == [] and [p.pool.slug for p in cal.pools] == [memory.slug]


def test_a_failed_held_device_is_a_conflict_named_to_operators_only(
    small: SmallFabric, acme: Any, globex: Any, carol: Any, admin_user: Any
) -> None:
    world = booked_world(small, acme, globex)
    small.gpus[3].state = DeviceState.FAILED
    small.gpus[3].save(update_fields=["state"])

    (conflict,) = day_calendar(admin_user).conflicts
    assert (conflict.occurrence, conflict.reason, conflict.count) == (
        world.globex_window.pk,
        "device_unavailable",
        1,
    )
    assert conflict.devices == ("gpu-a-3",)
    (seen,) = day_calendar(carol).conflicts
    assert seen.reason == "device_unavailable" and seen.devices == ()
    assert day_calendar(carol).occurrences[0].conflicts == [seen]


def test_windows_already_over_are_not_conflicts(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any
) -> None:
    booked_world(small, acme, globex)
    small.gpus[3].state = DeviceState.FAILED
    small.gpus[3].save(update_fields=["state"])

    later = calendar(
        user=admin_user, start=DAY, end=DAY + timedelta(days=1), now=DAY + timedelta(days=2)
    )
    assert later.conflicts == []


def test_queries_do_not_grow_with_bookings(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any, django_assert_max_num_queries: Any
) -> None:
    booked_world(small, acme, globex)
    with django_assert_max_num_queries(10):
        day_calendar(admin_user)


def _composition_holding(tenant: Any, device: Any, host: Any) -> Composition:
    box = Composition.objects.create(
        tenant=tenant, name="standing", host=host, state=CompositionState.READY, spec={}
    )
    Allocation.objects.create(composition=box, device=device, state=AllocationState.BOUND)
    Device.objects.filter(pk=device.pk).update(state=DeviceState.BOUND, bound_host=host)
    return box


def test_a_composition_that_serves_no_window_stands_and_takes_a_held_device(
    small: SmallFabric, acme: Any, globex: Any, alice: Any
) -> None:
    world = booked_world(small, acme, globex)
    _composition_holding(acme, small.gpus[0], small.hosts[0])

    cal = day_calendar(alice)
    load = h100(cal)
    assert load.standing == 1
    assert load.free[:8] == [6, 3, 0, 0, 2, 2, 6, 6]
    (conflict,) = cal.conflicts
    assert (conflict.occurrence, conflict.reason, conflict.count, conflict.devices) == (
        world.acme_window.pk,
        "device_taken",
        1,
        (),
    )


def test_the_composition_serving_a_window_neither_stands_nor_conflicts(
    small: SmallFabric, acme: Any, globex: Any, alice: Any
) -> None:
    world = booked_world(small, acme, globex)
    box = _composition_holding(acme, small.gpus[0], small.hosts[0])
    Occurrence.objects.filter(pk=world.acme_window.pk).update(composition=box)

    cal = day_calendar(alice)
    assert h100(cal).standing == 0 and cal.conflicts == []
    assert cal.occurrences[0].composition == box.pk


def test_a_running_window_that_hands_over_at_the_start_is_no_conflict(
    small: SmallFabric, acme: Any, globex: Any, alice: Any
) -> None:
    """Day and night on the same GPUs: the day's composition holds them now, and gives them
    back when its window ends; the night's window starting then is not in conflict, one
    starting before then is."""
    world = booked_world(small, acme, globex)
    day = _composition_holding(acme, small.gpus[0], small.hosts[0])
    _, running = book_window(acme, "acme-day", at(-12), at(1), [], small.hosts[0])
    Occurrence.objects.filter(pk=running.pk).update(state=OccurrenceState.RUNNING, composition=day)

    assert day_calendar(alice).conflicts == []

    Occurrence.objects.filter(pk=running.pk).update(ends_at=at(1) + timedelta(minutes=1))
    (conflict,) = day_calendar(alice).conflicts
    assert (conflict.occurrence, conflict.reason) == (world.acme_window.pk, "device_taken")


def test_a_window_that_is_over_is_drawn_in_the_pools_its_composition_held(
    small: SmallFabric, acme: Any, globex: Any, alice: Any
) -> None:
    """Its holds were given back when it ended; its composition's allocations say where it
    was (released ones too), and it adds nothing to the load."""
    world = booked_world(small, acme, globex)
    ran = Composition.objects.create(
        tenant=acme, name="ran", host=small.hosts[0], state=CompositionState.RELEASED, spec={}
    )
    for device in small.gpus[0:3]:
        Allocation.objects.create(
            composition=ran, device=device, state=AllocationState.RELEASED, released_at=at(4)
        )
    BookingHold.objects.filter(occurrence=world.acme_window).delete()
    Occurrence.objects.filter(pk=world.acme_window.pk).update(
        state=OccurrenceState.DONE, composition=ran
    )

    cal = day_calendar(alice)
    (window,) = cal.occurrences
    assert window.pools == {"h100": 3.0} and window.composition == ran.pk
    assert h100(cal).booked[:8] == [0, 0, 4, 4, 4, 4, 0, 0]  # Globex's window alone


def test_a_memory_pool_counts_gib(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any
) -> None:
    world = booked_world(small, acme, globex)
    box = small.memory[0]
    BookingHold.objects.create(
        occurrence=world.acme_window,
        device=box,
        host=small.hosts[0],
        starts_at=at(1),
        ends_at=at(4),
        gib=256,
    )
    cal = day_calendar(admin_user)
    memory = next(p for p in cal.pools if p.pool.pk == box.pool_id)
    total = sum(d.memory_gib for d in small.memory)
    assert (memory.unit, memory.capacity) == ("GiB", total)
    assert memory.booked[:5] == [0, 256, 256, 256, 0]
    assert memory.free[:5] == [total, total - 256, total - 256, total - 256, total]
    acme_window = next(o for o in cal.occurrences if o.id == world.acme_window.pk)
    assert acme_window.pools == {"h100": 3, box.pool.slug: 256}


def test_gpu_shares_count_as_their_fraction_of_a_device(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any
) -> None:
    world = booked_world(small, acme, globex)
    for share, window in ((250, world.acme_window), (125, world.globex_window)):
        BookingHold.objects.create(
            occurrence=window,
            device=small.gpus[3 if window == world.acme_window else 0],
            host=small.hosts[0],
            starts_at=at(8),
            ends_at=at(10) if share == 250 else at(9),
            share=share,
        )
    load = h100(day_calendar(admin_user))
    assert load.booked[7:11] == [0, 0.375, 0.25, 0]
    assert all(str(b) != "-0.0" for b in load.booked)
