"""Utilisation history as series: one pool's, or the data centre's per kind, and the live
compositions per tenant, for the last day, week, month or year.

The period picks the resolution (a day: minute samples; a week: hourly rollups; a month or a
year: daily rollups), so a chart never holds more than about 1,500 points. Three queries: the
pool's rows (or the data centre's, one per kind and bucket), the tenants' and their names.

Who sees what follows the pools API: every signed-in user sees a pool's capacity,
allocated, free and unavailable figures; the stranded figure is derived from the fabric's
topology, so only operators get it. Compositions per tenant start from
`TenantSample.objects.for_user`: a member sees its own tenants' series, never another's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import BigIntegerField, Func, QuerySet

from composer.models import KindSample, PoolSample, Resolution, Tenant, TenantSample
from composer.services.utilisation import bucket_of
from fabric.kinds import is_sliced, plural
from fabric.models import Pool
from fabric.permissions import is_operator

__all__ = [
    "PERIODS",
    "PoolPoint",
    "PoolSeries",
    "TenantSeries",
    "Utilisation",
    "utilisation_series",
]

# period: (how far back, the resolution read)
PERIODS: dict[str, tuple[timedelta, Resolution]] = {
    "day": (timedelta(days=1), Resolution.MINUTE),
    "week": (timedelta(days=7), Resolution.HOUR),
    "month": (timedelta(days=30), Resolution.DAY),
    "year": (timedelta(days=365), Resolution.DAY),
}
PERIOD_LABELS = {"day": "Last day", "week": "Last week", "month": "Last month", "year": "Last year"}
FIGURES = ("capacity", "allocated", "allocated_peak", "free", "unavailable", "stranded")


class EpochSeconds(Func):
    """A datetime column as whole seconds since 1970 (UTC). The series read thousands of
    rows of a few hundred distinct times: an integer a row and one datetime per distinct time
    costs far less than the database driver parsing a datetime for every row."""

    output_field = BigIntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "CAST(EXTRACT(EPOCH FROM %(expressions)s) AS BIGINT)"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # '%%%%s': one '%%' left after the template, which the backend turns into '%'.
        template = "CAST(strftime('%%%%s', %(expressions)s) AS INTEGER)"
        return self.as_sql(compiler, connection, template=template, **extra)


class Times(dict[int, datetime]):
    """Epoch seconds to aware UTC datetimes, each made once."""

    def __missing__(self, seconds: int) -> datetime:
        made = self[seconds] = datetime.fromtimestamp(seconds, UTC)
        return made


@dataclass(frozen=True)
class PoolPoint:
    """One bucket of a pool (or of the data centre's pools of one kind). `stranded` is None
    for callers who may not see it."""

    at: datetime
    capacity: float
    allocated: float
    allocated_peak: float
    free: float
    unavailable: float
    stranded: float | None

    @property
    def utilisation_percent(self) -> float:
        """Allocated as a share of capacity (0 for an empty pool)."""
        return round(100.0 * self.allocated / self.capacity, 2) if self.capacity else 0.0

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "capacity": round(self.capacity, 3),
            "allocated": round(self.allocated, 3),
            "allocated_peak": round(self.allocated_peak, 3),
            "free": round(self.free, 3),
            "unavailable": round(self.unavailable, 3),
            "utilisation_percent": self.utilisation_percent,
        }
        if self.stranded is not None:
            data["stranded"] = round(self.stranded, 3)
        return data


@dataclass(frozen=True)
class PoolSeries:
    """The points of one pool, or of every pool of one kind (`pool` None: the data centre)."""

    pool: Pool | None
    kind: str
    unit: str
    label: str
    points: list[PoolPoint]


@dataclass(frozen=True)
class TenantSeries:
    """A tenant's live compositions, one (at, count) per bucket (a rollup's is a mean)."""

    slug: str
    name: str
    points: list[tuple[datetime, float]]


@dataclass(frozen=True)
class Utilisation:
    """What the page, its CSV and the API show for one pool choice and period."""

    period: str
    resolution: str
    start: datetime
    end: datetime
    pool: Pool | None
    show_stranded: bool
    pools: list[PoolSeries]
    tenants: list[TenantSeries]

    @property
    def is_empty(self) -> bool:
        return not any(series.points for series in self.pools)


def utilisation_series(
    *, user: Any, period: str, now: datetime, pool: Pool | None = None
) -> Utilisation:
    """The series of `pool` (None: the data centre, one series per kind) over the `period`
    ("day", "week", "month", "year") that ends at `now`, as `user` may see them.

    Raises KeyError for a period not in PERIODS (the forms validate it first).
    """
    back, resolution = PERIODS[period]
    start = bucket_of(now - back, resolution)
    operator = is_operator(user)
    window = {"resolution": resolution, "bucket_start__gte": start, "bucket_start__lte": now}
    # One pool's rows, or the data centre's per kind (written with them: no sum at read time).
    rows: QuerySet[Any] = (
        PoolSample.objects.filter(pool=pool, **window)
        if pool is not None
        else KindSample.objects.filter(**window)
    )
    times = Times()
    grouped: dict[tuple[str, str], list[PoolPoint]] = defaultdict(list)
    for kind, unit, at, *figures in rows.order_by("kind", "unit", "bucket_start").values_list(
        "kind", "unit", EpochSeconds("bucket_start"), *FIGURES
    ):
        capacity, allocated, peak, free, unavailable, stranded = figures
        grouped[(kind, unit)].append(
            PoolPoint(
                at=times[at],
                capacity=capacity,
                allocated=allocated,
                allocated_peak=peak,
                free=free,
                unavailable=unavailable,
                stranded=stranded if operator else None,
            )
        )
    if pool is not None:
        # A pool with no rows yet still gets its (empty) series, in the pools page's unit.
        unit = next(iter(grouped), ("", "GiB" if is_sliced(pool.kind) else "devices"))[1]
        points = next(iter(grouped.values()), [])
        series = [PoolSeries(pool, pool.kind, unit, pool.name, points)]
    else:
        series = [
            PoolSeries(None, kind, unit, f"All {plural(kind)}", points)
            for (kind, unit), points in grouped.items()
        ]
    return Utilisation(
        period=period,
        resolution=resolution,
        start=start,
        end=now,
        pool=pool,
        show_stranded=operator,
        pools=series,
        tenants=_tenant_series(user=user, resolution=resolution, start=start, end=now, times=times),
    )


def _tenant_series(
    *, user: Any, resolution: str, start: datetime, end: datetime, times: Times
) -> list[TenantSeries]:
    """The caller's tenants' compositions series (an operator's: every tenant's), leaving out
    tenants with none in the whole period."""
    rows = (
        TenantSample.objects.for_user(user)
        .filter(resolution=resolution, bucket_start__gte=start, bucket_start__lte=end)
        .order_by("tenant_id", "bucket_start")
        .values_list("tenant_id", EpochSeconds("bucket_start"), "compositions")
    )
    points: dict[int, list[tuple[datetime, float]]] = defaultdict(list)
    for tenant_id, at, count in rows:
        points[tenant_id].append((times[at], count))
    # Names in a query of their own: joining them to every sample costs more than it saves.
    shown = [pk for pk, series in points.items() if any(count for _, count in series)]
    tenants = Tenant.objects.filter(pk__in=shown).order_by("name", "pk")
    return [
        TenantSeries(slug=tenant.slug, name=tenant.name, points=points[tenant.pk])
        for tenant in tenants.only("pk", "slug", "name")
    ]
