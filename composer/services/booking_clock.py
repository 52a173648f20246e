"""The clock: beat's tick that starts each booked occurrence ahead of its window, warns its
tenant before the end, and decomposes it at the end.

`bookings_tick(now=...)` runs every COMPOSER_BOOKING_TICK_S. Every step is one occurrence
in one transaction, and each begins by locking the occurrence's row with its expected state
in the WHERE clause (compare-and-set): two ticks at once, or a tick delivered twice, find
the row moved on and do nothing, so no occurrence is ever started, warned or ended twice.

- start: a BOOKED occurrence whose start less COMPOSER_BOOKING_LEAD_S has come becomes a
  composition of exactly the devices its holds keep, on the held host
  (`composer.services.booking_start`); RUNNING. Started after its start (the workers were
  away): it says so, and by how much. Its window over before any tick: MISSED, never
  composed.
- warn: COMPOSER_BOOKING_WARN_S before the end, the tenant hears it (a live event).
- end: at the end the composition is decomposed and the holds given back; DONE. A
  composition still binding is decomposed at the next tick that finds it settled.
- fail: a RUNNING occurrence whose composition failed (the compose job could not bind, and
  no heal saved it) is FAILED with the reason, and an alert tells operators and the tenant.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from composer.choices import BookingState, CompositionState, EventType, OccurrenceState
from composer.events import BookingOccurrencePayload, event_record
from composer.models import Booking, BookingHold, Composition, Occurrence
from composer.services.changes import composer_change_record
from composer.services.compositions import composition_decompose
from fabric.choices import ChangeAction

logger = logging.getLogger(__name__)

__all__ = [
    "SOURCE",
    "Tick",
    "bookings_tick",
    "duration_words",
    "occurrence_event",
    "occurrence_finish",
    "occurrence_local",
    "occurrence_locked",
    "occurrence_stop",
    "occurrences_fail_with",
]

SOURCE = "booking clock"

# A composition in these states is on its way (placed, binding, healing, resizing): it is
# decomposed once it settles, at a later tick.
_UNSETTLED = (
    CompositionState.REQUESTED,
    CompositionState.PLACING,
    CompositionState.BINDING,
    CompositionState.HEALING,
    CompositionState.RESIZING,
)
_DECOMPOSABLE = (CompositionState.READY, CompositionState.DEGRADED, CompositionState.DECOMPOSING)
_FAILED = (CompositionState.FAILED, CompositionState.REJECTED)


@dataclass
class Tick:
    """What one tick did (occurrence ids per step), for the task's return and the tests."""

    started: list[int] = field(default_factory=list)
    late: list[int] = field(default_factory=list)
    missed: list[int] = field(default_factory=list)
    warned: list[int] = field(default_factory=list)
    ended: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)  # the window before still gives back

    def count(self) -> int:
        """What the tick changed (a start waiting for the window before changes nothing)."""
        return sum(len(v) for k, v in vars(self).items() if k != "waiting")


def occurrence_local(occurrence: Occurrence) -> str:
    """The window in its booking's wall-clock time: "2026-03-30 08:00-20:00 Europe/Paris"."""
    zone = ZoneInfo(occurrence.booking.time_zone)
    start, end = occurrence.starts_at.astimezone(zone), occurrence.ends_at.astimezone(zone)
    until = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%Y-%m-%d %H:%M}"
    return f"{start:%Y-%m-%d %H:%M}-{until} {occurrence.booking.time_zone}"


