"""The calendar: over a period, the booked windows a viewer may see, each pool's booked load
hour by hour, its free windows, and the windows in conflict. Read-only, a fixed number of
queries whatever the number of bookings (occurrences are capped at `MAX_OCCURRENCES`).

Scoping is the bookings': occurrences come from `Occurrence.objects.for_user` (operators
every tenant's, members their tenants'). A pool's load is an aggregate over every tenant's
holds, as a pool's allocated figure is: members see how busy a pool will be, never whose
windows make it so, nor which devices (only operators get device names in conflicts).

Units are the pool's (`fabric.capacity`): devices (a GPU share as its fraction of one), or
GiB in a memory pool. Free at an hour is the pool's capacity less what is out of service
now, what compositions that serve no booked window hold now (they have no end, so they are
counted as staying), and what bookings hold during that hour.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from itertools import accumulate
from typing import Any

from django.db.models import Q

from composer.choices import OccurrenceState
from composer.models import Allocation, BookingHold, Occurrence, Tenant
from fabric.capacity import is_out_of_service
from fabric.kinds import is_sliced, shares_per_device
from fabric.models import Device, Pool
from fabric.permissions import is_operator
from fabric.selectors import pool_capacities

__all__ = [
    "Calendar",
    "CalendarOccurrence",
    "Conflict",
    "FreeWindow",
    "PoolLoad",
    "calendar",
    "calendar_tenants",
]

HOUR = timedelta(hours=1)
MAX_OCCURRENCES = 2000
MAX_FREE_WINDOWS = 5
# Occurrence states a later stage may give a window that did not run: shown as conflicts.
FAILED_STATES = frozenset({OccurrenceState.FAILED, OccurrenceState.MISSED})


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why a booked window may not be served: `reason` is `device_unavailable` (a held
    device is failed, in maintenance or critical now), `device_taken` (a held whole device
    is allocated to a composition other than the window's own that will still hold it when
    the window starts: one with no end, or a running window's that ends after this one
    starts) or the occurrence's own failed state. `devices` names them for operators only."""

    occurrence: int
    booking: int
    reason: str
    count: int
    devices: tuple[str, ...] = ()


@dataclass(slots=True)
class CalendarOccurrence:
    id: int
    booking: int
    booking_name: str
    tenant_slug: str
    tenant_name: str
    starts_at: datetime
    ends_at: datetime
    state: str
    composition: int | None
    pools: dict[str, float] = field(default_factory=dict)  # slug: amount held there
    conflicts: list[Conflict] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FreeWindow:
    """A contiguous run of hours with at least `min_free` free; `free` is its least."""

    starts_at: datetime
    ends_at: datetime
    free: float

    @property
    def hours(self) -> int:
        return int((self.ends_at - self.starts_at) / HOUR)


@dataclass(frozen=True, slots=True)
class DayLoad:
    day: date
    peak_booked: float
    least_free: float
    capacity: float

    @property
    def percent(self) -> float:
        return 100.0 * self.peak_booked / self.capacity if self.capacity else 0.0


@dataclass(slots=True)
class PoolLoad:
    """One pool over the period: `booked[i]` and `free[i]` are hour i's, from the start."""

    pool: Pool
    unit: str
    capacity: float
    unavailable: float
    standing: float
    booked: list[float]
    free: list[float]
    days: list[DayLoad]
    free_windows: list[FreeWindow]


@dataclass(slots=True)
class Calendar:
    start: datetime
    end: datetime
    min_free: int
    occurrences: list[CalendarOccurrence]
    pools: list[PoolLoad]
    conflicts: list[Conflict]
    truncated: bool


def _amount(
    pool_kind: str, kind: str, memory_gib: int, gib: int | None, share: int | None
) -> float:
    """What one hold (or allocation) takes from its pool, in the pool's unit."""
    if is_sliced(pool_kind):
        return float(gib if gib is not None else memory_gib)
    if share is not None:
        return round(share / (shares_per_device(kind) or 1), 3)
    return 1.0


