"""Utilisation history's writes: the minute sample agrees with the pools' figures and the
stranded capacity, rollups are means of what is below them and rerun to the same rows, and
pruning keeps minutes days and rollups a year."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from composer.choices import CompositionState
from composer.models import Composition, KindSample, PoolSample, Resolution, TenantSample
from composer.services.utilisation import (
    utilisation_prune,
    utilisation_rollup,
    utilisation_sample,
    utilisation_tick,
)
from fabric.choices import DeviceKind, DeviceState, LinkState
from fabric.models import Link
from fabric.selectors import pool_capacities
from tests.factories.fabric import DeviceFactory, EnclosureFactory, PoolFactory, SmallFabric

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 4, 10, 30, 45, tzinfo=UTC)


def minute_rows(pool: Any) -> list[PoolSample]:
    return list(PoolSample.objects.filter(pool=pool, resolution=Resolution.MINUTE))


def test_a_sample_holds_each_pools_figures_as_the_pools_page_counts_them(
    small: SmallFabric,
) -> None:
    gpu = small.gpus[0]
    gpu.state = DeviceState.BOUND
    gpu.bound_host = small.hosts[0]
    gpu.save()
    small.gpus[1].state = DeviceState.FAILED
    small.gpus[1].save()

    pools, _ = utilisation_sample(now=NOW)

    assert pools == 2
    for cap in pool_capacities():
        (row,) = minute_rows(cap.pool)
        assert row.bucket_start == datetime(2026, 12, 4, 10, 30, tzinfo=UTC)
        assert (row.capacity, row.allocated, row.free, row.unavailable) == (
            cap.capacity,
            cap.allocated,
            cap.free,
            cap.unavailable,
        )
        assert row.unit == cap.unit and row.kind == cap.pool.kind
    (h100,) = minute_rows(small.pools[0])
    assert (h100.capacity, h100.allocated, h100.free, h100.unavailable) == (8, 1, 6, 1)


def test_free_gpus_no_host_reaches_are_stranded_and_reachable_ones_are_not(
    small: SmallFabric,
) -> None:
    utilisation_sample(now=NOW)
    (before,) = minute_rows(small.pools[0])
    assert before.stranded == 0

    # Rack B's GPU chassis loses its only link: its four free GPUs are free but unreachable.
    enclosure = small.enclosures[1]
    Link.objects.filter(Q(a_port__enclosure=enclosure) | Q(b_port__enclosure=enclosure)).update(
        state=LinkState.DOWN
    )
    small.gpus[4].state = DeviceState.FAILED  # one of them failed: unavailable, not stranded
    small.gpus[4].save()
    utilisation_sample(now=NOW + timedelta(minutes=1))

    after = minute_rows(small.pools[0])[-1]
    assert after.stranded == 3
    assert after.free == 7
    # The CXL box of the small fabric has no link at all: its free GiB are all stranded.
    (memory,) = [r for r in minute_rows(small.pools[1]) if r.bucket_start == after.bucket_start]
    assert memory.stranded == memory.free == 2048


def test_every_tenant_gets_its_live_compositions_counted_zero_included(
    small: SmallFabric, acme: Any, globex: Any
) -> None:
    for name, state in [
        ("a", CompositionState.READY),
        ("b", CompositionState.DEGRADED),
        ("c", CompositionState.RELEASED),
        ("d", CompositionState.FAILED),
    ]:
        Composition.objects.create(tenant=acme, name=name, state=state, spec={})

    _, tenants = utilisation_sample(now=NOW)

    assert tenants == 2
    counts = dict(TenantSample.objects.values_list("tenant__slug", "compositions"))
    assert counts == {"acme": 2, "globex": 0}


def test_sampling_the_same_minute_twice_keeps_one_row(small: SmallFabric) -> None:
    utilisation_sample(now=NOW)
    small.gpus[0].state = DeviceState.FAILED
    small.gpus[0].save()
    utilisation_sample(now=NOW + timedelta(seconds=10))

    (row,) = minute_rows(small.pools[0])
    assert row.unavailable == 1


def test_a_sample_takes_a_fixed_number_of_queries_whatever_the_pool_count(
    small: SmallFabric,
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            utilisation_sample(now=NOW)
        return len(captured.captured_queries)

    few = queries()
    for i in range(10):
        pool = PoolFactory.create(name=f"Extra {i}", slug=f"extra-{i}", kind=DeviceKind.GPU)
        enclosure = EnclosureFactory.create(manager=small.manager)
        for _ in range(3):
            DeviceFactory.create(manager=small.manager, enclosure=enclosure, pool=pool)
    assert queries() == few
    assert PoolSample.objects.filter(resolution=Resolution.MINUTE).count() == 12


def hour_of(pool: Any, start: datetime) -> PoolSample:
    return PoolSample.objects.get(pool=pool, resolution=Resolution.HOUR, bucket_start=start)


def test_an_hours_rollup_is_the_mean_of_its_minutes_and_reruns_to_the_same_row(
    small: SmallFabric,
) -> None:
    hour = datetime(2026, 12, 4, 10, tzinfo=UTC)
    gpu = small.gpus[0]
    # 10:00 and 10:01 with nothing allocated, 10:02 and 10:03 with one GPU bound.
    for minute in range(4):
        if minute == 2:
            gpu.state, gpu.bound_host = DeviceState.BOUND, small.hosts[0]
            gpu.save()
        utilisation_sample(now=hour + timedelta(minutes=minute))
    utilisation_sample(now=hour + timedelta(hours=1))  # the next hour: not in this one

    utilisation_rollup(resolution=Resolution.HOUR, start=hour + timedelta(minutes=20))
    first = hour_of(small.pools[0], hour)
    utilisation_rollup(resolution=Resolution.HOUR, start=hour)
    again = hour_of(small.pools[0], hour)

    assert (first.allocated, first.allocated_peak, first.free, first.samples) == (0.5, 1, 7.5, 4)
    assert again.pk == first.pk
    assert (again.allocated, again.free, again.samples) == (0.5, 7.5, 4)
    assert PoolSample.objects.filter(resolution=Resolution.HOUR).count() == 2


def test_a_days_rollup_weighs_each_hour_by_its_samples(small: SmallFabric, acme: Any) -> None:
    day = datetime(2026, 12, 4, tzinfo=UTC)
    gpu = small.gpus[0]
    # 01:00, three samples with nothing allocated; 02:00, one sample with one GPU bound.
    for minute in range(3):
        utilisation_sample(now=day + timedelta(hours=1, minutes=minute))
    Composition.objects.create(tenant=acme, name="a", state=CompositionState.READY, spec={})
    gpu.state, gpu.bound_host = DeviceState.BOUND, small.hosts[0]
    gpu.save()
    utilisation_sample(now=day + timedelta(hours=2))
    for hour in (1, 2):
        utilisation_rollup(resolution=Resolution.HOUR, start=day + timedelta(hours=hour))

    utilisation_rollup(resolution=Resolution.DAY, start=day + timedelta(hours=5))

    row = PoolSample.objects.get(pool=small.pools[0], resolution=Resolution.DAY)
    assert row.bucket_start == day
    assert (row.allocated, row.allocated_peak, row.samples) == (0.25, 1, 4)
    tenant = TenantSample.objects.get(tenant=acme, resolution=Resolution.DAY)
    assert (tenant.compositions, tenant.samples) == (0.25, 4)


def test_a_tick_samples_rolls_up_its_hour_and_day_and_prunes(
    small: SmallFabric, settings: Any
) -> None:
    settings.COMPOSER_UTILISATION_MINUTES_DAYS = 8
    settings.COMPOSER_UTILISATION_ROLLUPS_DAYS = 366
    old_minute = NOW - timedelta(days=8, minutes=1)
    kept_minute = NOW - timedelta(days=7)
    old_rollup = NOW - timedelta(days=367)
    for at, resolution in [
        (old_minute, Resolution.MINUTE),
        (kept_minute, Resolution.MINUTE),
        (old_rollup, Resolution.DAY),
        (old_rollup, Resolution.HOUR),
        (NOW - timedelta(days=300), Resolution.DAY),
    ]:
        PoolSample.objects.create(
            pool=small.pools[0],
            resolution=resolution,
            bucket_start=at,
            kind="gpu",
            unit="devices",
            capacity=8,
            allocated=0,
            allocated_peak=0,
            free=8,
            unavailable=0,
            stranded=0,
        )

    result = utilisation_tick(now=NOW)

    assert (result.pools, result.pruned) == (2, 3)
    starts = set(
        PoolSample.objects.filter(pool=small.pools[0]).values_list("resolution", "bucket_start")
    )
    assert starts == {
        (Resolution.MINUTE, kept_minute),
        (Resolution.DAY, NOW - timedelta(days=300)),
        (Resolution.MINUTE, datetime(2026, 12, 4, 10, 30, tzinfo=UTC)),
        (Resolution.HOUR, datetime(2026, 12, 4, 10, tzinfo=UTC)),
        (Resolution.DAY, datetime(2026, 12, 4, tzinfo=UTC)),
    }


def test_a_rollup_of_minutes_is_refused() -> None:
    with pytest.raises(ValueError, match="no rollup"):
        utilisation_rollup(resolution=Resolution.MINUTE, start=NOW)


def test_pruning_an_empty_history_deletes_nothing(db: None) -> None:
    assert utilisation_prune(now=NOW) == 0


def test_the_data_centres_sample_per_kind_is_the_sum_of_its_pools(small: SmallFabric) -> None:
    extra = PoolFactory.create(name="L40S GPUs", slug="l40s", kind=DeviceKind.GPU)
    enclosure = EnclosureFactory.create(manager=small.manager)
    for _ in range(3):
        DeviceFactory.create(manager=small.manager, enclosure=enclosure, pool=extra)
    small.gpus[0].state, small.gpus[0].bound_host = DeviceState.BOUND, small.hosts[0]
    small.gpus[0].save()

    utilisation_sample(now=NOW)

    rows = {(r.kind, r.unit): r for r in KindSample.objects.filter(resolution=Resolution.MINUTE)}
    assert set(rows) == {("gpu", "devices"), ("cxl_memory", "GiB")}
    gpu = rows[("gpu", "devices")]
    assert (gpu.capacity, gpu.allocated, gpu.allocated_peak, gpu.free) == (11, 1, 1, 10)
    # The extra enclosure has no link: its three GPUs are stranded.
    assert gpu.stranded == 3
    assert rows[("cxl_memory", "GiB")].capacity == 2048


def test_the_data_centres_hourly_peak_is_its_own_not_a_sum_of_the_pools(
    small: SmallFabric,
) -> None:
    hour = datetime(2026, 12, 4, 10, tzinfo=UTC)
    h100 = small.gpus[0]
    extra = PoolFactory.create(name="L40S GPUs", slug="l40s", kind=DeviceKind.GPU)
    l40s = DeviceFactory.create(
        manager=small.manager, enclosure=small.enclosures[0], pool=extra, slot=7
    )
    # One GPU of each pool bound, never both at once: each pool peaks at 1, the data centre too.
    for minute, bound in enumerate((h100, l40s)):
        for gpu in (h100, l40s):
            gpu.state = DeviceState.BOUND if gpu is bound else DeviceState.FREE
            gpu.bound_host = small.hosts[0] if gpu is bound else None
            gpu.save()
        utilisation_sample(now=hour + timedelta(minutes=minute))

    utilisation_rollup(resolution=Resolution.HOUR, start=hour)

    row = KindSample.objects.get(kind="gpu", resolution=Resolution.HOUR)
    assert (row.allocated, row.allocated_peak, row.samples) == (1, 1, 2)
