"""Starting an occurrence: the composition of exactly what its holds keep, on the held host.

The admission placed each occurrence and its holds keep those devices for the window, so
nothing is placed again: the held devices (whole, memory slices, GPU shares) are claimed
for a new composition of the booking's spec and its compose job is queued, as a request
would. Quotas are not checked again: the admission counted the window.

When a held device can no longer be claimed (it failed, or an operator's override took it),
the occurrence heals as a composition does (`composer.services.heal`): the engine places the
spec anew on the inventory of now less what other bookings hold, on the held host first.
When nothing fits, the occurrence FAILS at once with the reason, and an alert tells
operators and the tenant.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from django.db import IntegrityError, transaction

from composer.choices import CompositionState, JobKind, OccurrenceState
from composer.errors import ClaimConflict
from composer.models import (
    AlertAudience,
    Allocation,
    BookingHold,
    Composition,
    Occurrence,
    StateChange,
)
from composer.placement.request import Placement, Rejection
from composer.selectors.bookings import booked_between
from composer.services.allocations import Claim, allocations_claim
from composer.services.booking_clock import (
    Tick,
    duration_words,
    occurrence_event,
    occurrence_finish,
    occurrence_local,
    occurrence_locked,
)
from composer.services.booking_holds import snapshot_less_booked
from composer.services.composition_pins import pins_resolve
from composer.services.composition_placement import (
    place_on,
    placement_as_dict,
    placement_claims,
    placement_request,
    placement_snapshot,
    snapshot_pk,
)
from composer.services.compositions import composition_job_create
from composer.services.dispatch import job_enqueue
from composer.services.health_poll import alert_event_record
from composer.states import composition_transition
from fabric.choices import AlertSeverity, AlertSource, AlertState
from fabric.models import Alert, Host

logger = logging.getLogger(__name__)

__all__ = [
    "BOOKING_FAILED_RULE",
    "booking_alerts_close",
    "occurrence_failed_alert",
    "occurrence_start",
]

# The rule of the alert an occurrence that could not come up opens, on its host.
BOOKING_FAILED_RULE = "booking_failed"
# How long past its start an occurrence waits for the window before it on the same devices
# to give them back, before it is healed onto others (or fails) like any lost device.
PREDECESSOR_WAIT = timedelta(minutes=10)


def _predecessor_holds(occurrence: Occurrence) -> bool:
    """Whether a composition of a window that ended by this one's start still holds one of
    the devices this one holds (it is being decomposed)."""
    held = BookingHold.objects.filter(occurrence=occurrence).values("device_id")
    before = Occurrence.objects.filter(
        ends_at__lte=occurrence.starts_at, composition__isnull=False
    ).values("composition_id")
    return Allocation.objects.filter(
        device_id__in=held, released_at__isnull=True, composition_id__in=before
    ).exists()


def occurrence_start(pk: int, *, now: datetime, tick: Tick) -> None:
    """Start occurrence `pk` if it is still BOOKED (compare-and-set under its row lock):
    MISSED when its window is over, else its composition requested and RUNNING."""
    with transaction.atomic():
        occurrence = occurrence_locked(pk, OccurrenceState.BOOKED)
        if occurrence is None:
            return
        if occurrence.ends_at <= now:
            reason = (
                f"Missed: no worker ran between its start and its end ({_when(occurrence)}); "
                "it was never composed."
            )
            occurrence_finish(occurrence, OccurrenceState.MISSED, now=now, reason=reason)
            tick.missed.append(pk)
            return
        if now < occurrence.starts_at + PREDECESSOR_WAIT and _predecessor_holds(occurrence):
            # Back to back on the same devices: the window before still gives them back
            # (its decompose job runs). Waiting is right; healing onto others, or failing,
            # would not be. The next tick tries again.
            tick.waiting.append(pk)
            return
        late = max(0, int((now - occurrence.starts_at).total_seconds()))
        composition = _composition_create(occurrence)
        came_up, outcome = _claim_held(occurrence, composition, now)
        if not came_up:
            reason = f"It could not come up: {outcome}"
            composition_transition(
                composition, CompositionState.REJECTED, reason=reason, failure_reason=reason
            )
            Occurrence.objects.filter(pk=pk).update(composition=composition, started_at=now)
            occurrence.composition = composition
            occurrence_finish(occurrence, OccurrenceState.FAILED, now=now, reason=reason)
            occurrence_failed_alert(occurrence, reason, now=now)
            tick.failed.append(pk)
            return
        job = composition_job_create(composition, JobKind.COMPOSE, None)
        transaction.on_commit(partial(job_enqueue, job))
        reason = "Started: its composition is being composed."
        if late:
            reason = (
                f"Started late by {duration_words(late)}: no worker ran at its start; composed "
                "as soon as one came back."
            )
            tick.late.append(pk)
        if outcome:
            reason += f" {outcome}"
        Occurrence.objects.filter(pk=pk).update(
            state=OccurrenceState.RUNNING,
            composition=composition,
            started_at=now,
            late_s=late,
            reason=reason[:500],
        )
        occurrence.state, occurrence.composition = OccurrenceState.RUNNING, composition
        occurrence_event(occurrence, "started", f"{occurrence.booking.name}: {reason}")
    tick.started.append(pk)
    logger.info("occurrence %s started as composition %s (late %ss)", pk, composition.pk, late)


def _when(occurrence: Occurrence) -> str:
    return occurrence_local(occurrence)


def _composition_create(occurrence: Occurrence) -> Composition:
    """The REQUESTED composition of the booking's spec, named after the booking and the
    window's local start (an occurrence number when that name is taken)."""
    booking = occurrence.booking
    local = occurrence.starts_at.astimezone(ZoneInfo(booking.time_zone))
    name = f"{booking.name[:70]} {local:%Y-%m-%d %H:%M}"
    for candidate in (name, f"{booking.name[:70]} occurrence {occurrence.pk}"):
        try:
            with transaction.atomic():
                composition = Composition.objects.create(
                    tenant=booking.tenant,
                    name=candidate[:100],
                    requested_by=booking.requested_by,
                    template=booking.template,
                    spec=booking.spec,
                    state=CompositionState.REQUESTED,
                )
            break
        except IntegrityError:
            continue
    else:
        raise ClaimConflict(f"No free composition name for occurrence {occurrence.pk}.")
    StateChange.objects.create(
        composition=composition,
        from_state="",
        to_state=CompositionState.REQUESTED,
        reason=f"Requested by booking {booking.name} for {_when(occurrence)}",
        actor=None,
    )
    composition_transition(
        composition, CompositionState.PLACING, reason="Placing on the booked devices"
    )
    return composition


