"""Bookings over the API: alice books and cancels, bob (read-only) is refused writes,
carol (Globex) never sees Acme's bookings; refusals name the occurrence and the nearest
window; the list costs a fixed number of queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from composer.models import Booking, BookingHold
from composer.services.bookings import booking_request
from fabric.models import FabricManager
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/bookings/"
TWO_GPUS = {"items": [{"kind": "gpu", "count": 2}]}


def at(hour: int) -> datetime:
    day = (timezone.now() + timedelta(days=1)).date()
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@pytest.fixture
def acme_booking(synced: FabricManager, acme: Any, alice: Any) -> Booking:
    return booking_request(
        tenant=acme,
        requested_by=alice,
        name="nightly",
        spec=TWO_GPUS,
        starts_at=at(20),
        ends_at=at(23),
        recurrence="daily",
        until=(at(20) + timedelta(days=2)).date(),
    )


def test_alice_books_a_weekday_window_in_her_time_zone(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    day = (timezone.now() + timedelta(days=1)).date()
    response = api_as(alice).post(
        URL,
        {
            "name": "training",
            "spec": TWO_GPUS,
            "starts_at": f"{day}T08:00:00",
            "ends_at": f"{day}T20:00:00",
            "time_zone": "Europe/Berlin",
            "recurrence": "weekdays",
            "until": str(day + timedelta(days=13)),
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert response["Location"].endswith(f"/bookings/{body['id']}/")
    assert body["state"] == "booked" and body["time_zone"] == "Europe/Berlin"
    assert len(body["occurrences"]) == 10  # two weeks of weekdays
    first = body["occurrences"][0]
    assert first["plan"]["ok"] is True and len(first["plan"]["devices"]) == 2
    assert "device:" not in response.content.decode()  # no snapshot ids


def test_a_refusal_names_the_occurrence_and_offers_the_nearest_window(
    acme_booking: Booking, globex: Any, carol: Any, api_as: Any
) -> None:
    response = api_as(carol).post(
        URL,
        {
            "name": "clash",
            "spec": {"items": [{"kind": "gpu", "count": 3}]},
            "starts_at": at(21).isoformat(),
            "ends_at": at(22).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "booking_refused" and body["field"] == "starts_at"
    assert "does not fit" in body["detail"]
    end = at(23) + timedelta(hours=1)
    assert body["nearest"] == {"starts_at": at(23).isoformat(), "ends_at": end.isoformat()}


def test_bad_input_names_its_field(synced: FabricManager, alice: Any, api_as: Any) -> None:
    base = {"name": "b", "spec": TWO_GPUS, "starts_at": at(8).isoformat()}
    client = api_as(alice)
    assert_error(client.post(URL, {**base}, format="json"), 400, "invalid_spec", field="ends_at")
    response = client.post(
        URL, {**base, "ends_at": at(9).isoformat(), "recurrence": "daily"}, format="json"
    )
    assert_error(response, 400, "invalid_spec", field="until")
    response = client.post(
        URL, {**base, "ends_at": at(9).isoformat(), "time_zone": "Mars/Base"}, format="json"
    )
    assert_error(response, 400, "invalid_spec", field="time_zone")
    response = client.post(
        URL,
        {**base, "ends_at": at(9).isoformat(), "spec": {"items": [{"kind": "gpu", "count": 0}]}},
        format="json",
    )
    assert response.status_code == 400 and response.json()["field"].startswith("spec.")
    # Near the calendar's end, or past how far ahead one may book: named, never a 500.
    far = {"name": "b", "spec": TWO_GPUS, "starts_at": "9999-12-30T00:00:00Z"}
    response = client.post(URL, {**far, "ends_at": "9999-12-30T08:00:00Z"}, format="json")
    assert_error(response, 400, "invalid_spec", field="starts_at")
    daily = {**base, "ends_at": at(9).isoformat(), "recurrence": "daily", "until": "9999-12-31"}
    assert_error(client.post(URL, daily, format="json"), 400, "invalid_spec", field="until")
    assert not Booking.objects.exists()


def test_carol_gets_404_for_acme_s_booking_and_sees_none_listed(
    acme_booking: Booking, carol: Any, api_as: Any
) -> None:
    client = api_as(carol)
    assert client.get(f"{URL}{acme_booking.pk}/").status_code == 404
    assert client.post(f"{URL}{acme_booking.pk}/cancel/").status_code == 404
    assert client.get(URL).json()["results"] == []


def test_bob_reads_but_may_not_book_or_cancel(acme_booking: Booking, bob: Any, api_as: Any) -> None:
    client = api_as(bob)
    assert client.get(f"{URL}{acme_booking.pk}/").status_code == 200
    response = client.post(
        URL,
        {
            "name": "x",
            "spec": TWO_GPUS,
            "starts_at": at(8).isoformat(),
            "ends_at": at(9).isoformat(),
        },
        format="json",
    )
    assert response.status_code == 403
    assert client.post(f"{URL}{acme_booking.pk}/cancel/").status_code == 403
    acme_booking.refresh_from_db()
    assert acme_booking.state == "booked"


def test_alice_cancels_one_occurrence_then_the_series(
    acme_booking: Booking, alice: Any, api_as: Any
) -> None:
    client = api_as(alice)
    second = acme_booking.occurrences.all()[1]
    response = client.post(f"{URL}{acme_booking.pk}/occurrences/{second.pk}/cancel/")
    assert response.status_code == 200, response.content
    states = [o["state"] for o in response.json()["occurrences"]]
    assert states == ["booked", "cancelled", "booked"]
    assert_error(
        client.post(f"{URL}{acme_booking.pk}/occurrences/{second.pk}/cancel/"),
        409,
        "invalid_transition",
        field="state",
    )
    assert client.post(f"{URL}{acme_booking.pk}/occurrences/999999/cancel/").status_code == 404

    response = client.post(f"{URL}{acme_booking.pk}/cancel/")
    assert response.status_code == 200 and response.json()["state"] == "cancelled"
    assert not BookingHold.objects.exists()


def test_admin_sees_every_booking_and_the_list_costs_fixed_queries(
    acme_booking: Booking, admin_user: Any, api_as: Any, django_assert_max_num_queries: Any
) -> None:
    client = api_as(admin_user)
    with django_assert_max_num_queries(6):
        body = client.get(URL).json()
    assert [b["id"] for b in body["results"]] == [acme_booking.pk]
    with django_assert_max_num_queries(8):
        detail = client.get(f"{URL}{acme_booking.pk}/").json()
    assert len(detail["occurrences"]) == 3


def test_only_an_operator_overrides_booked_gpus_and_says_why(
    synced: FabricManager, acme: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    booking_request(
        tenant=acme,
        requested_by=alice,
        name="all",
        spec={"items": [{"kind": "gpu", "count": 4}]},
        starts_at=at(8),
        ends_at=at(9),
    )
    one = {"items": [{"kind": "gpu", "count": 1}]}
    tenant_try = api_as(alice).post(
        "/api/v1/compositions/",
        {"name": "now", "spec": one, "override_bookings": "mine anyway"},
        format="json",
    )
    assert_error(tenant_try, 400, "invalid_spec", field="override_bookings")
    refused = api_as(alice).post(
        "/api/v1/compositions/", {"name": "now", "spec": one}, format="json"
    )
    assert refused.status_code == 422  # every GPU is booked
    operator = api_as(admin_user).post(
        "/api/v1/compositions/",
        {"name": "now2", "tenant": "acme", "spec": one, "override_bookings": "incident 7"},
        format="json",
    )
    assert operator.status_code == 202, operator.content
    reasons = [c["reason"] for c in operator.json()["history"]]
    assert any("incident 7" in r for r in reasons)


def test_a_template_s_schedule_is_checked_and_shown(admin_user: Any, api_as: Any) -> None:
    client = api_as(admin_user)
    bad = client.post(
        "/api/v1/templates/",
        {
            "name": "night",
            "slug": "night",
            "spec": TWO_GPUS,
            "schedule": {"recurrence": "daily", "starts": "22h", "ends": "06:00"},
        },
        format="json",
    )
    assert_error(bad, 400, "invalid", field="schedule")
    good = client.post(
        "/api/v1/templates/",
        {
            "name": "night",
            "slug": "night",
            "spec": TWO_GPUS,
            "schedule": {"recurrence": "daily", "starts": "22:00", "ends": "06:00"},
        },
        format="json",
    )
    assert good.status_code == 201, good.content
    assert good.json()["schedule"] == {
        "recurrence": "daily",
        "starts": "22:00",
        "ends": "06:00",
        "time_zone": "UTC",
    }


def test_alice_reads_her_booking_s_audit_and_carol_does_not(
    acme_booking: Booking, alice: Any, carol: Any, api_as: Any
) -> None:
    api_as(alice).post(f"{URL}{acme_booking.pk}/cancel/")
    mine = api_as(alice).get("/api/v1/audit/", {"kind": "booking"})
    assert mine.status_code == 200, mine.content
    entries = mine.json()["results"]
    assert len(entries) == 2 and {e["kind"] for e in entries} == {"booking"}
    theirs = api_as(carol).get("/api/v1/audit/", {"kind": "booking"})
    assert theirs.status_code == 200 and theirs.json()["results"] == []


def test_a_time_without_an_offset_is_read_in_the_booking_s_time_zone(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    """08:00 in Paris in winter is 07:00 UTC, in summer 06:00 UTC: never read as UTC."""
    day = (timezone.now() + timedelta(days=40)).date()
    local = f"{day.isoformat()}T08:00:00"
    response = api_as(alice).post(
        URL,
        {
            "name": "paris",
            "spec": TWO_GPUS,
            "starts_at": local,
            "ends_at": f"{day.isoformat()}T10:00:00",
            "time_zone": "Europe/Paris",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    booking = Booking.objects.get(name="paris")
    paris = datetime.fromisoformat(local).replace(tzinfo=ZoneInfo("Europe/Paris"))
    assert booking.starts_at == paris.astimezone(UTC)
    assert booking.starts_at.astimezone(UTC).hour in (6, 7)
