"""Utilisation history: the minute sample, its hourly and daily rollups, and their pruning.

Beat runs `utilisation_tick` every minute (`composer.tasks.utilisation_tick_task`). A tick
samples every pool and tenant in one pass of queries whatever the inventory's size (the
pools' figures in two, the stranded capacity in one device query and one topology load, the
live compositions per tenant in one), writes the rows in one statement per table, re-rolls
the hour and the day the sample falls in, and prunes what is past its retention.

With the pools' samples it writes the data centre's per device kind (their sums), so that
reading the data centre reads one row a bucket. Every write is an upsert on (pool, kind or
tenant, resolution, bucket start): a duplicate delivery in the same minute overwrites its
own sample, and a rollup rerun for a bucket writes the same row, because a rollup is a
function of the rows below it. Buckets are UTC minutes, hours and
days. The samples describe the inventory rather than change it, so they are not audited.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, FloatField, Max, Sum
from django.db.models.functions import Cast

from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.models import (
    Composition,
    KindSample,
    PoolSample,
    Resolution,
    Tenant,
    TenantSample,
)
from composer.monitoring.stranded import stranded_by_pool
from fabric.selectors import pool_capacities

__all__ = [
    "TickResult",
    "bucket_of",
    "utilisation_prune",
    "utilisation_rollup",
    "utilisation_sample",
    "utilisation_tick",
]

POOL_FIGURES = ("capacity", "allocated", "free", "unavailable", "stranded")
POOL_UPDATE = ("kind", "unit", *POOL_FIGURES, "allocated_peak", "samples")
POOL_KEY = ("pool", "resolution", "bucket_start")
KIND_KEY = ("kind", "unit", "resolution", "bucket_start")
KIND_UPDATE = (*POOL_FIGURES, "allocated_peak", "samples")
TENANT_KEY = ("tenant", "resolution", "bucket_start")
TENANT_UPDATE = ("compositions", "samples")

# What each rollup is made of, and how long its bucket is.
SOURCE = {Resolution.HOUR: Resolution.MINUTE, Resolution.DAY: Resolution.HOUR}
LENGTH = {Resolution.HOUR: timedelta(hours=1), Resolution.DAY: timedelta(days=1)}


@dataclass(frozen=True)
class TickResult:
    """What one tick wrote and deleted (for the task's return value and the tests)."""

    pools: int
    tenants: int
    pruned: int


def bucket_of(at: datetime, resolution: str) -> datetime:
    """The UTC start of the bucket of `resolution` that holds `at`."""
    at = at.astimezone(UTC)
    if resolution == Resolution.MINUTE:
        return at.replace(second=0, microsecond=0)
    if resolution == Resolution.HOUR:
        return at.replace(minute=0, second=0, microsecond=0)
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def utilisation_sample(*, now: datetime) -> tuple[int, int]:
    """Write the minute sample of every pool and every tenant for the minute of `now`.

    A pool's figures are `fabric.selectors.pool_capacities` (the pools page's) and its
    stranded figure `composer.monitoring.stranded.stranded_by_pool` (the metrics'): the one
    definition of each. A tenant's figure counts its compositions that hold or may still hold
    resources (`ACTIVE_COMPOSITION_STATES`, as quotas count them). Returns (pool rows,
    tenant rows).
    """
    minute = bucket_of(now, Resolution.MINUTE)
    capacities = pool_capacities()
    stranded = stranded_by_pool() if capacities else {}
    pool_rows = [
        PoolSample(
            pool=cap.pool,
            resolution=Resolution.MINUTE,
            bucket_start=minute,
            kind=cap.pool.kind,
            unit=cap.unit,
            capacity=cap.capacity,
            allocated=cap.allocated,
            allocated_peak=cap.allocated,
            free=cap.free,
            unavailable=cap.unavailable,
            stranded=stranded.get(cap.pool.pk, 0.0),
            samples=1,
        )
        for cap in capacities
    ]
    kind_rows = _kind_totals(pool_rows, minute)
    live = dict(
        Composition.objects.filter(state__in=ACTIVE_COMPOSITION_STATES)
        .values("tenant_id")
        .annotate(n=Count("id"))
        .values_list("tenant_id", "n")
    )
    tenant_rows = [
        TenantSample(
            tenant_id=tenant_id,
            resolution=Resolution.MINUTE,
            bucket_start=minute,
            compositions=float(live.get(tenant_id, 0)),
            samples=1,
        )
        for tenant_id in Tenant.objects.values_list("pk", flat=True)
    ]
    with transaction.atomic():
        _upsert_pools(pool_rows)
        _upsert_kinds(kind_rows)
        _upsert_tenants(tenant_rows)
    return len(pool_rows), len(tenant_rows)


def _kind_totals(rows: list[PoolSample], minute: datetime) -> list[KindSample]:
    """The data centre's minute sample per (kind, unit): the sum of its pools' figures."""
    totals: dict[tuple[str, str], KindSample] = {}
    for row in rows:
        total = totals.get((row.kind, row.unit))
        if total is None:
            total = totals[(row.kind, row.unit)] = KindSample(
                resolution=Resolution.MINUTE,
                bucket_start=minute,
                kind=row.kind,
                unit=row.unit,
                **dict.fromkeys((*POOL_FIGURES, "allocated_peak"), 0.0),
                samples=1,
            )
        for name in POOL_FIGURES:
            setattr(total, name, getattr(total, name) + getattr(row, name))
        total.allocated_peak = total.allocated
    return list(totals.values())


def utilisation_rollup(*, resolution: str, start: datetime) -> tuple[int, int]:
    """Write the `resolution` ("hour" or "day") rollup of the bucket that starts at `start`
    (made a bucket start) from the rows of the resolution below: hours from minutes, days
    from hours. A figure is the mean over the bucket's minute samples (an hour's weighted by
    its samples), `allocated_peak` the highest of them. Idempotent. Returns (pool rows,
    tenant rows) written.
    """
    rollup = Resolution(resolution)
    if rollup not in SOURCE:
        raise ValueError(f"no rollup of resolution {resolution!r}")
    start = bucket_of(start, rollup)
    window = {
        "resolution": SOURCE[rollup],
        "bucket_start__gte": start,
        "bucket_start__lt": start + LENGTH[rollup],
    }
    weighted = {f"sum_{name}": Sum(_times_samples(name)) for name in POOL_FIGURES}
    pool_rows = [
        PoolSample(
            pool_id=row["pool_id"],
            resolution=rollup,
            bucket_start=start,
            kind=row["last_kind"],
            unit=row["last_unit"],
            allocated_peak=row["peak"],
            samples=row["n"],
            **{name: row[f"sum_{name}"] / row["n"] for name in POOL_FIGURES},
        )
        for row in PoolSample.objects.filter(**window)
        .values("pool_id")
        .annotate(
            n=Sum("samples"),
            peak=Max("allocated_peak"),
            last_kind=Max("kind"),
            last_unit=Max("unit"),
            **weighted,
        )
        if row["n"]
    ]
    kind_rows = [
        KindSample(
            kind=row["kind"],
            unit=row["unit"],
            resolution=rollup,
            bucket_start=start,
            allocated_peak=row["peak"],
            samples=row["n"],
            **{name: row[f"sum_{name}"] / row["n"] for name in POOL_FIGURES},
        )
        for row in KindSample.objects.filter(**window)
        .values("kind", "unit")
        .annotate(n=Sum("samples"), peak=Max("allocated_peak"), **weighted)
        if row["n"]
    ]
    tenant_rows = [
        TenantSample(
            tenant_id=row["tenant_id"],
            resolution=rollup,
            bucket_start=start,
            compositions=row["total"] / row["n"],
            samples=row["n"],
        )
        for row in TenantSample.objects.filter(**window)
        .values("tenant_id")
        .annotate(n=Sum("samples"), total=Sum(_times_samples("compositions")))
        if row["n"]
    ]
    with transaction.atomic():
        _upsert_pools(pool_rows)
        _upsert_kinds(kind_rows)
        _upsert_tenants(tenant_rows)
    return len(pool_rows), len(tenant_rows)


def utilisation_prune(*, now: datetime) -> int:
    """Delete minute samples older than COMPOSER_UTILISATION_MINUTES_DAYS and rollups older
    than COMPOSER_UTILISATION_ROLLUPS_DAYS. Run every tick, each run deletes about one
    minute's rows, each a single indexed statement. Returns how many rows were deleted."""
    minutes_before = now - timedelta(days=settings.COMPOSER_UTILISATION_MINUTES_DAYS)
    rollups_before = now - timedelta(days=settings.COMPOSER_UTILISATION_ROLLUPS_DAYS)
    deleted = 0
    for model in (PoolSample, KindSample, TenantSample):
        manager: Any = model._default_manager
        deleted += manager.filter(
            resolution=Resolution.MINUTE, bucket_start__lt=minutes_before
        ).delete()[0]
        deleted += manager.filter(
            resolution__in=[Resolution.HOUR, Resolution.DAY], bucket_start__lt=rollups_before
        ).delete()[0]
    return deleted


def utilisation_tick(*, now: datetime) -> TickResult:
    """One minute of utilisation history: the sample of `now`'s minute, the rollups of its
    hour and then its day (so both include it), and the pruning."""
    pools, tenants = utilisation_sample(now=now)
    utilisation_rollup(resolution=Resolution.HOUR, start=now)
    utilisation_rollup(resolution=Resolution.DAY, start=now)
    return TickResult(pools=pools, tenants=tenants, pruned=utilisation_prune(now=now))


def _times_samples(name: str) -> Any:
    """`name * samples` as a float, so a mean of means weighs each by its samples."""
    return Cast(F(name), FloatField()) * Cast(F("samples"), FloatField())


def _upsert_pools(rows: list[PoolSample]) -> None:
    if rows:
        PoolSample.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=POOL_KEY, update_fields=POOL_UPDATE
        )


def _upsert_kinds(rows: list[KindSample]) -> None:
    if rows:
        KindSample.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=KIND_KEY, update_fields=KIND_UPDATE
        )


def _upsert_tenants(rows: list[TenantSample]) -> None:
    if rows:
        TenantSample.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=TENANT_KEY, update_fields=TENANT_UPDATE
        )
