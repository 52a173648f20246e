"""Utilisation history rows written straight into the tables, for tests of what reads them
(the sampling itself is tested through `composer.services.utilisation`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Max, Sum

from composer.models import KindSample, PoolSample, Resolution, TenantSample


def pool_row(
    pool: Any,
    at: datetime,
    *,
    resolution: str = Resolution.MINUTE,
    capacity: float = 8,
    allocated: float = 0,
    unavailable: float = 0,
    stranded: float = 0,
) -> PoolSample:
    """A sample of `pool` at `at`: free is what capacity leaves."""
    return PoolSample.objects.create(
        pool=pool,
        resolution=resolution,
        bucket_start=at,
        kind=pool.kind,
        unit="devices",
        capacity=capacity,
        allocated=allocated,
        allocated_peak=allocated,
        free=capacity - allocated - unavailable,
        unavailable=unavailable,
        stranded=stranded,
    )


def tenant_row(
    tenant: Any, at: datetime, compositions: float, *, resolution: str = Resolution.MINUTE
) -> TenantSample:
    return TenantSample.objects.create(
        tenant=tenant, resolution=resolution, bucket_start=at, compositions=compositions
    )


def data_centre_rows() -> int:
    """The data centre's rows (per kind) of the pool rows written so far, as the sampling
    writes them beside the pools': their sums. Returns how many."""
    KindSample.objects.all().delete()
    figures = ("capacity", "allocated", "free", "unavailable", "stranded")
    made = KindSample.objects.bulk_create(
        KindSample(
            kind=row["kind"],
            unit=row["unit"],
            resolution=row["resolution"],
            bucket_start=row["bucket_start"],
            allocated_peak=row["peak"],
            samples=row["n"],
            **{name: row[f"total_{name}"] for name in figures},
        )
        for row in PoolSample.objects.values("kind", "unit", "resolution", "bucket_start")
        .annotate(
            n=Max("samples"),
            peak=Sum("allocated_peak"),
            **{f"total_{name}": Sum(name) for name in figures},
        )
        .order_by()
    )
    return len(made)
