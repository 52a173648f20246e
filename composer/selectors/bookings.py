"""What bookings hold: the holds of booked windows over a span, in the figures placement and
quotas read (`composer.services.booking_holds` takes them out of a snapshot; the quota
check counts them), and a tenant's booked use of its quotas at the busiest occurrence."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model, Q, QuerySet
from django.db.models.expressions import RawSQL

from composer.choices import ACTIVE_COMPOSITION_STATES, OccurrenceState
from composer.models import Allocation, BookingHold, Occurrence, Quota
from composer.recurrence import Window
from fabric.kinds import shares_per_device

_M = TypeVar("_M", bound=Model)

__all__ = [
    "Booked",
    "HeldDevice",
    "booked_between",
    "booked_quota_added",
    "booked_quota_peak",
    "booked_quota_usage",
    "overlapping",
    "running_as_holds",
]


@dataclass(frozen=True, slots=True)
class HeldDevice:
    """One hold as placement and quotas read it (snapshot ids, figures, the tenant)."""

    id: int
    occurrence: int
    device: str
    host: str | None
    starts_at: datetime
    ends_at: datetime
    gib: int | None
    share: int | None
    tenant: int
    kind: str
    model: str
    capacity_gb: int


@dataclass(frozen=True, slots=True)
class Booked:
    """What bookings hold over a span: their device holds, and each occurrence's host with
    the cores and host memory its spec asks there. Both kept sorted by start, with the
    longest window, so that `during` looks only at what can overlap (an admission asks once
    per occurrence, over many bookings)."""

    holds: tuple[HeldDevice, ...]
    occupants: tuple[tuple[int, str, datetime, datetime, int, int], ...]  # occ, host, s, e, c, m
    longest: timedelta = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        holds = tuple(sorted(self.holds, key=lambda h: (h.starts_at, h.id)))
        occupants = tuple(sorted(self.occupants, key=lambda o: (o[2], o[0])))
        spans = [h.ends_at - h.starts_at for h in holds] + [o[3] - o[2] for o in occupants]
        object.__setattr__(self, "holds", holds)
        object.__setattr__(self, "occupants", occupants)
        object.__setattr__(self, "longest", max(spans, default=timedelta(0)))

    def during(self, window: Window) -> Booked:
        """Only what overlaps `window` (half-open: back-to-back windows do not overlap)."""
        earliest = window.starts_at - self.longest  # nothing starting before it reaches in
        first = bisect_left(self.holds, earliest, key=lambda h: h.starts_at)
        last = bisect_left(self.holds, window.ends_at, key=lambda h: h.starts_at)
        o_first = bisect_left(self.occupants, earliest, key=lambda o: o[2])
        o_last = bisect_left(self.occupants, window.ends_at, key=lambda o: o[2])
        return Booked(
            tuple(h for h in self.holds[first:last] if window.starts_at < h.ends_at),
            tuple(o for o in self.occupants[o_first:o_last] if window.starts_at < o[3]),
        )

    def key(self) -> frozenset[int]:
        """The occurrences it holds for: equal keys take the same things out of a snapshot."""
        return frozenset(h.occurrence for h in self.holds) | frozenset(o[0] for o in self.occupants)


def booked_between(
    start: datetime,
    end: datetime | None,
    *,
    windows: Sequence[Window] | None = None,
    exclude_booking: int | None = None,
    exclude_occurrence: int | None = None,
    tenant: int | None = None,
    tenants: Iterable[int] | None = None,
) -> Booked:
    """The holds of booked occurrences overlapping `[start, end)` (`end` None: from `start`
    on), or with `windows` only those overlapping one of them (each inside `[start, end)`):
    an admission of 13 weekly occurrences reads what its 13 windows overlap, not every
    hold of the 90 days between them. Two queries whatever the number of bookings.

    A running occurrence's holds are not counted: its composition holds those devices now
    (and counts in quotas as any composition does); the holds stay in the table only so
    that no other booking can take the rest of its window."""
    holds: QuerySet[BookingHold] = BookingHold.objects.exclude(
        occurrence__state=OccurrenceState.RUNNING
    )
    occurrences: QuerySet[Occurrence] = Occurrence.objects.filter(
        state=OccurrenceState.BOOKED, host__isnull=False
    )
    if windows is None:
        holds = holds.filter(ends_at__gt=start)
        occurrences = occurrences.filter(ends_at__gt=start)
    if windows is None and end is not None:
        holds = holds.filter(starts_at__lt=end)
        occurrences = occurrences.filter(starts_at__lt=end)
    if windows is not None:  # within [start, end) already: the windows alone bound the read
        holds = overlapping(holds, BookingHold._meta.db_table, windows)
        occurrences = overlapping(occurrences, Occurrence._meta.db_table, windows)
    if tenant is not None:
        holds = holds.filter(occurrence__booking__tenant_id=tenant)
        occurrences = occurrences.filter(booking__tenant_id=tenant)
    if tenants is not None:
        some = list(tenants)
        holds = holds.filter(occurrence__booking__tenant_id__in=some)
        occurrences = occurrences.filter(booking__tenant_id__in=some)
    if exclude_booking is not None:
        holds = holds.exclude(occurrence__booking_id=exclude_booking)
        occurrences = occurrences.exclude(booking_id=exclude_booking)
    if exclude_occurrence is not None:
        holds = holds.exclude(occurrence_id=exclude_occurrence)
        occurrences = occurrences.exclude(pk=exclude_occurrence)
    hold_start, hold_end, instant = _instants(BookingHold._meta.db_table)
    rows = holds.order_by().values_list(  # unordered: `Booked` sorts them itself
        "id",
        "occurrence_id",
        "device_id",
        "host_id",
        hold_start,
        hold_end,
        "gib",
        "share",
        "occurrence__booking__tenant_id",
        "device__kind",
        "device__model",
        "device__capacity_gb",
    )
    held = tuple(
        HeldDevice(
            id=r[0],
            occurrence=r[1],
            device=f"device:{r[2]}",
            host=f"host:{r[3]}" if r[3] else None,
            starts_at=instant(r[4]),
            ends_at=instant(r[5]),
            gib=r[6],
            share=r[7],
            tenant=r[8],
            kind=r[9],
            model=r[10] or "",
            capacity_gb=r[11] or 0,
        )
        for r in _fetched(rows)
    )
    occurrence_start, occurrence_end, instant = _instants(Occurrence._meta.db_table)
    occupants = tuple(
        (
            pk,
            f"host:{host}",
            instant(s),
            instant(e),
            int(cores or 0),
            int(memory or 0),
        )
        # The two keys of the spec, not the whole spec parsed per occurrence.
        for pk, host, s, e, cores, memory in occurrences.order_by().values_list(
            "id",
            "host_id",
            occurrence_start,
            occurrence_end,
            "booking__spec__cores",
            "booking__spec__host_memory_gib",
        )
    )
    return Booked(held, occupants)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def _as_read(value: datetime) -> datetime:
    return value


def _instants(table: str) -> tuple[Any, Any, Callable[[Any], datetime]]:
    """The columns to read a window's start and end by, and what makes a datetime of each.
    PostgreSQL: whole microseconds since the epoch (exact), which Python turns into the
    same aware UTC datetimes several times faster than the driver parses timestamps: an
    admission reads thousands of holds. Elsewhere the columns as they are."""
    if connection.vendor != "postgresql":
        return "starts_at", "ends_at", _as_read
    start, end = (
        RawSQL(f'(extract(epoch from "{table}"."{column}") * 1000000)::bigint', ())
        for column in ("starts_at", "ends_at")
    )
    return start, end, _from_micros


def _fetched(rows: QuerySet[Any, tuple[Any, ...]]) -> Iterable[tuple[Any, ...]]:
    """The rows of a `values_list` of plain columns. PostgreSQL: as the driver returns them
    (ints and strings, which no converter changes), without the ORM's work per row: an
    admission reads thousands of holds. Elsewhere through the ORM (SQLite's converters)."""
    if connection.vendor != "postgresql":
        return rows
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def overlapping(rows: QuerySet[_M], table: str, windows: Sequence[Window]) -> QuerySet[_M]:
    """`rows` (holds or occurrences) whose window overlaps one of `windows` (half-open).
    PostgreSQL: as range overlaps, which the GiST index of their windows answers
    (migration 0029); elsewhere as the same comparisons."""
    if connection.vendor != "postgresql":
        overlap = Q()
        for window in windows:
            overlap |= Q(starts_at__lt=window.ends_at, ends_at__gt=window.starts_at)
        return rows.filter(overlap)
    span = f'tstzrange("{table}"."starts_at", "{table}"."ends_at", \'[)\')'
    clause = f"{span} && tstzrange(%s, %s, '[)')"
    return rows.extra(
        where=["(" + " OR ".join([clause] * len(windows)) + ")"],
        params=[value for w in windows for value in (w.starts_at, w.ends_at)],
    )


def _counted(quota: Quota, hold: HeldDevice) -> dict[str, float] | None:
    """What `hold` takes of `quota` (None: it is not the quota's), counted as
    `composer.selectors.quotas.quota_usage` counts allocations (a share as its fraction of
    one device, a drive by its capacity)."""
    if hold.tenant != quota.tenant_id or hold.kind != quota.kind:
        return None
    if quota.model and hold.model != quota.model:
        return None
    figures = {"count": 0.0, "memory_gib": float(hold.gib or 0), "storage_tb": 0.0}
    if hold.share is not None:
        figures["count"] = hold.share / (shares_per_device(hold.kind) or 1)
    elif hold.gib is None:
        figures["count"] = 1.0
        figures["storage_tb"] = hold.capacity_gb / 1000
    return figures


def booked_quota_usage(
    quotas: Iterable[Quota], holds: Iterable[HeldDevice]
) -> dict[int, dict[str, float]]:
    """{quota id: {count, memory_gib, storage_tb}}: the most `holds` of each quota's tenant
    take at any one instant (each figure's own peak), not their sum: two windows that do
    not overlap never add up. Holds are half-open: one ending when another starts does not
    overlap it. Over the holds that overlap a window, this is the peak inside that window
    (intervals that meet pairwise share a point)."""
    holds = list(holds)
    usage: dict[int, dict[str, float]] = {}
    for quota in quotas:
        events: list[tuple[datetime, int, dict[str, float]]] = []
        for hold in holds:
            figures = _counted(quota, hold)
            if figures is not None:
                events += [(hold.starts_at, 1, figures), (hold.ends_at, 0, figures)]
        events.sort(key=lambda event: (event[0], event[1]))  # ends before starts
        current: dict[str, float] = defaultdict(float)
        peak: dict[str, float] = defaultdict(float)
        for _, starting, figures in events:
            for name, value in figures.items():
                current[name] += value if starting else -value
                peak[name] = max(peak[name], current[name])
        usage[quota.pk] = {name: value for name, value in peak.items() if value}
    return usage


def booked_quota_peak(
    quotas: Iterable[Quota],
    *,
    now: datetime,
    start: datetime | None = None,
    end: datetime | None = None,
    tenant: int | None = None,
    exclude_occurrence: int | None = None,
) -> dict[int, dict[str, float]]:
    """Per quota, what its tenant's bookings add, beside what the tenant holds `now`, to
    what a request for `[start, end)` will stand beside (`start` None: now; `end` None: no
    end, as a composition made now): the most held at once in that span by its booked
    windows (but `exclude_occurrence`'s) and by the compositions serving its running ones,
    less what those compositions hold now (quota usage counts them already). A figure may
    be negative: a running window's composition that ends before the span frees its share.

    A running window's composition is counted only until its window ends: a daily booking
    whose night is running is counted once, not for tonight's composition and tomorrow's
    window on top of each other. Five queries at most whatever the number of tenants
    (`tenant` narrows them to one)."""
    quotas = [q for q in quotas if tenant is None or q.tenant_id == tenant]
    if not quotas:
        return {}
    start = start or now
    tenants = {q.tenant_id for q in quotas}
    ahead = booked_between(start, end, tenants=tenants, exclude_occurrence=exclude_occurrence)
    running = running_as_holds(since=now, tenants=tenants)
    if not running:
        return booked_quota_usage(quotas, ahead.holds)
    during = [
        h
        for h in running
        if h.ends_at > start
        and (end is None or h.starts_at < end)
        and h.occurrence != exclude_occurrence
    ]
    return booked_quota_added(quotas, (*during, *ahead.holds), running)


def booked_quota_added(
    quotas: Iterable[Quota], during: Iterable[HeldDevice], running: Iterable[HeldDevice]
) -> dict[int, dict[str, float]]:
    """Per quota, the most `during` holds at once (booked windows in a span and the running
    windows' compositions that reach into it) less what all of `running` hold now, which
    quota usage already counts: what bookings add to it for that span."""
    quotas = list(quotas)
    together = booked_quota_usage(quotas, during)
    held_now = booked_quota_usage(quotas, running)  # all start at the same instant: their sum
    added: dict[int, dict[str, float]] = {}
    for quota in quotas:
        peak, current = together.get(quota.pk, {}), held_now.get(quota.pk, {})
        figures = {name: peak.get(name, 0.0) - current.get(name, 0.0) for name in {*peak, *current}}
        added[quota.pk] = {name: value for name, value in figures.items() if value}
    return added


def running_as_holds(*, since: datetime, tenants: Iterable[int]) -> tuple[HeldDevice, ...]:
    """What the compositions serving running windows hold now, as holds from `since` to
    their window's end (ids negative: an allocation is not a hold). Two queries."""
    serving = {
        composition: (occurrence, ends_at, tenant)
        for occurrence, composition, ends_at, tenant in Occurrence.objects.filter(
            state=OccurrenceState.RUNNING,
            booking__tenant_id__in=list(tenants),
            composition__isnull=False,
            ends_at__gt=since,
        ).values_list("id", "composition_id", "ends_at", "booking__tenant_id")
    }
    if not serving:
        return ()
    rows = Allocation.objects.filter(
        composition_id__in=serving,
        composition__state__in=ACTIVE_COMPOSITION_STATES,
        released_at__isnull=True,
    ).values_list(
        "id",
        "composition_id",
        "device_id",
        "composition__host_id",
        "gib",
        "share",
        "device__kind",
        "device__model",
        "device__capacity_gb",
    )
    return tuple(
        HeldDevice(
            id=-pk,
            occurrence=serving[composition][0],
            device=f"device:{device}",
            host=f"host:{host}" if host else None,
            starts_at=since,
            ends_at=serving[composition][1],
            gib=gib,
            share=share,
            tenant=serving[composition][2],
            kind=kind,
            model=model or "",
            capacity_gb=capacity_gb or 0,
        )
        for pk, composition, device, host, gib, share, kind, model, capacity_gb in rows
    )
