"""Booking pages: the list, the booking form with its "When", a booking's page with its
occurrences, and cancelling — for every persona."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.models import Booking, BookingHold
from composer.services.bookings import booking_request
from fabric.models import FabricManager

pytestmark = pytest.mark.django_db

HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}


def day() -> str:
    return str((timezone.now() + timedelta(days=1)).date())


def form(**over: str) -> dict[str, str]:
    return {
        "name": "nightly",
        "item_0_kind": "gpu",
        "item_0_count": "2",
        "policy": "none",
        "starts_at": f"{day()}T20:00",
        "ends_at": f"{day()}T23:00",
        "time_zone": "Europe/Berlin",
        "recurrence": "daily",
        "until": day(),
        **over,
    }


@pytest.fixture
def acme_booking(synced: FabricManager, acme: Any, alice: Any) -> Booking:
    start = datetime.fromisoformat(f"{day()}T08:00").replace(tzinfo=UTC)
    return booking_request(
        tenant=acme,
        requested_by=alice,
        name="training",
        spec={"items": [{"kind": "gpu", "count": 4}]},
        starts_at=start,
        ends_at=start + timedelta(hours=12),
    )


def test_alice_books_from_the_form_in_her_time_zone(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    page = client.get(reverse("composer:booking_create"))
    assert page.status_code == 200 and b'id="when-fields"' in page.content

    response = client.post(reverse("composer:booking_create"), form(), **HTMX)

    booking = Booking.objects.get()
    assert response.status_code in (200, 204)
    assert response["HX-Redirect"] == reverse("composer:booking_detail", args=[booking.pk])
    occurrence = booking.occurrences.get()
    # 20:00 in Berlin, whatever the season.
    local = occurrence.starts_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (20, 0)
    detail = client.get(reverse("composer:booking_detail", args=[booking.pk]))
    assert b"nightly" in detail.content and b"gpu-" in detail.content


def test_a_new_booking_s_zone_is_left_to_the_browser_but_a_typed_one_is_kept(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    """The blank form marks the zone field for the page's script (the browser's zone goes
    there; UTC without script); a form sent back with an error keeps what was typed."""
    client = client_as(alice)
    blank = client.get(reverse("composer:booking_create")).content.decode()
    assert 'data-browser-zone="true"' in blank and 'value="UTC"' in blank

    again = client.post(
        reverse("composer:booking_create"), form(ends_at="", time_zone="Asia/Tokyo"), **HTMX
    ).content.decode()
    assert "data-browser-zone" not in again and 'value="Asia/Tokyo"' in again
    assert not Booking.objects.exists()


def test_the_booking_page_shows_the_windows_in_the_booking_time_zone(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    client.post(reverse("composer:booking_create"), form(), **HTMX)
    booking = Booking.objects.get()
    local = booking.starts_at.astimezone(ZoneInfo("Europe/Berlin"))

    page = client.get(reverse("composer:booking_detail", args=[booking.pk])).content.decode()

    # 20:00 to 23:00 as booked in Berlin, not the server's UTC.
    assert f"{local:%a %Y-%m-%d} 20:00\u201323:00 Europe/Berlin" in page
    assert f"{local:%a %Y-%m-%d} 20:00\u201323:00 {local:%Z}" in page


def test_a_refusal_is_shown_beside_the_window_with_the_nearest_that_fits(
    acme_booking: Booking, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).post(
        reverse("composer:booking_create"),
        form(
            starts_at=f"{day()}T10:00", ends_at=f"{day()}T11:00", time_zone="UTC", recurrence="none"
        ),
        **HTMX,
    )
    assert response.status_code == 400
    assert b'id="error-starts_at"' in response.content
    assert b"The nearest that fits starts" in response.content
    assert Booking.objects.count() == 1


def test_bad_input_names_its_field(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    response = client.post(reverse("composer:booking_create"), form(until=""), **HTMX)
    assert response.status_code == 400 and b'id="error-until"' in response.content
    response = client.post(reverse("composer:booking_create"), form(time_zone="Mars/Base"), **HTMX)
    assert b'id="error-time_zone"' in response.content
    response = client.post(reverse("composer:booking_create"), form(starts_at="soon"), **HTMX)
    assert b'id="error-starts_at"' in response.content
    assert not Booking.objects.exists()


def test_bob_sees_acme_s_bookings_but_cannot_book_or_cancel(
    acme_booking: Booking, bob: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(bob)
    assert b"training" in client.get(reverse("composer:booking_list")).content
    assert b'id="read-only-notice"' in client.get(reverse("composer:booking_create")).content
    assert client.post(reverse("composer:booking_create"), form()).status_code == 403
    detail = client.get(reverse("composer:booking_detail", args=[acme_booking.pk]))
    assert detail.status_code == 200 and b'id="booking-cancel"' not in detail.content
    cancel = client.post(reverse("composer:booking_cancel", args=[acme_booking.pk]))
    assert cancel.status_code == 403


def test_carol_sees_none_of_acme_s_bookings(
    acme_booking: Booking, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(carol)
    assert b"training" not in client.get(reverse("composer:booking_list")).content
    assert client.get(reverse("composer:booking_detail", args=[acme_booking.pk])).status_code == 404
    assert (
        client.post(reverse("composer:booking_cancel", args=[acme_booking.pk])).status_code == 404
    )


def test_alice_cancels_an_occurrence_and_admin_sees_every_booking(
    acme_booking: Booking, alice: Any, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    occurrence = acme_booking.occurrences.get()
    client = client_as(alice)
    response = client.post(
        reverse("composer:occurrence_cancel", args=[acme_booking.pk, occurrence.pk])
    )
    assert response.status_code in (200, 302)
    assert not BookingHold.objects.exists()
    admin = client_as(admin_user)
    assert b"training" in admin.get(reverse("composer:booking_list")).content


def test_book_from_a_template_with_a_schedule_leaves_the_window_to_it(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    from composer.models import Template

    template = Template(
        name="nights",
        slug="nights",
        spec={"items": [{"kind": "gpu", "count": 1}]},
        schedule={"recurrence": "daily", "starts": "22:00", "ends": "06:00"},
    )
    template.full_clean()
    template.save()
    client = client_as(alice)
    assert b"book-template" in client.get(reverse("composer:composition_templates")).content
    page = client.get(reverse("composer:booking_create") + "?template=nights")
    assert page.status_code == 200
    assert f'<option value="{template.pk}" selected>'.encode() in page.content

    until = str((timezone.now() + timedelta(days=2)).date())
    response = client.post(
        reverse("composer:booking_create"),
        {"name": "n", "template": str(template.pk), "recurrence": "", "until": until},
        **HTMX,
    )
    assert response.status_code in (200, 204), response.content[:500]
    booking = Booking.objects.get()
    assert booking.recurrence == "daily"
    assert booking.starts_at.hour == 22 and booking.ends_at.hour == 6
