"""The clock of bookings on a frozen clock (`now` given to each tick, no sleeping): an
occurrence composed at its start less the lead, warned before its end, decomposed at its
end; caught up after a worker outage (late, or missed when its window passed); failures at
start healed onto spares or reported with an alert; a running occurrence or series
cancelled is decomposed, audited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState, EventType, JobKind, OccurrenceState
from composer.errors import InvalidTransition
from composer.models import (
    AlertAudience,
    Booking,
    BookingHold,
    Composition,
    Event,
    Job,
    Occurrence,
)
from composer.services.booking_clock import bookings_tick
from composer.services.booking_start import BOOKING_FAILED_RULE, occurrence_failed_alert
from composer.services.bookings import booking_cancel, booking_request, occurrence_cancel
from fabric.choices import DeviceState, Health
from fabric.models import Alert, ChangeRecord, Device, FabricManager
from fabric.simulator import store

pytestmark = pytest.mark.django_db

TWO_GPUS = {"items": [{"kind": "gpu", "count": 2}]}
LEAD = timedelta(seconds=120)


@pytest.fixture(autouse=True)
def clock(settings: Any) -> None:
    settings.COMPOSER_BOOKING_LEAD_S = 120
    settings.COMPOSER_BOOKING_WARN_S = 600


def tomorrow(hour: int, minute: int = 0) -> datetime:
    day = (timezone.now() + timedelta(days=1)).date()
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def book(tenant: Any, user: Any, start: datetime, end: datetime, **kw: Any) -> Occurrence:
    booking = booking_request(
        tenant=tenant,
        requested_by=user,
        name=kw.pop("name", "night"),
        spec=kw.pop("spec", TWO_GPUS),
        starts_at=start,
        ends_at=end,
        **kw,
    )
    return booking.occurrences.get()


def tick(at: datetime, capture: Any) -> Any:
    with capture(execute=True):
        return bookings_tick(now=at)


def held(occurrence: Occurrence) -> list[int]:
    return sorted(
        BookingHold.objects.filter(occurrence=occurrence).values_list("device_id", flat=True)
    )


def events(kind: str) -> list[dict[str, Any]]:
    return [
        e.payload
        for e in Event.objects.filter(type=EventType.BOOKING_OCCURRENCE).order_by("id")
        if e.payload["what"] == kind
    ]


def test_an_occurrence_comes_up_at_its_start_less_the_lead_and_goes_away_at_its_end(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(20))
    devices = held(occurrence)

    # Before the lead: nothing happens.
    assert (
        tick(tomorrow(8) - LEAD - timedelta(seconds=1), django_capture_on_commit_callbacks).count()
        == 0
    )
    outcome = tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    assert outcome.started == [occurrence.pk] and outcome.late == []
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.RUNNING and occurrence.late_s == 0
    composition = Composition.objects.get(pk=occurrence.composition_id)
    assert composition.state == CompositionState.READY  # the compose job ran (eager)
    assert composition.host_id == occurrence.host_id
    assert sorted(composition.allocations.values_list("device_id", flat=True)) == devices
    assert composition.tenant == acme and composition.requested_by == alice
    assert events("started")[0]["tenant_id"] == acme.pk

    # A second tick in the window starts nothing again.
    assert tick(tomorrow(12), django_capture_on_commit_callbacks).count() == 0
    assert Composition.objects.filter(tenant=acme).count() == 1

    # Warned once, WARN_S before the end.
    assert tick(tomorrow(19, 49), django_capture_on_commit_callbacks).warned == []
    assert tick(tomorrow(19, 50), django_capture_on_commit_callbacks).warned == [occurrence.pk]
    assert tick(tomorrow(19, 55), django_capture_on_commit_callbacks).warned == []
    (warning,) = events("warning")
    assert "ends in 10 min" in warning["message"] and "20:00 UTC" in warning["message"]

    outcome = tick(tomorrow(20), django_capture_on_commit_callbacks)
    assert outcome.ended == [occurrence.pk]
    occurrence.refresh_from_db()
    composition.refresh_from_db()
    assert occurrence.state == OccurrenceState.DONE and occurrence.finished_at == tomorrow(20)
    assert composition.state == CompositionState.RELEASED
    assert held(occurrence) == []
    assert Device.objects.filter(pk__in=devices, state=DeviceState.FREE).count() == 2
    records = ChangeRecord.objects.filter(target_type="booking").order_by("-id")
    assert "Its window ended" in records[1].message  # then the booking is over (records[0])
    assert tick(tomorrow(20, 1), django_capture_on_commit_callbacks).count() == 0


def test_a_start_missed_while_no_worker_ran_is_caught_up_late_once(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(20))

    # The workers were away from 07:50 to 08:37: the first tick after is at 08:37.
    outcome = tick(tomorrow(8, 37), django_capture_on_commit_callbacks)
    again = tick(
        tomorrow(
            8,
            37,
        ),
        django_capture_on_commit_callbacks,
    )  # a duplicate delivery

    assert outcome.started == outcome.late == [occurrence.pk] and again.count() == 0
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.RUNNING
    assert occurrence.late_s == 37 * 60
    assert "Started late by 37 min" in occurrence.reason
    assert Job.objects.filter(kind=JobKind.COMPOSE).count() == 1


def test_a_window_that_ended_during_the_outage_is_missed_never_composed(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(9))

    outcome = tick(tomorrow(9, 5), django_capture_on_commit_callbacks)

    assert outcome.missed == [occurrence.pk] and outcome.started == []
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.MISSED and occurrence.composition_id is None
    assert "no worker ran between its start and its end" in occurrence.reason
    assert held(occurrence) == [] and not Composition.objects.exists()
    assert events("missed")[0]["tenant_id"] == acme.pk


def test_a_held_device_that_failed_before_the_start_is_healed_onto_a_spare(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(20))
    lost = held(occurrence)[0]
    Device.objects.filter(pk=lost).update(health=Health.CRITICAL)

    outcome = tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    assert outcome.started == [occurrence.pk]
    occurrence.refresh_from_db()
    assert "Healed" in occurrence.reason and "could no longer be claimed" in occurrence.reason
    # The reason is the tenant's to read: it names no device (fabric internals).
    assert Device.objects.get(pk=lost).name not in occurrence.reason
    composition = Composition.objects.get(pk=occurrence.composition_id)
    assert composition.state == CompositionState.READY
    devices = set(composition.allocations.values_list("device_id", flat=True))
    assert len(devices) == 2 and lost not in devices


def test_a_start_with_no_spare_fails_at_once_with_the_reason_and_an_alert(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(20))
    book(globex, None, tomorrow(8), tomorrow(20), name="theirs")  # the other two GPUs
    Device.objects.filter(pk=held(occurrence)[0]).update(health=Health.CRITICAL)

    outcome = tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    assert occurrence.pk in outcome.failed
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.FAILED
    assert occurrence.reason.startswith("It could not come up:")
    assert "could no longer be claimed" in occurrence.reason
    assert not any(
        name in occurrence.reason for name in Device.objects.values_list("name", flat=True)
    )
    assert held(occurrence) == []
    composition = Composition.objects.get(pk=occurrence.composition_id)
    assert composition.state == CompositionState.REJECTED
    alert = Alert.objects.get(rule=BOOKING_FAILED_RULE)
    assert "night" in alert.message and alert.source_id == occurrence.host_id
    assert AlertAudience.objects.filter(alert=alert, tenant=acme).exists()
    assert events("failed")[0]["tenant_id"] == acme.pk


def test_a_compose_job_that_fails_marks_the_occurrence_failed_at_once(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(20))
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="bind", mode="permanent", count=1
    )

    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    occurrence.refresh_from_db()
    composition = Composition.objects.get(pk=occurrence.composition_id)
    assert composition.state == CompositionState.FAILED
    assert occurrence.state == OccurrenceState.FAILED and "could not come up" in occurrence.reason
    assert composition.failure_reason in occurrence.reason
    assert Alert.objects.filter(rule=BOOKING_FAILED_RULE).count() == 1
    assert held(occurrence) == []
    # The tick after has nothing left to do.
    assert tick(tomorrow(8), django_capture_on_commit_callbacks).failed == []


def test_cancelling_a_running_occurrence_decomposes_it_and_is_audited(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(
        acme, alice, timezone.now() + timedelta(minutes=1), timezone.now() + timedelta(hours=2)
    )
    tick(timezone.now(), django_capture_on_commit_callbacks)
    occurrence.refresh_from_db()
    composition = Composition.objects.get(pk=occurrence.composition_id)
    assert composition.state == CompositionState.READY

    with django_capture_on_commit_callbacks(execute=True):
        occurrence_cancel(occurrence=occurrence, actor=alice)

    occurrence.refresh_from_db()
    composition.refresh_from_db()
    assert occurrence.state == OccurrenceState.CANCELLED
    assert composition.state == CompositionState.RELEASED
    assert held(occurrence) == []
    records = ChangeRecord.objects.filter(target_type="booking", actor=alice)
    cancelled = records.filter(message__contains="Cancelled the occurrence")
    assert cancelled.count() == 1  # one record of the cancel, which says what it did
    assert "while running: decomposed" in cancelled[0].message
    with pytest.raises(InvalidTransition):
        occurrence_cancel(occurrence=occurrence, actor=alice)


def test_cancelling_the_series_decomposes_its_running_occurrence(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    start = timezone.now() + timedelta(minutes=1)
    booking: Booking = booking_request(
        tenant=acme,
        requested_by=alice,
        name="daily",
        spec=TWO_GPUS,
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        recurrence="daily",
        until=(start + timedelta(days=2)).date(),
    )
    tick(timezone.now(), django_capture_on_commit_callbacks)
    first = booking.occurrences.order_by("starts_at").first()
    assert first is not None and first.state == OccurrenceState.RUNNING

    with django_capture_on_commit_callbacks(execute=True):
        booking_cancel(booking=booking, actor=alice)

    states = set(booking.occurrences.values_list("state", flat=True))
    assert states == {OccurrenceState.CANCELLED}
    assert Composition.objects.get(pk=first.composition_id).state == CompositionState.RELEASED
    assert not BookingHold.objects.filter(occurrence__booking=booking).exists()


def test_a_second_tenants_failure_on_the_same_host_joins_the_open_alert(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    ours = book(acme, alice, tomorrow(8), tomorrow(20))
    theirs = book(globex, None, tomorrow(8), tomorrow(20), name="theirs")
    Occurrence.objects.filter(pk=theirs.pk).update(host=ours.host)
    theirs.refresh_from_db()

    occurrence_failed_alert(ours, "It could not come up: a GPU failed.", now=tomorrow(8))
    occurrence_failed_alert(theirs, "It could not come up: a GPU failed.", now=tomorrow(8))

    alert = Alert.objects.get(rule=BOOKING_FAILED_RULE)  # one alert for the host
    assert alert.blast_radius["tenants"] == [acme.pk, globex.pk]
    assert set(AlertAudience.objects.filter(alert=alert).values_list("tenant", flat=True)) == {
        acme.pk,
        globex.pk,
    }
    occurrence_failed_alert(theirs, "Again.", now=tomorrow(9))
    alert.refresh_from_db()
    assert alert.blast_radius["tenants"] == [acme.pk, globex.pk]  # named once each


def test_the_alert_of_a_failed_start_closes_once_its_window_is_over(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(10))
    book(globex, None, tomorrow(8), tomorrow(10), name="theirs")
    Device.objects.filter(pk=held(occurrence)[0]).update(health=Health.CRITICAL)
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)
    alert = Alert.objects.get(rule=BOOKING_FAILED_RULE)
    tick(tomorrow(9), django_capture_on_commit_callbacks)
    alert.refresh_from_db()
    assert alert.state == "open"

    tick(tomorrow(10), django_capture_on_commit_callbacks)

    alert.refresh_from_db()
    assert alert.state == "closed" and alert.closed_at == tomorrow(10)


def test_back_to_back_windows_on_the_same_devices_hand_over_without_a_failure(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    alice: Any,
    carol: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Day and night on one GPU pair: the night's start less the lead falls while the day
    still runs. The night waits for the day's devices (it is neither healed onto others nor
    failed) and starts once the day's decompose has given them back."""
    day = book(acme, alice, tomorrow(8), tomorrow(20), name="day")
    devices = held(day)
    others = Device.objects.filter(kind="gpu").exclude(pk__in=devices)
    others.update(state=DeviceState.MAINTENANCE)  # the night can only have the day's pair
    night = book(globex, carol, tomorrow(20), tomorrow(22), name="night")
    assert held(night) == devices
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    waiting = tick(tomorrow(20) - LEAD, django_capture_on_commit_callbacks)
    assert (waiting.waiting, waiting.started, waiting.failed) == ([night.pk], [], [])
    night.refresh_from_db()
    assert night.state == OccurrenceState.BOOKED and night.composition_id is None

    # At the day's end its decompose job is queued; the night waits for it once more, and
    # the next tick (the job has run) starts it on the same pair.
    handover = tick(tomorrow(20), django_capture_on_commit_callbacks)
    assert (handover.ended, handover.waiting, handover.failed) == ([day.pk], [night.pk], [])
    assert tick(
        tomorrow(20, 0) + timedelta(seconds=30), django_capture_on_commit_callbacks
    ).started == [night.pk]
    night.refresh_from_db()
    assert night.state == OccurrenceState.RUNNING
    composition = Composition.objects.get(pk=night.composition_id)
    assert composition.state == CompositionState.READY
    assert sorted(composition.allocations.values_list("device_id", flat=True)) == devices


def test_a_booking_whose_every_occurrence_ended_is_over_and_cannot_be_cancelled(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(9))
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)
    booking = Booking.objects.get(pk=occurrence.booking_id)
    assert booking.state == "booked"  # running: not over yet
    tick(tomorrow(9), django_capture_on_commit_callbacks)
    booking.refresh_from_db()
    assert booking.state == "over"
    record = ChangeRecord.objects.filter(target_type="booking").order_by("-id").first()
    assert record is not None and record.changes == {"state": ["booked", "over"]}
    with pytest.raises(InvalidTransition, match="over already"):
        booking_cancel(booking=booking, actor=alice)
