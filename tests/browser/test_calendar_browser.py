"""The calendar in a real browser: alice books a nightly inference window, sees its
occurrences drawn on the timeline and clicks one to reach the booking's page; carol (Globex)
opens the calendar and sees none of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.services.bookings import booking_request
from fabric.models import Pool
from fabric.services.pools import pools_assign
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager

pytestmark = pytest.mark.browser


def test_alice_sees_her_nightly_window_on_the_calendar_and_carol_sees_none_of_it(
    login_page: Any, alice: Any, carol: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    inventory_sync(manager=simulated_manager())
    gpus = Pool.objects.create(name="GPUs", slug="gpus", kind="gpu")
    pools_assign()
    day = (timezone.now() + timedelta(days=1)).date()
    start = datetime(day.year, day.month, day.day, 22, tzinfo=UTC)
    booking = booking_request(
        tenant=acme,
        requested_by=alice,
        name="nightly-inference",
        spec={"items": [{"kind": "gpu", "count": 1}]},
        starts_at=start,
        ends_at=start + timedelta(hours=4),
        recurrence="daily",
        until=day + timedelta(days=3),
    )
    assert booking.occurrences.count() == 4

    page = login_page(alice)
    page.goto("/")
    page.click("#capacity-menu")
    page.click("a.dropdown-item:has-text('Calendar')")
    page.wait_for_url("**/calendar/")
    expect(page.locator("#calendar-timeline")).to_have_attribute("data-ready", "true")
    drawn = page.locator("#calendar-timeline .vis-item.calendar-booked")
    expect(drawn).to_have_count(4)
    expect(page.locator("#calendar-timeline .vis-label")).to_contain_text(["nightly-inference"])
    # The pool's load that night: one GPU booked.
    tonight = page.locator(f"#calendar-load tr[data-pool='{gpus.slug}'] td").nth(1)
    expect(tonight).to_have_text("1")
    drawn.first.click()
    page.wait_for_url(f"**/bookings/{booking.pk}/")
    expect(page.locator("h1")).to_contain_text("nightly-inference")

    other = login_page(carol)
    other.goto("/calendar/")
    expect(other.locator("#calendar-empty")).to_contain_text("No booked windows")
    expect(other.locator("#calendar-timeline")).to_have_count(0)
    assert "nightly-inference" not in other.content()
    response = other.goto("/calendar/?tenant=acme")
    assert response is not None and response.status == 404
