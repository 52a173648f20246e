"""GET /api/v1/calendar/: the operator sees both tenants' windows, alice Acme's and carol
Globex's, everyone each pool's aggregate load; a tenant filter outside the caller's tenants
is 404; a bad parameter is a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories.fabric import SmallFabric
from tests.support.api import assert_error
from tests.support.calendar import DAY, at, book_window, booked_world

pytestmark = pytest.mark.django_db

URL = "/api/v1/calendar/"
PERIOD = {"start": DAY.date().isoformat(), "end": "2031-03-11"}


@pytest.fixture
def world(small: SmallFabric, acme: Any, globex: Any) -> Any:
    return booked_world(small, acme, globex)


def names(body: dict[str, Any]) -> list[str]:
    return [o["booking_name"] for o in body["occurrences"]]


def test_the_operator_sees_every_tenants_windows_and_the_load(
    world: Any, admin_user: Any, api_as: Any
) -> None:
    response = api_as(admin_user).get(URL, PERIOD)
    assert response.status_code == 200, response.content
    body = response.json()
    assert names(body) == ["acme-night", "globex-run"]
    assert body["start"] == "2031-03-10T00:00:00Z" and body["end"] == "2031-03-11T00:00:00Z"
    h100 = next(p for p in body["pools"] if p["slug"] == "h100")
    assert h100["booked"][:7] == [0, 3, 7, 7, 4, 4, 0]
    assert h100["free"][:7] == [7, 4, 0, 0, 3, 3, 7]
    assert h100["days"] == [{"day": "2031-03-10", "peak_booked": 7, "least_free": 0}]

    only = api_as(admin_user).get(URL, {**PERIOD, "tenant": "globex"}).json()
    assert names(only) == ["globex-run"]


def test_alice_sees_acme_only_and_carol_globex_only(
    world: Any, alice: Any, carol: Any, api_as: Any
) -> None:
    body = api_as(alice).get(URL, PERIOD).json()
    assert names(body) == ["acme-night"]
    assert body["occurrences"][0]["tenant"] == "acme"
    assert body["occurrences"][0]["pools"] == {"h100": 3}
    text = str(body)
    assert "globex" not in text and "gpu-" not in text and "sw-" not in text

    body = api_as(carol).get(URL, PERIOD).json()
    assert names(body) == ["globex-run"]
    assert "acme" not in str(body)


def test_a_tenant_filter_outside_the_callers_tenants_is_404(
    world: Any, carol: Any, admin_user: Any, api_as: Any
) -> None:
    assert_error(api_as(carol).get(URL, {**PERIOD, "tenant": "acme"}), 404, "not_found")
    assert_error(api_as(carol).get(URL, {**PERIOD, "tenant": "nobody"}), 404, "not_found")
    assert_error(api_as(admin_user).get(URL, {**PERIOD, "tenant": "nobody"}), 404, "not_found")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "yesterday"}, "start"),
        ({"start": "2031-03-10", "end": "2031-03-09"}, "end"),
        ({"start": "2031-03-10", "end": "2031-06-10"}, "end"),
        ({"pool": "no-such-pool"}, "pool"),
        ({"pool": "bad slug!"}, "pool"),
        ({"min_free": "0"}, "min_free"),
        ({"min_free": "many"}, "min_free"),
        ({"start": "9999-12-31T00:00:00Z"}, "start"),  # near the calendar's end: no overflow
        ({"end": "9999-12-31"}, "end"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(
    world: Any, alice: Any, api_as: Any, params: dict[str, str], field: str
) -> None:
    assert_error(api_as(alice).get(URL, params), 400, "invalid", field=field)


def test_signed_out_callers_are_refused(api: Any) -> None:
    assert api.get(URL).status_code in {401, 403}


def test_the_default_period_is_today_and_two_weeks(
    small: SmallFabric, alice: Any, api_as: Any
) -> None:
    body = api_as(alice).get(URL).json()
    h100 = next(p for p in body["pools"] if p["slug"] == "h100")
    assert len(h100["booked"]) == 15 * 24 and len(h100["days"]) == 15
    assert body["occurrences"] == [] and body["conflicts"] == []


def test_the_answer_costs_a_fixed_number_of_queries(
    small: SmallFabric,
    acme: Any,
    globex: Any,
    admin_user: Any,
    api_as: Any,
    django_assert_max_num_queries: Any,
) -> None:
    booked_world(small, acme, globex)
    client = api_as(admin_user)
    with django_assert_max_num_queries(12) as few:
        client.get(URL, PERIOD)
    for n in range(6):  # six more bookings, each a window of its own
        book_window(acme, f"more-{n}", at(8 + n), at(9 + n), small.gpus[n : n + 1], small.hosts[0])
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(client.get(URL, PERIOD).json()["occurrences"]) == 8
