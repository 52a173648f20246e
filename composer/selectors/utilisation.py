"""Utilisation history as series: one pool's, or the data centre's per kind, and the live
compositions per tenant, for the last day, week, month or year.

The period picks the resolution (a day: minute samples; a week: hourly rollups; a month or a
year: daily rollups), so a chart never holds more than about 1,500 points. Three queries: the
pool's rows (or the data centre's, one per kind and bucket), the tenants' and their names.

A series is held as columns (its bucket times, then one list per figure), never as an object
per point: a day of the data centre is tens of thousands of samples, and building, keeping
and collecting an object or a row per sample cost more than the query. PostgreSQL joins each
series into one text (`joined_columns`); other databases' rows are transposed in one step
(`transposed_columns`). Times are epoch seconds; `Utilisation.time_axis` joins every series'
times into the one axis that the API and the page's charts share.

Who sees what follows the pools API: every signed-in user sees a pool's capacity,
allocated, free and unavailable figures; the stranded figure is derived from the fabric's
topology, so only operators get it. Compositions per tenant start from
`TenantSample.objects.for_user`: a member sees its own tenants' series, never another's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.postgres.aggregates import StringAgg
from django.db import connections
from django.db.models import BigIntegerField, Func, QuerySet, TextField, Value

from composer.models import KindSample, PoolSample, Resolution, Tenant, TenantSample
from composer.services.utilisation import bucket_of
from fabric.kinds import is_sliced, plural
from fabric.models import Pool
from fabric.permissions import is_operator

__all__ = [
    "PERIODS",
    "PoolSeries",
    "TenantSeries",
    "Utilisation",
    "aligned",
    "at_of",
    "joined_columns",
    "percentages",
    "rounded",
    "transposed_columns",
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
Column = Sequence[float]


class EpochSeconds(Func):
    """A datetime column as whole seconds since 1970 (UTC), cast to an integer in SQL. The
    series read thousands of rows of a few hundred distinct times: an integer a row costs far
    less than the database driver parsing a datetime for every row, and as the database
    already answers an integer no converter runs on each value."""

    output_field = BigIntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # date_part answers a float, which is cheaper to compute than EXTRACT's numeric.
        template = "CAST(DATE_PART('epoch', %(expressions)s) AS BIGINT)"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # '%%%%s': one '%%' left after the template, which the backend turns into '%'.
        template = "CAST(strftime('%%%%s', %(expressions)s) AS INTEGER)"
        return self.as_sql(compiler, connection, template=template, **extra)

    def get_db_converters(self, connection: Any) -> list[Any]:
        return []


def rounded(values: Column, digits: int = 3) -> list[float]:
    """`values` rounded as every answer shows them (3 decimals). Rounding a float to some
    digits is slow (it goes through its decimal digits), and many columns repeat a few
    values (a capacity, a count of compositions): those round each distinct value once."""
    distinct = set(values)
    if len(distinct) * 4 <= len(values):
        table = {value: round(value, digits) for value in distinct}
        return list(map(table.__getitem__, values))
    return [round(value, digits) for value in values]


def percentages(allocated: Column, capacity: Column) -> list[float]:
    """Allocated as a share of capacity, in percent to 2 decimals (0 for an empty pool)."""
    return [
        round(100.0 * used / whole, 2) if whole else 0.0
        for used, whole in zip(allocated, capacity, strict=True)
    ]


def aligned(
    times: Sequence[int], values: Sequence[float], axis: Sequence[int]
) -> list[float | None]:
    """`values` (one per time of `times`) placed on `axis`, None where the series has no
    bucket. Series sampled by the same ticks share their times, so that is checked first."""
    if len(times) == len(axis) and list(times) == list(axis):
        return list(values)
    by_time = dict(zip(times, values, strict=True))
    return [by_time.get(at) for at in axis]


@dataclass(frozen=True)
class PoolSeries:
    """The buckets of one pool, or of every pool of one kind (`pool` None: the data centre),
    as columns: the n-th value of each figure belongs to the n-th of `times` (epoch seconds,
    oldest first). `stranded` is None for callers who may not see it."""

    pool: Pool | None
    kind: str
    unit: str
    label: str
    times: Sequence[int]
    capacity: Column
    allocated: Column
    allocated_peak: Column
    free: Column
    unavailable: Column
    stranded: Column | None

    def __len__(self) -> int:
        return len(self.times)

    def utilisation_percent(self) -> list[float]:
        return percentages(self.allocated, self.capacity)


@dataclass(frozen=True)
class TenantSeries:
    """A tenant's live compositions per bucket (a rollup's is a mean), as two columns."""

    slug: str
    name: str
    times: Sequence[int]
    compositions: Column


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
        return not any(series.times for series in self.pools)

    def time_axis(self) -> list[int]:
        """Every bucket time of the pools' and the tenants' series, oldest first: the axis
        that the answer's columns are aligned on."""
        found: set[int] = set()
        for pool in self.pools:
            found.update(pool.times)
        for tenant in self.tenants:
            found.update(tenant.times)
        return sorted(found)