def duration_words(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{round(seconds)} s"
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def bookings_tick(*, now: datetime | None = None) -> Tick:
    """One pass of the clock at `now` (default: the present). Each occurrence due is
    handled in its own transaction; one that raises is logged and left for the next tick,
    the others go on."""
    from composer.services.booking_start import booking_alerts_close, occurrence_start

    now = now or timezone.now()
    lead = timedelta(seconds=settings.COMPOSER_BOOKING_LEAD_S)
    warn = timedelta(seconds=settings.COMPOSER_BOOKING_WARN_S)
    tick = Tick()
    # Ends before starts: a window that starts when another ends on the same devices (day
    # and night on one GPU box) finds them given back, or being given back (it then waits:
    # occurrence_start).
    running = Occurrence.objects.filter(state=OccurrenceState.RUNNING)
    failed = running.filter(composition__state__in=_FAILED)
    for pk in failed.values_list("pk", flat=True):
        _step(pk, lambda p: _fail(p, now=now, tick=tick), "fail")
    ending = running.filter(ends_at__lte=now).order_by("ends_at", "pk")
    for pk in ending.values_list("pk", flat=True):
        _step(pk, lambda p: _end(p, now=now, tick=tick), "end")
    due = Occurrence.objects.filter(state=OccurrenceState.BOOKED, starts_at__lte=now + lead)
    for pk in due.order_by("starts_at", "pk").values_list("pk", flat=True):
        _step(pk, lambda p: occurrence_start(p, now=now, tick=tick), "start")
    warning = running.filter(warned_at__isnull=True, ends_at__gt=now, ends_at__lte=now + warn)
    for pk in warning.values_list("pk", flat=True):
        _step(pk, lambda p: _warn(p, now=now, tick=tick), "warn")
    _step(0, lambda _: booking_alerts_close(now=now), "close the alerts of")
    if tick.count():
        logger.info("bookings tick at %s: %s", now.isoformat(), tick)
    return tick


def _step(pk: int, run: Callable[[int], Any], what: str) -> None:
    try:
        run(pk)
    except Exception:
        logger.exception("the booking clock could not %s occurrence %s", what, pk)


def occurrence_locked(pk: int, state: OccurrenceState) -> Occurrence | None:
    """The occurrence's row locked, if it is still in `state` (PostgreSQL re-reads the row
    after waiting on another tick's lock: a moved-on row is not returned)."""
    return (
        Occurrence.objects.select_for_update(of=("self",))
        .select_related("booking", "booking__tenant")
        .filter(pk=pk, state=state)
        .first()
    )


def occurrence_event(occurrence: Occurrence, what: str, message: str) -> None:
    """A live `booking.occurrence` event its tenant hears (operators too): the browser shows
    `message`, which is in the tenant's words."""
    booking = occurrence.booking
    payload: BookingOccurrencePayload = {
        "type": "booking.occurrence",
        "booking_id": booking.pk,
        "booking_name": booking.name,
        "occurrence_id": occurrence.pk,
        "tenant_id": booking.tenant_id,
        "what": what,
        "state": str(occurrence.state),
        "starts_at": occurrence.starts_at.isoformat(),
        "ends_at": occurrence.ends_at.isoformat(),
        "composition_id": occurrence.composition_id,
        "message": message[:500],
    }
    event_record(
        EventType.BOOKING_OCCURRENCE,
        payload,
        tenant_ids=(booking.tenant_id,),
        composition=occurrence.composition_id,
    )


def occurrence_finish(
    occurrence: Occurrence,
    state: OccurrenceState,
    *,
    now: datetime,
    reason: str,
    actor: Any = None,
    remote_addr: str | None = None,
    audit: bool = True,
) -> None:
    """Move a locked occurrence to an end state, give its holds back, audit it (the tenant
    may read the record; `audit` False: the caller writes the record) and tell the tenant
    live."""
    before = occurrence.state
    BookingHold.objects.filter(occurrence=occurrence).delete()
    fields: dict[str, Any] = {"state": state, "reason": reason[:500]}
    if before == OccurrenceState.RUNNING:
        fields["finished_at"] = now
    if state == OccurrenceState.CANCELLED:
        fields["cancelled_at"] = now
    if state in (OccurrenceState.MISSED, OccurrenceState.FAILED, OccurrenceState.DONE):
        fields["finished_at"] = now
    Occurrence.objects.filter(pk=occurrence.pk).update(**fields)
    for name, value in fields.items():
        setattr(occurrence, name, value)
    when = occurrence_local(occurrence)
    if audit:
        _record(occurrence, before, state, when, reason, actor, remote_addr)
    occurrence_event(occurrence, str(state), f"{occurrence.booking.name}, {when}: {reason}")
    if state != OccurrenceState.CANCELLED:
        _booking_over_if_done(occurrence.booking)


def _booking_over_if_done(booking: Booking) -> None:
    """A booking whose every occurrence has ended is OVER (its lists and filters then say
    so, and it can no longer be cancelled), audited. Cancelling the last occurrence makes
    it CANCELLED instead (`composer.services.bookings`)."""
    left = Occurrence.objects.filter(
        booking_id=booking.pk, state__in=(OccurrenceState.BOOKED, OccurrenceState.RUNNING)
    ).exists()
    if left or not Booking.objects.filter(pk=booking.pk, state=BookingState.BOOKED).update(
        state=BookingState.OVER, updated_at=timezone.now()
    ):
        return
    booking.state = BookingState.OVER
    composer_change_record(
        booking,
        ChangeAction.CHANGED,
        {"state": (BookingState.BOOKED, BookingState.OVER)},
        actor=None,
        source=SOURCE,
        remote_addr=None,
        message=f"{booking.name} is over: every occurrence has ended",
    )


def _record(
    occurrence: Occurrence,
    before: str,
    state: OccurrenceState,
    when: str,
    reason: str,
    actor: Any,
    remote_addr: str | None,
) -> None:
    composer_change_record(
        occurrence.booking,
        ChangeAction.CHANGED,
        {"occurrence": (f"{when} {before}", f"{when} {state}")},
        actor=actor,
        source=SOURCE if actor is None else "bookings",
        remote_addr=remote_addr,
        message=f"{occurrence.booking.name}, {when}: {reason}"[:500],
    )


def occurrence_stop(occurrence: Occurrence, *, actor: Any, remote_addr: str | None = None) -> bool:
    """Decompose the composition serving a (locked) occurrence if it holds devices; False
    while it is still on its way (placed, binding, healing, resizing: stop it later)."""
    if occurrence.composition_id is None:
        return True
    composition = Composition.objects.filter(pk=occurrence.composition_id).first()
    if composition is None:
        return True
    state = CompositionState(composition.state)
    if state in _UNSETTLED:
        return False
    has_allocations = composition.allocations.filter(released_at__isnull=True).exists()
    if state in _DECOMPOSABLE or (state == CompositionState.FAILED and has_allocations):
        composition_decompose(composition=composition, actor=actor, remote_addr=remote_addr)
    return True


def _end(pk: int, *, now: datetime, tick: Tick) -> None:
    with transaction.atomic():
        occurrence = occurrence_locked(pk, OccurrenceState.RUNNING)
        if occurrence is None or occurrence.ends_at > now:
            return
        if not occurrence_stop(occurrence, actor=None):
            logger.info("occurrence %s ended while its composition settles: next tick", pk)
            return
        occurrence_finish(
            occurrence,
            OccurrenceState.DONE,
            now=now,
            reason="Its window ended: decomposed and its devices given back.",
        )
    tick.ended.append(pk)


def _warn(pk: int, *, now: datetime, tick: Tick) -> None:
    with transaction.atomic():
        occurrence = occurrence_locked(pk, OccurrenceState.RUNNING)
        if occurrence is None or occurrence.warned_at is not None or occurrence.ends_at <= now:
            return
        Occurrence.objects.filter(pk=pk).update(warned_at=now)
        occurrence.warned_at = now
        left = duration_words((occurrence.ends_at - now).total_seconds())
        zone = ZoneInfo(occurrence.booking.time_zone)
        end = occurrence.ends_at.astimezone(zone)
        occurrence_event(
            occurrence,
            "warning",
            f"{occurrence.booking.name} ends in {left} (at {end:%H:%M} {zone.key}): its "
            "composition is then decomposed. Save your work, or extend the occurrence.",
        )
    tick.warned.append(pk)


def occurrences_fail_with(composition: Composition) -> list[int]:
    """The occurrences a composition that just failed was serving are FAILED at once, with
    its reason and the alert (called by the compose job's rollback; the tick does the same
    for one it finds later). Never raises: the rollback is done whatever happens here."""
    tick = Tick()
    running = Occurrence.objects.filter(composition=composition, state=OccurrenceState.RUNNING)
    for pk in running.values_list("pk", flat=True):
        _step(pk, lambda p: _fail(p, now=timezone.now(), tick=tick), "fail")
    return tick.failed


def _fail(pk: int, *, now: datetime, tick: Tick) -> None:
    from composer.services.booking_start import occurrence_failed_alert

    with transaction.atomic():
        occurrence = occurrence_locked(pk, OccurrenceState.RUNNING)
        if occurrence is None or occurrence.composition_id is None:
            return
        composition = Composition.objects.get(pk=occurrence.composition_id)
        if composition.state not in _FAILED:
            return
        why = composition.failure_reason or "its composition failed"
        reason = f"It could not come up: {why}"
        occurrence_finish(occurrence, OccurrenceState.FAILED, now=now, reason=reason)
        occurrence_failed_alert(occurrence, reason, now=now)
    tick.failed.append(pk)
