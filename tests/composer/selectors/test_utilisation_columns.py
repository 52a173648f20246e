"""The utilisation answers hold the rows' own numbers: read as columns (joined in SQL on
PostgreSQL, transposed from rows elsewhere) and aligned on one time axis, every figure of
the API, the page's charts and the CSV is still its sample row's value rounded as before, at
its row's time, with null only where that series has no row; and a member still sees
neither the stranded figure nor another tenant's compositions."""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from composer.models import KindSample, PoolSample, Resolution, TenantSample
from composer.selectors import utilisation
from composer.selectors.utilisation import joined_columns, transposed_columns
from fabric.choices import DeviceKind
from tests.factories.fabric import PoolFactory
from tests.support.utilisation import data_centre_rows

pytestmark = pytest.mark.django_db

API = reverse("api:utilisation")
PAGE = reverse("composer:utilisation")
FIGURES = ("capacity", "allocated", "allocated_peak", "free", "unavailable", "stranded")
# Awkward values: halfway cases of the third decimal, sums that are not what they print.
AWKWARD = (2.0005, 0.1 + 0.2, 1 / 3, 12.3455, 1e-4, 7.0)


@pytest.fixture(autouse=True, params=["native", "transposed"])
def columns_read(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each answer once as the database reads it, once as other databases do."""
    if request.param == "transposed":
        monkeypatch.setattr(utilisation, "joined_columns", transposed_columns)
    return str(request.param)


def stamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture
def history(acme: Any, globex: Any) -> dict[str, Any]:
    """Two hours of minutes of three pools and two tenants, figures with many decimals; no
    sample at all for five minutes (no worker ran), and one pool missing one more minute."""
    rng = random.Random(15)
    pools = [
        PoolFactory.create(name="H100 GPUs", slug="h100", kind=DeviceKind.GPU),
        PoolFactory.create(name="L40S GPUs", slug="l40s", kind=DeviceKind.GPU),
        PoolFactory.create(name="CXL", slug="cxl", kind=DeviceKind.CXL_MEMORY),
    ]
    now = timezone.now().replace(second=0, microsecond=0)
    minutes = [m for m in range(120, 0, -1) if not 60 <= m < 65]
    rows = []
    for index, pool in enumerate(pools):
        for m in minutes:
            if index == 1 and m == 30:
                continue
            figures = {name: rng.choice(AWKWARD) * rng.randint(1, 64) for name in FIGURES}
            rows.append(
                PoolSample(
                    pool=pool,
                    resolution=Resolution.MINUTE,
                    bucket_start=now - timedelta(minutes=m),
                    kind=pool.kind,
                    unit="GiB" if pool.kind == DeviceKind.CXL_MEMORY else "devices",
                    **figures,
                )
            )
    PoolSample.objects.bulk_create(rows)
    TenantSample.objects.bulk_create(
        TenantSample(
            tenant=tenant,
            resolution=Resolution.MINUTE,
            bucket_start=now - timedelta(minutes=m),
            compositions=rng.choice(AWKWARD) * rng.randint(0, 3),
        )
        for tenant in (acme, globex)
        for m in minutes
    )
    data_centre_rows()
    return {"pools": pools, "now": now}


def expected_series(rows: Any) -> dict[str, dict[str, float]]:
    """Per time, each figure of the rows as the answers showed them: rounded to 3 decimals,
    utilisation to 2."""
    found: dict[str, dict[str, float]] = {}
    for row in rows:
        figures = {name: round(getattr(row, name), 3) for name in FIGURES}
        capacity, allocated = row.capacity, row.allocated
        figures["utilisation_percent"] = round(100.0 * allocated / capacity, 2) if capacity else 0.0
        found[stamp(row.bucket_start)] = figures
    return found


def answered(body: dict[str, Any], series: dict[str, Any]) -> dict[str, dict[str, float]]:
    """A series of the answer back as time: figures, checking it is null where it has no
    sample."""
    found = {}
    for i, at in enumerate(body["at"]):
        values = {name: column[i] for name, column in series.items() if isinstance(column, list)}
        if values["capacity"] is None:
            assert set(values.values()) == {None}, (at, values)
            continue
        found[at] = values
    return found


def test_every_pools_figures_are_its_rows_at_their_times(
    api_as: Any, admin_user: Any, history: dict[str, Any]
) -> None:
    for pool in history["pools"]:
        body = api_as(admin_user).get(API, {"pool": pool.slug}).json()
        (series,) = body["series"]
        rows = PoolSample.objects.filter(pool=pool, resolution=Resolution.MINUTE)
        assert answered(body, series) == expected_series(rows.order_by("bucket_start"))
    # One pool lacks a minute its tenants have: null there, not a neighbour's figure.
    body = api_as(admin_user).get(API, {"pool": "l40s"}).json()
    at = stamp(history["now"] - timedelta(minutes=30))
    assert body["series"][0]["allocated"][body["at"].index(at)] is None


def test_the_data_centre_and_the_tenants_are_their_rows(
    api_as: Any, admin_user: Any, history: dict[str, Any], acme: Any, globex: Any
) -> None:
    body = api_as(admin_user).get(API).json()

    assert [(s["kind"], s["unit"]) for s in body["series"]] == [
        ("cxl_memory", "GiB"),
        ("gpu", "devices"),
    ]
    for series in body["series"]:
        rows = KindSample.objects.filter(kind=series["kind"]).order_by("bucket_start")
        assert answered(body, series) == expected_series(rows)
    assert body["at"] == sorted(body["at"]) and len(body["at"]) == 115
    for answer, tenant in zip(body["tenants"], (acme, globex), strict=True):
        rows = TenantSample.objects.filter(tenant=tenant).order_by("bucket_start")
        assert answer["tenant"] == tenant.slug
        assert answer["compositions"] == [round(r.compositions, 3) for r in rows]


def test_a_member_gets_the_same_figures_without_stranded_nor_other_tenants(
    api_as: Any, admin_user: Any, alice: Any, history: dict[str, Any], acme: Any
) -> None:
    operator = api_as(admin_user).get(API).json()
    member = api_as(alice).get(API).json()

    for theirs, ours in zip(operator["series"], member["series"], strict=True):
        assert ours == {name: value for name, value in theirs.items() if name != "stranded"}
    assert [t["tenant"] for t in member["tenants"]] == ["acme"]
    assert member["tenants"][0] == operator["tenants"][0]
    assert member["at"] == operator["at"]


def test_the_charts_hold_the_same_numbers_and_break_at_the_gap(
    client_as: Any, admin_user: Any, history: dict[str, Any]
) -> None:
    api = client_as(admin_user).get(API, {"pool": "h100"}).json()
    body = client_as(admin_user).get(PAGE, {"pool": "h100"}).content.decode()
    start = body.index('<script id="utilisation-data" type="application/json">')
    chart = json.loads(body[start:].split(">", 1)[1].split("</script>", 1)[0])

    (series,) = chart["series"]
    gap = [i for i, v in enumerate(series["allocated"]) if v is None]
    assert len(gap) == 1 and len(chart["x"]) == len(api["at"]) + 1
    drawn = [v for v in series["allocated"] if v is not None]
    assert drawn == api["series"][0]["allocated"]
    assert [v for v in series["utilisation"] if v is not None] == (
        api["series"][0]["utilisation_percent"]
    )
    assert [t["name"] for t in chart["tenants"]] == ["Acme", "Globex"]


def test_the_csv_holds_every_rows_figures(
    client_as: Any, admin_user: Any, history: dict[str, Any]
) -> None:
    response = client_as(admin_user).get(PAGE, {"pool": "cxl", "export": "csv"})
    text = b"".join(response.streaming_content).decode()
    found = {(r["at"], r["measure"]): r["value"] for r in csv.DictReader(io.StringIO(text))}

    pool = history["pools"][2]
    rows = PoolSample.objects.filter(pool=pool).order_by("bucket_start")
    for at, figures in expected_series(rows).items():
        for name, value in figures.items():
            assert found.pop((at, name)) == str(value)
    assert {measure for _, measure in found} == {"compositions"}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the joined columns are PostgreSQL's")
def test_joined_and_transposed_columns_are_the_same(
    history: dict[str, Any], columns_read: str
) -> None:
    for rows, keys, figures in [
        (KindSample.objects.all(), ("kind", "unit"), FIGURES),
        (PoolSample.objects.filter(pool=history["pools"][1]), ("kind", "unit"), FIGURES),
        (TenantSample.objects.all(), ("tenant_id",), ("compositions",)),
    ]:
        joined = joined_columns(rows, keys, figures)
        transposed = transposed_columns(rows, keys, figures)
        assert joined == transposed
