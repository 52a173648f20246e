"""Reading utilisation history: the period picks the resolution and the window, the data
centre sums pools of a kind, and each caller sees what the pools API shows them plus their
own tenants' compositions (operators: stranded capacity and every tenant)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from composer.models import Resolution
from composer.selectors.utilisation import at_of, utilisation_series
from fabric.choices import DeviceKind
from tests.factories.fabric import PoolFactory
from tests.support.utilisation import data_centre_rows, pool_row, tenant_row

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 4, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def pools(db: None) -> list[Any]:
    return [
        PoolFactory.create(name="H100 GPUs", slug="h100", kind=DeviceKind.GPU),
        PoolFactory.create(name="L40S GPUs", slug="l40s", kind=DeviceKind.GPU),
        PoolFactory.create(name="NVMe", slug="nvme", kind=DeviceKind.NVME),
    ]


@pytest.mark.parametrize(
    ("period", "resolution"),
    [
        ("day", Resolution.MINUTE),
        ("week", Resolution.HOUR),
        ("month", Resolution.DAY),
        ("year", Resolution.DAY),
    ],
)
def test_the_period_picks_the_resolution(
    pools: list[Any], admin_user: Any, period: str, resolution: str
) -> None:
    for r in Resolution:
        pool_row(pools[0], NOW - timedelta(hours=2), resolution=r, allocated=1)
    data = utilisation_series(user=admin_user, period=period, now=NOW, pool=pools[0])
    assert data.resolution == resolution
    assert [at_of(t) for t in data.pools[0].times] == [NOW - timedelta(hours=2)]


def test_a_day_reads_the_last_day_of_minutes_in_time_order(
    pools: list[Any], admin_user: Any
) -> None:
    for minutes, allocated in [(10, 3), (1500, 7), (5, 4), (1, 2)]:
        pool_row(pools[0], NOW - timedelta(minutes=minutes), allocated=allocated)
    pool_row(pools[1], NOW - timedelta(minutes=5), allocated=6)

    (series,) = utilisation_series(user=admin_user, period="day", now=NOW, pool=pools[0]).pools

    assert series.label == "H100 GPUs" and series.unit == "devices"
    assert list(series.allocated) == [3, 4, 2]  # 25 hours ago is not in it
    assert series.utilisation_percent()[0] == 37.5


def test_the_data_centre_has_a_series_per_kind(pools: list[Any], admin_user: Any) -> None:
    at = NOW - timedelta(minutes=3)
    pool_row(pools[0], at, allocated=2, stranded=1)
    pool_row(pools[1], at, capacity=4, allocated=4, stranded=0.5)
    pool_row(pools[2], at, capacity=10, allocated=1)
    data_centre_rows()

    data = utilisation_series(user=admin_user, period="day", now=NOW)

    by_kind = {s.kind: s for s in data.pools}
    assert set(by_kind) == {"gpu", "nvme"}
    assert by_kind["gpu"].label == "All GPUs" and by_kind["gpu"].pool is None
    gpu = by_kind["gpu"]
    assert len(gpu) == 1
    assert (gpu.capacity[0], gpu.allocated[0], gpu.free[0], gpu.stranded) == (12, 6, 6, [1.5])
    assert gpu.utilisation_percent() == [50]
    assert list(by_kind["nvme"].allocated) == [1]


def test_members_get_no_stranded_figure_and_only_their_tenants_compositions(
    pools: list[Any], admin_user: Any, alice: Any, carol: Any, acme: Any, globex: Any
) -> None:
    at = NOW - timedelta(minutes=3)
    pool_row(pools[0], at, allocated=2, stranded=1)
    tenant_row(acme, at, 3)
    tenant_row(globex, at, 5)

    operator = utilisation_series(user=admin_user, period="day", now=NOW, pool=pools[0])
    member = utilisation_series(user=alice, period="day", now=NOW, pool=pools[0])
    other = utilisation_series(user=carol, period="day", now=NOW)

    assert operator.show_stranded and operator.pools[0].stranded == [1]
    stamp = int(at.timestamp())
    assert [(t.name, list(t.times), list(t.compositions)) for t in operator.tenants] == [
        ("Acme", [stamp], [3]),
        ("Globex", [stamp], [5]),
    ]
    assert not member.show_stranded
    assert member.pools[0].stranded is None
    assert [t.slug for t in member.tenants] == ["acme"]
    assert [t.slug for t in other.tenants] == ["globex"]


def test_tenants_with_no_compositions_all_period_are_left_out(
    pools: list[Any], admin_user: Any, acme: Any, globex: Any
) -> None:
    tenant_row(acme, NOW - timedelta(minutes=2), 0)
    tenant_row(globex, NOW - timedelta(minutes=2), 0)
    tenant_row(globex, NOW - timedelta(minutes=1), 1)

    data = utilisation_series(user=admin_user, period="day", now=NOW)

    assert [t.slug for t in data.tenants] == ["globex"]


def test_no_samples_is_an_empty_history_with_the_pools_series_still_named(
    pools: list[Any], admin_user: Any
) -> None:
    data = utilisation_series(user=admin_user, period="week", now=NOW, pool=pools[0])
    assert data.is_empty
    assert [(s.label, len(s)) for s in data.pools] == [("H100 GPUs", 0)]
    assert utilisation_series(user=admin_user, period="day", now=NOW).pools == []
