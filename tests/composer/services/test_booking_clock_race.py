"""Never twice, under real concurrency: eight ticks of the booking clock at once (threads,
each on its own PostgreSQL connection, released together by a barrier) start an occurrence
once, warn it once and end it once; a tick delivered again after them does nothing.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from composer.choices import CompositionState, EventType, JobKind, OccurrenceState
from composer.models import Composition, Event, Job
from composer.services.booking_clock import Tick, bookings_tick
from composer.services.bookings import booking_request
from fabric.models import FabricManager

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TICKS = 8


@pytest.fixture(autouse=True)
def clock(settings: Any) -> None:
    settings.COMPOSER_BOOKING_LEAD_S = 120
    settings.COMPOSER_BOOKING_WARN_S = 600


def race(run: Callable[[], Tick]) -> list[Tick]:
    """`run` in TICKS threads at once; their outcomes (an error fails the test)."""
    barrier = threading.Barrier(TICKS)
    outcomes: list[Tick] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            barrier.wait(timeout=30)
            outcomes.append(run())
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(TICKS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(outcomes) == TICKS
    return outcomes


def test_racing_ticks_start_warn_and_end_an_occurrence_once(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    day = (timezone.now() + timedelta(days=1)).date()
    start = datetime(day.year, day.month, day.day, 8, tzinfo=UTC)
    end = start + timedelta(hours=4)
    booking = booking_request(
        tenant=acme,
        requested_by=alice,
        name="race",
        spec={"items": [{"kind": "gpu", "count": 2}]},
        starts_at=start,
        ends_at=end,
    )
    occurrence = booking.occurrences.get()

    started = race(lambda: bookings_tick(now=start - timedelta(minutes=1)))
    assert sum(len(t.started) for t in started) == 1
    assert Composition.objects.count() == 1
    assert Job.objects.filter(kind=JobKind.COMPOSE).count() == 1
    assert bookings_tick(now=start).count() == 0  # a duplicate delivery, later

    warned = race(lambda: bookings_tick(now=end - timedelta(minutes=5)))
    assert sum(len(t.warned) for t in warned) == 1
    warnings = Event.objects.filter(type=EventType.BOOKING_OCCURRENCE, payload__what="warning")
    assert warnings.count() == 1

    ended = race(lambda: bookings_tick(now=end))
    assert sum(len(t.ended) for t in ended) == 1
    assert Job.objects.filter(kind=JobKind.DECOMPOSE).count() == 1
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.DONE
    composition = Composition.objects.get()
    assert composition.state == CompositionState.RELEASED
