"""The clock of bookings heard live: alice's browser is told when her booked window comes
up, when it is about to end and when it went away, in toasts on whatever page she is on;
carol (Globex) hears none of it.

Real pieces end to end: the ASGI app under uvicorn with the websocket consumer, the Redis
pub/sub layer, static/js/live.js and booking_toasts.js in headless Chromium; the ticks run
in the test process on a frozen clock (`now` given), the compose and decompose jobs
eagerly after commit, and their events are published after commit.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.models import Composition
from composer.services.booking_clock import bookings_tick
from composer.services.bookings import booking_request
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager

pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def test_alice_hears_her_window_come_up_near_its_end_and_go_carol_hears_nothing(
    asgi_login_page: Any, acme: Any, alice: Any, carol: Any, settings: Any
) -> None:
    from playwright.sync_api import expect

    settings.COMPOSER_BOOKING_LEAD_S = 120
    settings.COMPOSER_BOOKING_WARN_S = 600
    inventory_sync(manager=simulated_manager())
    start = timezone.now() + timedelta(hours=1)
    end = start + timedelta(hours=2)
    booking = booking_request(
        tenant=acme,
        requested_by=alice,
        name="nightly-infer",
        spec={"items": [{"kind": "gpu", "count": 1}]},
        starts_at=start,
        ends_at=end,
    )
    mine = asgi_login_page(alice, "/compositions/")
    theirs = asgi_login_page(carol, "/compositions/")
    toasts = mine.locator("#toast-area .toast[data-booking-occurrence]")

    bookings_tick(now=start - timedelta(minutes=2))
    started = toasts.and_(mine.locator('[data-booking-what="started"]'))
    expect(started).to_have_count(1)
    expect(started).to_contain_text("nightly-infer")
    composition = Composition.objects.get(tenant=acme)
    expect(started.locator("a")).to_have_attribute("href", f"/compositions/{composition.pk}/")

    bookings_tick(now=end - timedelta(minutes=10))
    warning = toasts.and_(mine.locator('[data-booking-what="warning"]'))
    expect(warning).to_have_count(1)
    expect(warning).to_contain_text("ends in 10 min")

    bookings_tick(now=end)
    expect(toasts.and_(mine.locator('[data-booking-what="done"]'))).to_have_count(1)
    assert booking.occurrences.get().state == "done"

    heard = theirs.evaluate(
        "window.composerEvents.filter((m) => m.event_type === 'booking.occurrence').length"
    )
    assert heard == 0
    expect(theirs.locator("#toast-area .toast[data-booking-occurrence]")).to_have_count(0)