def at_of(seconds: int) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


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
    grouped = _columns(rows, ("kind", "unit"), FIGURES)
    empty: list[Sequence[Any]] = [()] * (1 + len(FIGURES))

    def series(key: tuple[Any, ...], columns: list[Sequence[Any]], label: str) -> PoolSeries:
        times, capacity, allocated, peak, free, unavailable, stranded = columns
        return PoolSeries(
            pool=pool,
            kind=key[0],
            unit=key[1],
            label=label,
            times=times,
            capacity=capacity,
            allocated=allocated,
            allocated_peak=peak,
            free=free,
            unavailable=unavailable,
            stranded=stranded if operator else None,
        )

    if pool is not None:
        # A pool with no rows yet still gets its (empty) series, in the pools page's unit.
        # Rows of another kind or unit (the pool was changed) are not mixed into it.
        key = min(grouped, default=(pool.kind, "GiB" if is_sliced(pool.kind) else "devices"))
        pools = [series((pool.kind, key[1]), grouped.get(key, empty), pool.name)]
    else:
        pools = [
            series(key, found, f"All {plural(key[0])}") for key, found in sorted(grouped.items())
        ]
    return Utilisation(
        period=period,
        resolution=resolution,
        start=start,
        end=now,
        pool=pool,
        show_stranded=operator,
        pools=pools,
        tenants=_tenant_series(user=user, resolution=resolution, start=start, end=now),
    )


def _tenant_series(
    *, user: Any, resolution: str, start: datetime, end: datetime
) -> list[TenantSeries]:
    """The caller's tenants' compositions series (an operator's: every tenant's), leaving out
    tenants with none in the whole period."""
    rows = TenantSample.objects.for_user(user).filter(
        resolution=resolution, bucket_start__gte=start, bucket_start__lte=end
    )
    columns = _columns(rows, ("tenant_id",), ("compositions",))
    # Names in a query of their own: joining them to every sample costs more than it saves.
    shown = [key[0] for key, (_, counts) in columns.items() if any(counts)]
    tenants = Tenant.objects.filter(pk__in=shown).order_by("name", "pk")
    return [
        TenantSeries(tenant.slug, tenant.name, *columns[(tenant.pk,)])
        for tenant in tenants.only("pk", "slug", "name")
    ]


def _columns(
    rows: QuerySet[Any], keys: tuple[str, ...], figures: tuple[str, ...]
) -> dict[tuple[Any, ...], list[Sequence[Any]]]:
    """The columns of `rows` per value of `keys`: the bucket times (epoch seconds), then one
    per figure, oldest first. PostgreSQL joins each key's rows into one text, so that a day
    of minutes arrives as a few values rather than tens of thousands of rows (the driver
    parsing, and the garbage collector walking, a row per sample was most of the answer's
    time); a float's text is its shortest exact form (PostgreSQL 12 and later, with the
    default `extra_float_digits`), so the numbers are the rows' own. Other databases read
    the rows in time order and transpose them."""
    if connections[rows.db].vendor == "postgresql":
        return joined_columns(rows, keys, figures)
    return transposed_columns(rows, keys, figures)


def joined_columns(
    rows: QuerySet[Any], keys: tuple[str, ...], figures: tuple[str, ...]
) -> dict[tuple[Any, ...], list[Sequence[Any]]]:
    """`_columns` on PostgreSQL: one row per key whose every bucket is joined, in time order,
    into one text (time and figures, comma-separated; the figures are never null, so every
    bucket has as many values), split into columns here. One ordered aggregate rather than
    one per column: each sorts its own input."""
    values = Func(
        Value(","),
        EpochSeconds("bucket_start"),
        *figures,
        function="CONCAT_WS",
        output_field=TextField(),
    )
    query = (
        rows.values(*keys)
        .annotate(joined=StringAgg(values, ",", order_by="bucket_start"))
        .order_by()
        .values_list(*keys, "joined")
    )
    found: dict[tuple[Any, ...], list[Sequence[Any]]] = {}
    width = 1 + len(figures)
    for *key, text in query:
        flat = text.split(",")
        found[tuple(key)] = [
            list(map(int, flat[0::width])),
            *(list(map(float, flat[i::width])) for i in range(1, width)),
        ]
    return found


def transposed_columns(
    rows: QuerySet[Any], keys: tuple[str, ...], figures: tuple[str, ...]
) -> dict[tuple[Any, ...], list[Sequence[Any]]]:
    """`_columns` on any database: every row in time order (which the (resolution,
    bucket_start) index gives without a sort), grouped by key, transposed at once."""
    width = len(keys)
    grouped: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for row in _fetch(
        rows.order_by("bucket_start").values_list(*keys, EpochSeconds("bucket_start"), *figures)
    ):
        grouped[row[:width]].append(row[width:])
    return {key: list(map(list, zip(*found, strict=True))) for key, found in grouped.items()}


def _fetch(rows: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """Every row of a `values_list` query at once. Iterating the query set fetches a hundred
    rows at a time, which over the tens of thousands of a day's samples costs as much again
    as reading them; these columns need no converting (the times are integers already)."""
    sql, params = rows.query.sql_with_params()
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())
