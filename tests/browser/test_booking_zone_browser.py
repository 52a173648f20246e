"""The booking form in a real browser (headless Chromium) set to Tokyo's time: a new
booking's zone is the browser's, so the times alice types are read as hers, and the
booking she makes is in Tokyo's time."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from composer.models import Booking
from fabric.models import Pool
from fabric.services.pools import pools_assign
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager

pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]

ZONE = "Asia/Tokyo"  # no daylight saving: the same offset whatever the day


def test_a_new_booking_is_in_the_browser_s_time_zone(
    acme: Any, alice: Any, login_page: Any
) -> None:
    from playwright.sync_api import expect

    inventory_sync(manager=simulated_manager())
    Pool.objects.create(name="GPUs", slug="gpus", kind="gpu")
    pools_assign()
    page = login_page(alice, timezone_id=ZONE)  # her browser's clock is Tokyo's
    page.goto("/bookings/new/")
    expect(page.locator("#id_time_zone")).to_have_value(ZONE)

    day = (timezone.now().astimezone(ZoneInfo(ZONE)) + timedelta(days=2)).date()
    page.fill("#id_name", "tokyo-evening")
    page.select_option("#id_item_0_kind", "gpu")
    page.fill("#id_item_0_count", "1")
    page.fill("#id_starts_at", f"{day:%Y-%m-%d}T20:00")
    page.fill("#id_ends_at", f"{day:%Y-%m-%d}T22:00")
    page.click("#book-submit")
    page.wait_for_url(re.compile(r"/bookings/\d+/$"))

    booking = Booking.objects.get(tenant=acme, name="tokyo-evening")
    assert booking.time_zone == ZONE
    local = booking.starts_at.astimezone(ZoneInfo(ZONE))
    assert (local.date(), local.hour, local.minute) == (day, 20, 0)
    expect(page.locator("#occurrence-table tbody tr").first).to_contain_text(
        f"{day:%Y-%m-%d} 20:00\u201322:00"
    )