def _held_claims(occurrence: Occurrence) -> list[Claim]:
    return [
        Claim(device_id, gib=gib, share=share)
        for device_id, gib, share in BookingHold.objects.filter(occurrence=occurrence)
        .order_by("device_id")
        .values_list("device_id", "gib", "share")
    ]


def _claim_held(
    occurrence: Occurrence, composition: Composition, now: datetime
) -> tuple[bool, str | None]:
    """Claim the held devices on the held host: (True, None); or heal onto others: (True,
    a sentence saying what was lost); or (False, why neither worked)."""
    host = occurrence.host
    try:
        allocations_claim(
            composition=composition, claims=_held_claims(occurrence), host=host, actor=None
        )
        _placed(composition, host, occurrence.placement)
        return True, None
    except ClaimConflict as exc:
        # The reason is the tenant's to read (the occurrence, its event): it names no
        # device. Which one, and why, is in the operators' log.
        logger.warning("occurrence %s: held devices lost (%s); healing", occurrence.pk, exc)
    lost = (
        "A device it held could no longer be claimed (it failed, or an operator's override "
        "gave it away)."
    )
    outcome = _replace(occurrence, now)
    if isinstance(outcome, Rejection):
        return False, f"{lost} No spare fits either: {outcome.message}"
    placed_host = Host.objects.get(pk=snapshot_pk(outcome.host))
    try:
        allocations_claim(
            composition=composition, claims=placement_claims(outcome), host=placed_host
        )
    except ClaimConflict as exc:
        logger.warning("occurrence %s: the spares were taken as well (%s)", occurrence.pk, exc)
        return False, f"{lost} The spares were taken as well."
    _placed(composition, placed_host, placement_as_dict(outcome))
    return True, f"Healed: {lost} It runs on spares instead."


