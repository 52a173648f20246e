"""GET /api/v1/utilisation/: the page's series as JSON, scoped per caller, and 400s naming
the parameter at fault."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from fabric.choices import DeviceKind
from tests.factories.fabric import PoolFactory
from tests.support.utilisation import data_centre_rows, pool_row, tenant_row

pytestmark = pytest.mark.django_db

URL = reverse("api:utilisation")
FIGURES = (
    "capacity",
    "allocated",
    "allocated_peak",
    "free",
    "unavailable",
    "utilisation_percent",
    "stranded",
)


@pytest.fixture
def history(acme: Any, globex: Any) -> Any:
    """Two minutes of an H100 pool with some stranded, and both tenants' compositions."""
    pool = PoolFactory.create(name="H100 GPUs", slug="h100", kind=DeviceKind.GPU)
    now = timezone.now().replace(second=0, microsecond=0)
    for minutes, allocated in [(2, 2), (1, 4)]:
        at = now - timedelta(minutes=minutes)
        pool_row(pool, at, allocated=allocated, stranded=1)
        tenant_row(acme, at, allocated / 2)
        tenant_row(globex, at, 1)
    data_centre_rows()
    return pool


def test_an_operator_gets_the_pools_figures_stranded_included_and_every_tenant(
    api_as: Any, admin_user: Any, history: Any
) -> None:
    body = api_as(admin_user).get(URL, {"pool": "h100"}).json()

    assert (body["period"], body["resolution"]) == ("day", "minute")
    (series,) = body["series"]
    assert (series["pool"], series["label"], series["unit"]) == ("h100", "H100 GPUs", "devices")
    assert len(body["at"]) == 2 and body["at"][0].endswith("Z") and "at" not in series
    assert {name: series[name] for name in FIGURES} == {
        "capacity": [8, 8],
        "allocated": [2, 4],
        "allocated_peak": [2, 4],
        "free": [6, 4],
        "unavailable": [0, 0],
        "utilisation_percent": [25, 50],
        "stranded": [1, 1],
    }
    acme = body["tenants"][0]
    assert acme["compositions"] == [1, 2] and "at" not in acme
    assert [t["tenant"] for t in body["tenants"]] == ["acme", "globex"]


@pytest.mark.parametrize(
    ("persona_name", "tenants"), [("alice", ["acme"]), ("bob", ["acme"]), ("carol", ["globex"])]
)
def test_a_member_gets_no_stranded_figure_and_only_its_own_tenants_compositions(
    api_as: Any, persona: Any, history: Any, persona_name: str, tenants: list[str]
) -> None:
    response = api_as(persona(persona_name)).get(URL, {"pool": "h100", "period": "day"})

    assert response.status_code == 200
    body = response.json()
    assert all("stranded" not in s for s in body["series"])
    assert [t["tenant"] for t in body["tenants"]] == tenants
    assert "stranded" not in response.content.decode()


def test_without_a_pool_the_data_centre_is_summed_per_kind(
    api_as: Any, admin_user: Any, history: Any
) -> None:
    other = PoolFactory.create(name="L40S GPUs", slug="l40s", kind=DeviceKind.GPU)
    pool_row(other, history.utilisation_samples.last().bucket_start, capacity=2, allocated=1)
    data_centre_rows()

    (series,) = api_as(admin_user).get(URL).json()["series"]

    assert (series["pool"], series["kind"], series["label"]) == (None, "gpu", "All GPUs")
    assert series["capacity"][-1] == 10


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"period": "decade"}, "period"),
        ({"pool": "no-such-pool"}, "pool"),
        ({"pool": "x" * 101}, "pool"),
    ],
)
def test_bad_parameters_are_a_400_naming_them(
    api_as: Any, alice: Any, history: Any, params: dict[str, str], field: str
) -> None:
    response = api_as(alice).get(URL, params)
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_anonymous_callers_are_refused(api: Any, history: Any) -> None:
    assert api.get(URL).status_code in (401, 403)


def test_the_schema_describes_it(api_as: Any, admin_user: Any) -> None:
    schema = api_as(admin_user).get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/utilisation/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"pool", "period"}
    # One time axis for the answer; the series' and tenants' columns are aligned on it.
    components = schema["components"]["schemas"]
    assert "at" in components["Utilisation"]["properties"]
    assert "at" not in components["UtilisationSeries"]["properties"]
    assert "at" not in components["UtilisationTenantSeries"]["properties"]
    column = components["UtilisationSeries"]["properties"]["allocated"]
    assert column["items"]["nullable"] is True


def test_the_answer_takes_the_same_queries_whatever_the_pools_and_samples(
    api_as: Any, admin_user: Any, alice: Any, history: Any
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(user: Any) -> int:
        client = api_as(user)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(URL).status_code == 200
        return len(captured.captured_queries)

    few = (queries(admin_user), queries(alice))
    at = history.utilisation_samples.last().bucket_start
    for i in range(5):
        pool = PoolFactory.create(name=f"More {i}", slug=f"more-{i}", kind=DeviceKind.NVME)
        for minutes in range(10):
            pool_row(pool, at - timedelta(minutes=minutes))
    data_centre_rows()
    assert (queries(admin_user), queries(alice)) == few
