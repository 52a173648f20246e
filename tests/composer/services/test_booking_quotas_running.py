"""Quotas beside running windows, on a frozen clock: a running window's composition counts
until its window ends, not beside the booking's next window as well, both for a request
made now and for a booking admitted while it runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine

from composer.choices import OccurrenceState
from composer.errors import BookingRefused, QuotaExceeded
from composer.models import Quota
from composer.selectors.quotas import quota_uses
from composer.services.bookings import booking_request
from composer.services.compositions import composition_request
from fabric.models import FabricManager
from tests.composer.services.test_booking_clock import LEAD, TWO_GPUS, book, tick, tomorrow

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clock(settings: Any) -> None:
    settings.COMPOSER_BOOKING_LEAD_S = 120
    settings.COMPOSER_BOOKING_WARN_S = 600


def test_a_running_window_counts_in_quotas_until_its_end_and_not_beside_the_next_one(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A daily 1-GPU window is running; under a 2-GPU quota its composition and tomorrow's
    window never hold 2 at once, so one more GPU now fits, and a second does not."""
    Quota.objects.create(tenant=acme, kind="gpu", max_count=2)
    one = {"items": [{"kind": "gpu", "count": 1}]}
    booking = booking_request(
        tenant=acme,
        requested_by=alice,
        name="daily",
        spec=one,
        starts_at=tomorrow(8),
        ends_at=tomorrow(20),
        recurrence="daily",
        until=(tomorrow(8) + timedelta(days=3)).date(),
    )
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)
    occurrence = booking.occurrences.get(starts_at=tomorrow(8))
    assert occurrence.state == OccurrenceState.RUNNING

    with time_machine.travel(tomorrow(9), tick=False):
        (use,) = quota_uses(Quota.objects.filter(tenant=acme))
        (line,) = use.lines
        assert (line.used, line.booked) == (1, 0)  # tonight's window is tomorrow's peak
        composition_request(tenant=acme, requested_by=alice, spec=one, name="more")
        with pytest.raises(QuotaExceeded):
            composition_request(tenant=acme, requested_by=alice, spec=one, name="too-many")


def test_a_booking_made_while_a_window_runs_counts_it_only_until_it_ends(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Under a 2-GPU quota, while a 1-GPU window runs until 10:00: 2 GPUs booked for
    11:00-12:00 fit (the window's composition is gone by then), 2 for 09:30-11:00 do not."""
    Quota.objects.create(tenant=acme, kind="gpu", max_count=2)
    book(acme, alice, tomorrow(8), tomorrow(10), spec={"items": [{"kind": "gpu", "count": 1}]})
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)
    at = {hour: tomorrow(hour) for hour in (9, 11, 12)}  # read before the clock moves
    half_past_nine = tomorrow(9, 30)

    with time_machine.travel(at[9], tick=False):
        later = booking_request(
            tenant=acme,
            requested_by=alice,
            name="later",
            spec=TWO_GPUS,
            starts_at=at[11],
            ends_at=at[12],
        )
        assert later.occurrences.count() == 1
        with pytest.raises(BookingRefused) as refused:
            booking_request(
                tenant=acme,
                requested_by=alice,
                name="overlapping",
                spec=TWO_GPUS,
                starts_at=half_past_nine,
                ends_at=at[11],
            )
        assert "Over the GPU quota of Acme by 1" in refused.value.message
