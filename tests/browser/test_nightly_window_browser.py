"""Issue 15 end to end: alice books a nightly inference window through the booking form,
sees its occurrences on the calendar and clicks one to reach the booking; the first
occurrence comes up by itself (a live toast, the composition ready on her compositions page),
she is warned before its end, and it goes away by itself; carol (Globex) sees none of it.

Every piece is real: the ASGI app under uvicorn with the websocket consumer, the booking
form and the calendar in headless Chromium, and the clock of bookings run by a Celery beat
and a worker in processes of their own on PostgreSQL and Redis. Nothing in the test process
ticks the clock, whose steps are set short for those processes (a tick a second, the
composition asked for two seconds ahead). The form has minute precision, so the window alice
books (a minute, in her time zone) starts up to a minute and a half away; once the form, the
calendar and carol's pages are checked, that first night is moved (with its holds) to start a
few seconds after the clock does and to last 40 s, as if the night had come.

The clock's processes start once both browsers listen: a toast is for what happens while a
page is open (an event from before a page was drawn is what the page already shows), so
the start must not fall between two of alice's pages.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.utils import timezone

from composer.choices import CompositionState, OccurrenceState
from composer.models import Booking, BookingHold, Composition, Occurrence
from fabric.drivers.registry import get_driver
from fabric.models import Pool
from fabric.services.pools import pools_assign
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager
from tests.support.asgi import AsgiServer
from tests.support.worker import WorkerProcess

pytestmark = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.postgres,
    pytest.mark.timeout(480),
    # WhiteNoise serves static files to the ASGI handler as a synchronous stream.
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]

SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-nightly"
ZONE = ZoneInfo("Europe/Berlin")  # alice's: the form's times are her wall-clock times
# The first window starts on the first whole minute at least this far off: the form has
# minute precision, and the booking, the calendar and both browsers come first.
LEAD_IN = timedelta(seconds=30)
WINDOW = timedelta(minutes=1)
CLOCK = {
    "COMPOSER_BOOKING_TICK_S": "1",
    "COMPOSER_BOOKING_LEAD_S": "2",
    "COMPOSER_BOOKING_WARN_S": "30",
}
# The moved night: it starts once the worker and the beat are up (they start right after the
# move), and lasts long enough for the warning (COMPOSER_BOOKING_WARN_S before its end) to
# come after the start.
CLOCK_START = timedelta(seconds=15)
SHORT_WINDOW = timedelta(seconds=40)
# Long enough for a loaded two-core machine.
CLOCK_WAIT_MS = 120_000


def _first_window(now: datetime) -> tuple[datetime, datetime]:
    local = now.astimezone(ZONE) + LEAD_IN + timedelta(seconds=59)
    start = local.replace(second=0, microsecond=0)
    return start, start + WINDOW


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@contextmanager
def _logs_on_failure(processes: list[WorkerProcess]) -> Iterator[None]:
    """A failed wait says what the worker and beat printed."""
    try:
        yield
    except AssertionError as exc:
        logs = "\n".join(f"--- {p.log_path.name}\n{p.log()[-6000:]}" for p in processes)
        raise AssertionError(f"{exc}\n{logs}") from exc


def _booking_events(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(
        "window.composerEvents.filter((m) => m.event_type === 'booking.occurrence')"
        ".map((m) => m.payload)"
    )


def test_alice_books_a_nightly_window_sees_it_come_and_go_and_carol_sees_none_of_it(
    postgres: None,
    asgi_server: AsgiServer,
    asgi_login_page: Any,
    redis_url: str,
    acme: Any,
    alice: Any,
    carol: Any,
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    manager = simulated_manager()
    inventory_sync(manager=manager)
    gpus = Pool.objects.create(name="GPUs", slug="gpus", kind="gpu")
    pools_assign()

    # Alice books through the form: one GPU, every night until the day after tomorrow.
    page = asgi_login_page(alice, "/bookings/new/")
    start, end = _first_window(timezone.now())
    page.fill("#id_name", "nightly-inference")
    page.select_option("#id_item_0_kind", "gpu")
    page.fill("#id_item_0_count", "1")
    page.fill("#id_starts_at", f"{start:%Y-%m-%dT%H:%M}")
    page.fill("#id_ends_at", f"{end:%Y-%m-%dT%H:%M}")
    page.fill("#id_time_zone", ZONE.key)
    page.select_option("#id_recurrence", "daily")
    page.fill("#id_until", f"{start.date() + timedelta(days=2):%Y-%m-%d}")
    _shot(page, "1-booking-form")
    page.click("#book-submit")
    page.wait_for_url(re.compile(r"/bookings/\d+/$"))
    booking = Booking.objects.get(tenant=acme, name="nightly-inference")
    assert page.url.endswith(f"/bookings/{booking.pk}/")
    rows = page.locator("#occurrence-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text(f"{start:%Y-%m-%d %H:%M}\u2013{end:%H:%M}")  # her time
    first = booking.occurrences.order_by("starts_at").first()
    assert first is not None and first.starts_at == start and first.ends_at == end

    # The calendar: her three nights drawn on the timeline, the first one's load in its pool.
    page.click("#capacity-menu")
    page.click("a.dropdown-item:has-text('Calendar')")
    page.wait_for_url("**/calendar/")
    # Ready means seen: vis-timeline hides its drawing for about a second after load.
    timeline = page.locator("#calendar-timeline")
    expect(timeline).to_have_attribute("data-ready", "true")
    shown = timeline.locator(".vis-timeline").evaluate("(e) => getComputedStyle(e).visibility")
    assert shown == "visible"
    drawn = timeline.locator(".vis-item.calendar-booked")
    expect(drawn).to_have_count(3)
    box = drawn.first.bounding_box()  # a minute of two weeks: wide enough to see anyway
    # (6 px, as calendar.css sets it; sub-pixel layout may report 5.99998)
    assert box is not None and round(box["width"], 2) >= 6, box
    expect(timeline.locator(".vis-label")).to_contain_text(["nightly-inference"])
    day = (first.starts_at.astimezone(UTC).date() - timezone.now().astimezone(UTC).date()).days
    load = page.locator(f"#calendar-load tr[data-pool='{gpus.slug}'] td").nth(day)
    expect(load).to_have_text("1")
    _shot(page, "2-calendar")
    drawn.first.click()
    page.wait_for_url(f"**/bookings/{booking.pk}/")
    expect(page.locator("h1")).to_contain_text("nightly-inference")
    _shot(page, "3-booking")

    # Carol: no calendar, no booking page, no compositions.
    theirs = asgi_login_page(carol, "/calendar/")
    expect(theirs.locator("#calendar-empty")).to_contain_text("No booked windows")
    expect(theirs.locator("#calendar-timeline")).to_have_count(0)
    assert "nightly-inference" not in theirs.content()
    response = theirs.goto(f"/bookings/{booking.pk}/")
    assert response is not None and response.status == 404
    response = theirs.goto("/calendar/?tenant=acme")
    assert response is not None and response.status == 404
    theirs.goto("/compositions/")
    expect(theirs.locator("#live-status")).to_have_attribute("data-status", "live")
    page.goto("/compositions/")
    expect(page.locator("#live-status")).to_have_attribute("data-status", "live")

    # The night comes: the clock's part need not wait for the form's whole minutes.
    soon = timezone.now() + CLOCK_START
    night = {"starts_at": soon, "ends_at": soon + SHORT_WINDOW}
    assert Occurrence.objects.filter(pk=first.pk).update(**night) == 1
    assert BookingHold.objects.filter(occurrence_id=first.pk).update(**night) >= 1

    occurrence_id = first.pk
    toasts = page.locator(f"#toast-area .toast[data-booking-occurrence='{occurrence_id}']")
    env = {**CLOCK, "COMPOSER_EVENTS_CHANNEL_PREFIX": asgi_server.channel_prefix}
    database = connection.settings_dict
    with (
        WorkerProcess.start(redis_url=redis_url, database=database, name="nw", env=env) as w,
        WorkerProcess.start(
            redis_url=redis_url, database=database, name="nwbeat", beat=True, env=env
        ) as b,
        _logs_on_failure([w, b]),
    ):
        # It comes up by itself: the toast links its composition, ready on her page.
        started = toasts.and_(page.locator('[data-booking-what="started"]'))
        expect(started).to_have_count(1, timeout=CLOCK_WAIT_MS)
        expect(started).to_contain_text("nightly-inference")
        composition = Composition.objects.get(tenant=acme)
        expect(started.locator("a")).to_have_attribute("href", f"/compositions/{composition.pk}/")
        row = page.locator(f"#composition-table tr[data-composition='{composition.pk}']")
        expect(row.locator("[data-state]")).to_have_attribute(
            "data-state", CompositionState.READY, timeout=60_000
        )
        _shot(page, "4-started")

        # A minute before the end she is warned; the warning stays until closed.
        warning = toasts.and_(page.locator('[data-booking-what="warning"]'))
        expect(warning).to_have_count(1, timeout=CLOCK_WAIT_MS)
        expect(warning).to_contain_text("ends in")

        # It goes away by itself at the end: the toast, the composition decomposed.
        done = toasts.and_(page.locator('[data-booking-what="done"]'))
        expect(done).to_have_count(1, timeout=CLOCK_WAIT_MS)
        expect(row.locator("[data-state]")).to_have_attribute(
            "data-state", CompositionState.RELEASED, timeout=60_000
        )
        _shot(page, "5-ended")

    first.refresh_from_db()
    composition.refresh_from_db()
    assert first.state == OccurrenceState.DONE
    assert composition.state == CompositionState.RELEASED
    assert get_driver(manager).bindings() == []
    assert booking.occurrences.filter(state=OccurrenceState.BOOKED).count() == 2
    heard = [e["what"] for e in _booking_events(page)]
    assert heard == ["started", "warning", "done"], heard

    # Carol heard nothing of it, and her compositions page never had a row.
    heard_by_carol = theirs.evaluate("window.composerEvents")
    assert heard_by_carol == [], heard_by_carol
    expect(theirs.locator("#toast-area .toast")).to_have_count(0)
    expect(theirs.locator("#composition-table tr[data-composition]")).to_have_count(0)
    theirs.reload()
    expect(theirs.locator("#composition-table-empty")).to_be_visible()
    _shot(theirs, "6-carol-compositions")
