"""Utilisation history rows written straight into the tables, for tests of what reads them
(the sampling itself is tested through `composer.services.utilisation`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from composer.models import PoolSample, Resolution, TenantSample


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
