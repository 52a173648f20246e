"""The calendar page: the timeline's data for the caller's windows (operators: a row per
pool; members: a row per booking), the load heatmap, free windows, conflicts; an empty state
that says why; bad parameters beside their field with a 400; other tenants 404."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fabric.choices import DeviceState
from tests.factories.fabric import SmallFabric
from tests.support.calendar import DAY, booked_world

pytestmark = pytest.mark.django_db

URL = "/calendar/"
PERIOD = {"start": DAY.date().isoformat(), "end": "2031-03-11"}


def timeline(response: Any) -> dict[str, Any]:
    found = re.search(
        r'<script id="calendar-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert found, "no timeline data on the page"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_the_operator_gets_a_row_per_pool(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any, client_as: Any
) -> None:
    world = booked_world(small, acme, globex)
    response = client_as(admin_user).get(URL, PERIOD)
    assert response.status_code == 200
    data = timeline(response)
    assert {g["id"] for g in data["groups"]} >= {"pool-h100", "pool-cxl-memory"}
    assert sorted((i["group"], i["content"]) for i in data["items"]) == [
        ("pool-h100", "acme-night"),
        ("pool-h100", "globex-run"),
    ]
    item = next(i for i in data["items"] if i["content"] == "acme-night")
    assert item["url"] == f"/bookings/{world.acme_booking.pk}/"
    assert "calendar-booked" in item["className"]
    page = response.content.decode()
    assert 'id="calendar-load"' in page and 'data-pool="h100"' in page
    # Free windows (at least one GPU): before the full hours, and from 04:00 to the end.
    assert "2031-03-10 00:00\u20132031-03-10 02:00 (2 h, at least 4 devices)" in page
    assert "2031-03-10 04:00\u20132031-03-11 00:00 (20 h, at least 3 devices)" in page
    assert 'href="/calendar/"' in page  # in the navbar


def test_rows_per_tenant_or_per_booking_on_demand(
    small: SmallFabric, acme: Any, globex: Any, admin_user: Any, alice: Any, client_as: Any
) -> None:
    booked_world(small, acme, globex)
    data = timeline(client_as(admin_user).get(URL, {**PERIOD, "group": "tenant"}))
    assert data["groups"] == [
        {"id": "tenant-acme", "content": "Acme"},
        {"id": "tenant-globex", "content": "Globex"},
    ]
    assert sorted(i["group"] for i in data["items"]) == ["tenant-acme", "tenant-globex"]
    data = timeline(client_as(alice).get(URL, {**PERIOD, "group": "pool"}))
    assert [i["group"] for i in data["items"]] == ["pool-h100"]
    response = client_as(alice).get(URL, {**PERIOD, "group": "device"})
    assert response.status_code == 400 and "is-invalid" in response.content.decode()


def test_members_get_a_row_per_booking_of_their_tenants_only(
    small: SmallFabric, acme: Any, globex: Any, alice: Any, carol: Any, client_as: Any
) -> None:
    world = booked_world(small, acme, globex)
    data = timeline(client_as(alice).get(URL, PERIOD))
    assert data["groups"] == [{"id": f"booking-{world.acme_booking.pk}", "content": "acme-night"}]
    assert [i["content"] for i in data["items"]] == ["acme-night"]
    page = client_as(carol).get(URL, PERIOD).content.decode()
    assert "acme-night" not in page and "globex-run" in page
    assert "gpu-a-" not in page


def test_a_conflict_is_coloured_and_listed(
    small: SmallFabric, acme: Any, globex: Any, carol: Any, client_as: Any
) -> None:
    booked_world(small, acme, globex)
    small.gpus[3].state = DeviceState.FAILED
    small.gpus[3].save(update_fields=["state"])
    response = client_as(carol).get(URL, PERIOD)
    (item,) = timeline(response)["items"]
    assert "calendar-conflict" in item["className"]
    page = response.content.decode()
    assert 'id="calendar-conflicts"' in page and "1 held device failed" in page
    assert "gpu-a-3" not in page


def test_the_empty_state_says_why(small: SmallFabric, alice: Any, client_as: Any) -> None:
    page = client_as(alice).get(URL, PERIOD).content.decode()
    assert 'id="calendar-empty"' in page
    assert "No booked windows between 2031-03-10 and 2031-03-11 for your tenants" in page
    assert "calendar-data" not in page


def test_someone_of_no_tenant_is_told_so(small: SmallFabric, client_as: Any) -> None:
    from tests.factories.composer import UserFactory

    page = client_as(UserFactory(username="dave")).get(URL).content.decode()
    assert "You belong to no tenant" in page


def test_bad_parameters_are_shown_beside_their_field(alice: Any, client_as: Any) -> None:
    response = client_as(alice).get(URL, {"start": "2031-03-10", "end": "2031-09-01"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "A calendar spans at most 56 days" in page and "is-invalid" in page


def test_another_tenants_filter_is_404(
    small: SmallFabric, acme: Any, carol: Any, client_as: Any
) -> None:
    assert client_as(carol).get(URL, {"tenant": "acme"}).status_code == 404


def test_signed_out_visitors_are_sent_to_log_in(client: Any) -> None:
    response = client.get(URL)
    assert response.status_code == 302 and "login" in response["Location"]