def _replace(occurrence: Occurrence, now: datetime) -> Placement | Rejection:
    """The engine's plan for the booking's spec on the inventory of now less what other
    bookings hold from now on (this occurrence's own holds do not count against it)."""
    booking = occurrence.booking
    pins = pins_resolve(spec=booking.spec)
    base = placement_snapshot(honour_bookings=False)
    others = booked_between(now, None, exclude_occurrence=occurrence.pk)
    snapshot = snapshot_less_booked(base, others)
    spec_host = booking.spec.get("host")
    hosts = [occurrence.host] if occurrence.host is not None and not spec_host else []
    outcome: Placement | Rejection = Rejection("no_capacity", "Nothing fits.")
    for host in [*hosts, None]:
        request = placement_request(booking.tenant, booking.spec, host, pins)
        outcome = place_on(snapshot, request, host, pins)
        if isinstance(outcome, Placement):
            return outcome
    return outcome


def _placed(composition: Composition, host: Host | None, placement: dict) -> None:
    Composition.objects.filter(pk=composition.pk).update(host=host, placement=placement)
    composition.host, composition.placement = host, placement


def occurrence_failed_alert(occurrence: Occurrence, reason: str, *, now: datetime) -> None:
    """An alert on the occurrence's host for operators, which its tenant may see too
    (AlertAudience through the blast radius), and the notifications routes ask for. A
    second failure on the same host while the alert is open is folded into it."""
    host = occurrence.host
    if host is None:
        return
    booking = occurrence.booking
    radius = {
        "effect": "",
        "tenants": [booking.tenant_id],
        "compositions": (
            [
                {
                    "id": occurrence.composition_id,
                    "name": occurrence.composition.name if occurrence.composition else "",
                    "tenant_id": booking.tenant_id,
                    "state": "failed",
                }
            ]
            if occurrence.composition_id
            else []
        ),
    }
    message = f"Booking {booking.name} ({booking.tenant.name}), {_when(occurrence)}: {reason}"
    alert = Alert.objects.filter(
        source_type=AlertSource.HOST,
        source_id=host.pk,
        rule=BOOKING_FAILED_RULE,
        state=AlertState.OPEN,
    ).first()
    if alert is None:
        alert = Alert.objects.create(
            manager_id=host.manager_id,
            source_type=AlertSource.HOST,
            source_id=host.pk,
            source_name=host.name[:200],
            rule=BOOKING_FAILED_RULE,
            severity=AlertSeverity.CRITICAL,
            message=message[:500],
            state=AlertState.OPEN,
            opened_at=now,
            last_seen_at=now,
            blast_radius=radius,
        )
        opened, updated = [alert], []
    else:
        Alert.objects.filter(pk=alert.pk).update(
            message=message[:500], last_seen_at=now, blast_radius=_radius_merged(alert, radius)
        )
        alert.refresh_from_db()
        opened, updated = [], [alert]
    AlertAudience.objects.get_or_create(alert=alert, tenant_id=booking.tenant_id)
    alert_event_record(alert)
    from composer.notifications import notifications_for_alerts

    notifications_for_alerts(opened=opened, updated=updated, now=now)
    logger.warning("occurrence %s failed: %s (alert %s)", occurrence.pk, reason, alert.pk)


def _radius_merged(alert: Alert, radius: dict[str, Any]) -> dict[str, Any]:
    """The open alert's blast radius with a further failure's tenant and composition: every
    tenant whose window failed on the host stays named (and sees the alert)."""
    merged = dict(alert.blast_radius or {})
    tenants = list(merged.get("tenants") or [])
    compositions = list(merged.get("compositions") or [])
    known = {c.get("id") for c in compositions}
    merged["tenants"] = tenants + [t for t in radius["tenants"] if t not in tenants]
    merged["compositions"] = compositions + [
        c for c in radius["compositions"] if c["id"] not in known
    ]
    return merged


def booking_alerts_close(*, now: datetime) -> list[int]:
    """Close the open alerts of failed occurrences whose windows are all over (nothing is
    at risk any more; the occurrences keep the reason), with their events. Returns their
    ids."""
    open_alerts = Alert.objects.filter(rule=BOOKING_FAILED_RULE, state=AlertState.OPEN)
    closed = []
    for alert in open_alerts:
        current = Occurrence.objects.filter(
            host_id=alert.source_id, state=OccurrenceState.FAILED, ends_at__gt=now
        )
        if current.exists():
            continue
        with transaction.atomic():
            moved = Alert.objects.filter(pk=alert.pk, state=AlertState.OPEN).update(
                state=AlertState.CLOSED, closed_at=now
            )
            if moved:
                alert.refresh_from_db()
                alert_event_record(alert)
                closed.append(alert.pk)
    return closed
