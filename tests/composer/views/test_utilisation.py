"""The utilisation page: charts' data and a summary for every persona, stranded capacity and
other tenants for operators only, the period in the URL, an empty state that says why, field
errors for bad choices, and the CSV of what is shown."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from fabric.choices import DeviceKind
from tests.factories.fabric import PoolFactory
from tests.support.personas import PERSONAS
from tests.support.utilisation import data_centre_rows, pool_row, tenant_row

pytestmark = pytest.mark.django_db

URL = reverse("composer:utilisation")


@pytest.fixture
def history(acme: Any, globex: Any) -> Any:
    pool = PoolFactory.create(name="H100 GPUs", slug="h100", kind=DeviceKind.GPU)
    now = timezone.now().replace(second=0, microsecond=0)
    for minutes, allocated in [(3, 2), (2, 6)]:
        at = now - timedelta(minutes=minutes)
        pool_row(pool, at, allocated=allocated, stranded=1.5)
        tenant_row(acme, at, 2)
        tenant_row(globex, at, 1)
    data_centre_rows()
    return pool


def chart_of(response: Any) -> dict[str, Any]:
    body = response.content.decode()
    start = body.index('<script id="utilisation-data" type="application/json">')
    text = body[start:].split(">", 1)[1].split("</script>", 1)[0]
    return dict(json.loads(text))


@pytest.mark.parametrize("who", PERSONAS)
def test_every_persona_sees_the_pools_history(
    who: str, history: Any, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(URL, {"pool": "h100"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "uplot-1.6.32.iife.min.js" in body and 'data-chart="utilisation"' in body
    (series,) = chart_of(response)["series"]
    assert series["allocated"] == [2, 6] and series["utilisation"] == [25, 75]
    operator = who == "admin_user"
    assert ("stranded" in series) is operator
    assert ("Most stranded" in body) is operator


def test_operators_see_every_tenant_and_members_only_their_own(
    history: Any, admin_user: Any, alice: Any, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    def tenants(user: Any) -> list[str]:
        chart = chart_of(client_as(user).get(URL))
        return [t["name"] for t in chart["tenants"]]

    assert tenants(admin_user) == ["Acme", "Globex"]
    assert tenants(alice) == ["Acme"]
    body = client_as(carol).get(URL).content.decode()
    assert "Acme" not in body
    assert tenants(carol) == ["Globex"]


def test_the_period_is_in_the_url_and_picks_the_resolution(
    history: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(URL, {"pool": "h100", "period": "week"})
    assert response.context["data"].resolution == "hour"
    body = response.content.decode()
    assert 'class="nav-link py-1 active" href="?pool=h100&amp;period=week"' in body
    assert 'href="?pool=h100&amp;period=month"' in body
    # No hourly rollups were written: the empty state says why.
    assert "No samples yet" in body and "within a minute of the worker starting" in body


def test_with_no_samples_the_page_says_why_and_draws_nothing(
    db: None, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(URL)
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="utilisation-empty"' in body
    assert "the first is taken within a minute of the worker starting" in body
    assert "utilisation-data" not in body and "Export" not in body


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"period": "decade"}, "period", "Choose day, week, month or year."),
        ({"pool": "nowhere"}, "pool", "No pool has this slug."),
        ({"export": "xls"}, "export", "Export as csv."),
    ],
)
def test_bad_choices_are_shown_next_to_their_field(
    history: Any,
    alice: Any,
    client_as: Callable[[Any], Client],
    params: dict[str, str],
    field: str,
    message: str,
) -> None:
    response = client_as(alice).get(URL, params)
    assert response.status_code == 400
    assert response.context["form"].errors[field] == [message]
    assert message in response.content.decode()


def test_anonymous_visitors_are_sent_to_log_in(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_csv_holds_the_series_shown_and_a_members_holds_no_stranded(
    history: Any, admin_user: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    def rows(user: Any) -> list[dict[str, str]]:
        response = client_as(user).get(URL, {"pool": "h100", "export": "csv"})
        assert response["Content-Type"].startswith("text/csv")
        assert 'filename="utilisation-h100-day.csv"' in response["Content-Disposition"]
        text = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
        return list(csv.DictReader(io.StringIO(text)))

    operator = rows(admin_user)
    allocated = [r["value"] for r in operator if r["measure"] == "allocated"]
    assert allocated == ["2.0", "6.0"]
    assert {r["measure"] for r in operator} >= {"stranded", "utilisation_percent", "compositions"}
    assert {r["series"] for r in operator if r["measure"] == "compositions"} == {"Acme", "Globex"}

    member = rows(alice)
    assert "stranded" not in {r["measure"] for r in member}
    assert {r["series"] for r in member if r["measure"] == "compositions"} == {"Acme"}


def test_the_navbar_links_the_page(
    history: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(alice).get(URL).content.decode()
    # Under the navbar's Pools menu, which is marked as the section it holds.
    assert f'class="dropdown-item active" href="{URL}"' in body
    assert 'id="capacity-menu"' in body


def test_a_gap_in_the_samples_breaks_the_charts_line(
    db: None, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    pool = PoolFactory.create(name="H100 GPUs", slug="h100", kind=DeviceKind.GPU)
    now = timezone.now().replace(second=0, microsecond=0)
    for minutes in (12, 11, 3):  # no worker ran between the second and the third
        pool_row(pool, now - timedelta(minutes=minutes), allocated=1)

    chart = chart_of(client_as(admin_user).get(URL, {"pool": "h100"}))
    (series,) = chart["series"]

    assert series["allocated"] == [1, 1, None, 1]
    assert chart["x"][2] - chart["x"][1] == 60 and len(chart["x"]) == 4