def _slots(start: datetime, s: datetime, e: datetime, hours: int) -> range:
    """The hour slots `[s, e)` touches, within the period."""
    first = max(0, int((s - start) // HOUR))
    last = min(hours, -int(-(e - start) // HOUR))
    return range(first, last)


def _free_windows(
    start: datetime, free: list[float], min_free: int, limit: int = MAX_FREE_WINDOWS
) -> list[FreeWindow]:
    """The longest runs of hours with at least `min_free` free (earliest first on ties),
    then listed by start."""
    runs: list[FreeWindow] = []
    i = 0
    while i < len(free):
        if free[i] < min_free:
            i += 1
            continue
        j = i
        while j < len(free) and free[j] >= min_free:
            j += 1
        runs.append(FreeWindow(start + i * HOUR, start + j * HOUR, min(free[i:j])))
        i = j
    runs.sort(key=lambda w: (-(w.ends_at - w.starts_at), w.starts_at))
    return sorted(runs[:limit], key=lambda w: w.starts_at)


def _days(start: datetime, booked: list[float], free: list[float], cap: float) -> list[DayLoad]:
    by_day: dict[date, list[int]] = defaultdict(list)
    for i in range(len(booked)):
        by_day[(start + i * HOUR).date()].append(i)
    return [
        DayLoad(
            day=day,
            peak_booked=max(booked[i] for i in slots),
            least_free=min(free[i] for i in slots),
            capacity=cap,
        )
        for day, slots in sorted(by_day.items())
    ]


def calendar_tenants(user: Any) -> list[Tenant]:
    """The tenants whose windows `user` may filter the calendar by: every one for operators,
    else the user's own (a slug outside these is answered as not found)."""
    tenants = Tenant.objects.order_by("name")
    if is_operator(user):
        return list(tenants)
    return list(tenants.filter(memberships__user=user).distinct())


def calendar(
    *,
    user: Any,
    start: datetime,
    end: datetime,
    pool: Pool | None = None,
    tenant: Tenant | None = None,
    min_free: int = 1,
    now: datetime,
) -> Calendar:
    """The calendar of `[start, end)` (whole hours, UTC) as `user` may see it."""
    hours = int((end - start) // HOUR)
    operator = is_operator(user)
    pools = list(Pool.objects.filter(pk=pool.pk) if pool else Pool.objects.all())
    pool_kind = {p.pk: p.kind for p in pools}
    pool_slug = {p.pk: p.slug for p in pools}

    # Every tenant's holds in the period, for the aggregate load (one query).
    hold_rows = list(
        BookingHold.objects.filter(starts_at__lt=end, ends_at__gt=start)
        .filter(device__pool__in=pool_kind)
        .values_list(
            "occurrence_id",
            "device__pool_id",
            "device__kind",
            "device__memory_gib",
            "gib",
            "share",
            "starts_at",
            "ends_at",
        )
    )

    # The viewer's occurrences (one query), limited to the pool when one is asked for.
    visible = (
        Occurrence.objects.for_user(user)
        .filter(starts_at__lt=end, ends_at__gt=start)
        .exclude(state=OccurrenceState.CANCELLED)
        .select_related("booking__tenant")
        .order_by("starts_at", "pk")
    )
    if tenant is not None:
        visible = visible.filter(booking__tenant=tenant)
    if pool is not None:
        in_pool = BookingHold.objects.filter(device__pool=pool).values("occurrence_id")
        visible = visible.filter(pk__in=in_pool)
    rows = list(visible[: MAX_OCCURRENCES + 1])
    truncated = len(rows) > MAX_OCCURRENCES
    occurrences = {
        o.pk: CalendarOccurrence(
            id=o.pk,
            booking=o.booking_id,
            booking_name=o.booking.name,
            tenant_slug=o.booking.tenant.slug,
            tenant_name=o.booking.tenant.name,
            starts_at=o.starts_at,
            ends_at=o.ends_at,
            state=o.state,
            composition=o.composition_id,
        )
        for o in rows[:MAX_OCCURRENCES]
    }

    # Each hold adds its amount where its hours begin and takes it off where they end; the
    # running sum is then the load of each hour, whatever the number or length of holds.
    steps: dict[int, list[float]] = {p.pk: [0.0] * (hours + 1) for p in pools}
    for occ, pool_id, kind, memory_gib, gib, share, s, e in hold_rows:
        amount = _amount(pool_kind[pool_id], kind, memory_gib or 0, gib, share)
        touched = _slots(start, s, e, hours)
        if touched:
            steps[pool_id][touched.start] += amount
            steps[pool_id][touched.stop] -= amount
        if occ in occurrences:
            held = occurrences[occ].pools
            held[pool_slug[pool_id]] = held.get(pool_slug[pool_id], 0.0) + amount

    _pools_of_finished(occurrences, pool_kind, pool_slug)

    booked = {pk: list(accumulate(series[:hours])) for pk, series in steps.items()}
    standing = _standing(pool_kind, start)
    loads = []
    for cap in pool_capacities(pools=Pool.objects.filter(pk__in=pool_kind)):
        pk = cap.pool.pk
        base = cap.capacity - cap.unavailable - standing.get(pk, 0.0)
        free = [round(max(0.0, base - b), 3) for b in booked[pk]]
        series = [round(b, 3) + 0.0 for b in booked[pk]]  # + 0.0: never -0.0
        loads.append(
            PoolLoad(
                pool=cap.pool,
                unit=cap.unit,
                capacity=cap.capacity,
                unavailable=cap.unavailable,
                standing=round(standing.get(pk, 0.0), 3),
                booked=series,
                free=free,
                days=_days(start, series, free, cap.capacity),
                free_windows=_free_windows(start, free, min_free),
            )
        )

    conflicts = _conflicts(occurrences, now=now, operator=operator)
    for conflict in conflicts:
        occurrences[conflict.occurrence].conflicts.append(conflict)
    return Calendar(
        start=start,
        end=end,
        min_free=min_free,
        occurrences=list(occurrences.values()),
        pools=loads,
        conflicts=conflicts,
        truncated=truncated,
    )


def _standing(pool_kind: dict[int, str], start: datetime) -> dict[int, float]:
    """Per pool, what unreleased allocations of compositions that serve no booked window
    hold now (one query): they have no end, so the calendar counts them as staying."""
    serving = Occurrence.objects.filter(composition__isnull=False, ends_at__gt=start).values(
        "composition_id"
    )
    rows = (
        Allocation.objects.filter(released_at__isnull=True, device__pool__in=pool_kind)
        .exclude(composition__in=serving)
        .values_list("device__pool_id", "device__kind", "device__memory_gib", "gib", "share")
    )
    standing: dict[int, float] = defaultdict(float)
    for pool_id, kind, memory_gib, gib, share in rows:
        standing[pool_id] += _amount(pool_kind[pool_id], kind, memory_gib or 0, gib, share)
    return standing


def _pools_of_finished(
    occurrences: dict[int, CalendarOccurrence], pool_kind: dict[int, str], pool_slug: dict[int, str]
) -> None:
    """Where the windows that are over held: an occurrence gives its holds back when it
    ends, so one composed is drawn in the pools its composition held (one query), not in
    none."""
    served = {o.composition: o for o in occurrences.values() if o.composition and not o.pools}
    if not served:
        return
    rows = Allocation.objects.filter(
        composition_id__in=served, device__pool__in=pool_kind
    ).values_list(
        "composition_id", "device__pool_id", "device__kind", "device__memory_gib", "gib", "share"
    )
    for composition_id, pool_id, kind, memory_gib, gib, share in rows:
        held = served[composition_id].pools
        amount = _amount(pool_kind[pool_id], kind, memory_gib or 0, gib, share)
        held[pool_slug[pool_id]] = held.get(pool_slug[pool_id], 0.0) + amount


def _conflicts(
    occurrences: dict[int, CalendarOccurrence], *, now: datetime, operator: bool
) -> list[Conflict]:
    """Conflicts of the viewer's windows not yet over (four queries at most)."""
    live = {pk for pk, o in occurrences.items() if o.ends_at > now}
    found: list[Conflict] = [
        Conflict(o.id, o.booking, o.state, 1)
        for o in occurrences.values()
        if o.state in FAILED_STATES
    ]
    booked = [pk for pk in live if occurrences[pk].state == OccurrenceState.BOOKED]
    if not booked:
        return found
    holds = list(
        BookingHold.objects.filter(occurrence_id__in=booked).values_list(
            "occurrence_id", "device_id", "gib", "share"
        )
    )
    devices = {
        d.pk: d
        for d in Device.objects.filter(pk__in={h[1] for h in holds}).only(
            "pk", "name", "state", "health"
        )
    }
    whole = {h[1] for h in holds if h[2] is None and h[3] is None}
    taken: dict[int, set[int]] = defaultdict(set)  # device: compositions holding it
    for device_id, composition_id in Allocation.objects.filter(
        Q(device_id__in=whole), released_at__isnull=True, gib__isnull=True, share__isnull=True
    ).values_list("device_id", "composition_id"):
        taken[device_id].add(composition_id)
    # A composition serving a running window gives its devices back when that window ends
    # (the clock's handover: day and night on the same GPUs); a window starting then or
    # later finds them free, so it is not in conflict with it.
    handing_over = dict(
        Occurrence.objects.filter(
            state=OccurrenceState.RUNNING,
            composition_id__in={c for held in taken.values() for c in held},
        ).values_list("composition_id", "ends_at")
    )
    per_occurrence: dict[tuple[int, str], list[str]] = defaultdict(list)
    for occ, device_id, gib, share in holds:
        device = devices[device_id]
        window = occurrences[occ]
        others = {
            c
            for c in taken[device_id] - {window.composition}
            if c not in handing_over or handing_over[c] > window.starts_at
        }
        if is_out_of_service(device.state, device.health):
            per_occurrence[(occ, "device_unavailable")].append(device.name)
        elif gib is None and share is None and others:
            per_occurrence[(occ, "device_taken")].append(device.name)
    for (occ, reason), names in sorted(per_occurrence.items()):
        found.append(
            Conflict(
                occ,
                occurrences[occ].booking,
                reason,
                len(names),
                tuple(sorted(names)) if operator else (),
            )
        )
    return found
