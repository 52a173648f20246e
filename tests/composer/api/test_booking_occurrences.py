"""One occurrence over the API: extend and shorten (field-named errors, audited), each
tenant-scoped as the booking is (carol gets 404, read-only bob 403)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.models import Booking, BookingHold
from composer.services.bookings import booking_request
from fabric.models import ChangeRecord, FabricManager
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/bookings/"
FOUR_GPUS = {"items": [{"kind": "gpu", "count": 4}]}


def at(hour: int) -> datetime:
    day = (timezone.now() + timedelta(days=1)).date()
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@pytest.fixture
def booking(synced: FabricManager, acme: Any, alice: Any) -> Booking:
    return booking_request(
        tenant=acme, requested_by=alice, name="day", spec=FOUR_GPUS, starts_at=at(8), ends_at=at(12)
    )


def url(booking: Booking, what: str) -> str:
    return f"{URL}{booking.pk}/occurrences/{booking.occurrences.get().pk}/{what}/"


def test_alice_extends_then_shortens_an_occurrence(
    booking: Booking, alice: Any, api_as: Any
) -> None:
    client = api_as(alice)
    response = client.post(url(booking, "extend"), {"ends_at": at(14).isoformat()}, format="json")
    assert response.status_code == 200, response.content
    (occurrence,) = response.json()["occurrences"]
    assert datetime.fromisoformat(occurrence["ends_at"]) == at(14)
    assert occurrence["reason"] == "" and occurrence["composition"] is None

    response = client.post(url(booking, "shorten"), {"ends_at": at(10).isoformat()}, format="json")
    assert response.status_code == 200, response.content
    assert set(BookingHold.objects.values_list("ends_at", flat=True)) == {at(10)}
    messages = list(
        ChangeRecord.objects.filter(target_type="booking", actor=alice)
        .order_by("id")
        .values_list("message", flat=True)
    )
    assert messages[-2].startswith("Extended") and messages[-1].startswith("Shortened")


def test_bad_ends_name_the_field(booking: Booking, alice: Any, api_as: Any) -> None:
    client = api_as(alice)
    assert_error(
        client.post(url(booking, "extend"), {}, format="json"), 400, "invalid", field="ends_at"
    )
    assert_error(
        client.post(url(booking, "extend"), {"ends_at": "tomorrow"}, format="json"),
        400,
        "invalid",
        field="ends_at",
    )
    assert_error(
        client.post(url(booking, "shorten"), {"ends_at": at(13).isoformat()}, format="json"),
        400,
        "invalid_spec",
        field="ends_at",
    )
    assert_error(
        client.post(url(booking, "extend"), {"ends_at": at(7).isoformat()}, format="json"),
        400,
        "invalid_spec",
        field="ends_at",
    )


def test_an_extension_into_another_booking_is_refused_on_ends_at(
    booking: Booking, globex: Any, alice: Any, api_as: Any
) -> None:
    booking_request(
        tenant=globex,
        requested_by=None,
        name="next",
        spec={"items": [{"kind": "gpu", "count": 1}]},
        starts_at=at(13),
        ends_at=at(14),
    )
    response = api_as(alice).post(
        url(booking, "extend"), {"ends_at": at(15).isoformat()}, format="json"
    )
    # A refused booking's 409 carries its nearest window too (none for an extension).
    assert response.status_code == 409, response.content
    body = response.json()
    assert (body["code"], body["field"], body["nearest"]) == ("booking_refused", "ends_at", None)
    assert "extra time" in body["detail"] and body["errors"]["ends_at"]


def test_carol_gets_404_and_bob_403(booking: Booking, bob: Any, carol: Any, api_as: Any) -> None:
    body = {"ends_at": at(14).isoformat()}
    assert api_as(carol).post(url(booking, "extend"), body, format="json").status_code == 404
    assert api_as(bob).post(url(booking, "extend"), body, format="json").status_code == 403
    assert api_as(bob).post(url(booking, "cancel")).status_code == 403
