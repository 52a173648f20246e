"""Changing one occurrence's end: extend it (admitted only if its held devices are free for
the extra time) or shorten it (the holds give the time back). Audited as every booking
change is (a ChangeRecord its tenant's members may read), and told to the tenant live.

Extending rewrites the occurrence's holds for the longer window under rule 7's database
guarantee (`composer.services.booking_holds.holds_write`): another booking holding one of
the devices in the extra time refuses it, naming the field `ends_at`. A device a
composition holds now (other than the occurrence's own) refuses it too: compositions have
no end, as the admission counts them. So does a host without the cores or memory the
occurrence asks beside what its compositions and other windows there take in the extra
time. The tenant's quotas are checked over the extra time as an admission checks them.
Cancelling a running occurrence or a series with one decomposes its composition
(`composer.services.booking_clock.occurrence_stop`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from composer.choices import ACTIVE_COMPOSITION_STATES, OccurrenceState
from composer.errors import (
    BookingRefused,
    ClaimConflict,
    InvalidTransition,
    QuotaExceeded,
    SpecError,
)
from composer.models import Allocation, Booking, BookingHold, Composition, Occurrence, Quota
from composer.recurrence import Window
from composer.selectors.booked_totals import held_totals
from composer.selectors.bookings import booked_quota_peak
from composer.services.booking_clock import occurrence_event, occurrence_local
from composer.services.booking_holds import holds_write
from composer.services.changes import composer_change_record
from composer.services.composition_checks import composition_check_quotas
from composer.services.composition_pins import pins_resolve
from composer.services.composition_placement import PLACEMENT_LOCK_KEY
from fabric.choices import ChangeAction, ComponentState
from fabric.models import Host

logger = logging.getLogger(__name__)

__all__ = ["occurrence_reschedule"]

SOURCE = "bookings"
_OPEN = (OccurrenceState.BOOKED, OccurrenceState.RUNNING)


def occurrence_reschedule(
    *,
    occurrence: Occurrence,
    ends_at: datetime,
    actor: Any,
    remote_addr: str | None = None,
    now: datetime | None = None,
    direction: str | None = None,
) -> Occurrence:
    """Move a booked or running occurrence's end to `ends_at` (later: extend; earlier:
    shorten). Raises SpecError (field `ends_at`) for an end not after its start or not in
    the future, InvalidTransition (field `state`) when it is over or cancelled, and
    BookingRefused (field `ends_at`) when a device it holds is booked or in use in the
    extra time, its host is out of service or lacks the cores or host memory then, or the
    tenant's quotas do not allow it. With `direction` "extend" (or "shorten"), an end not
    later (not earlier) than the present one is a SpecError on `ends_at`. Writes nothing
    then."""
    now = now or timezone.now()
    if not isinstance(ends_at, datetime) or ends_at.tzinfo is None:
        raise SpecError("Give the new end as a date and time with its zone.", field="ends_at")
    with transaction.atomic():
        Booking.objects.select_for_update().filter(pk=occurrence.booking_id).first()
        locked = (
            Occurrence.objects.select_for_update(of=("self",))
            .select_related("booking")
            .get(pk=occurrence.pk)
        )
        if locked.state not in _OPEN or locked.ends_at <= now:
            raise InvalidTransition("This occurrence is over or cancelled already.", field="state")
        if ends_at <= max(locked.starts_at, now):
            raise SpecError(
                "The new end must be after the occurrence's start and in the future "
                "(to end it now, cancel it).",
                field="ends_at",
            )
        before = locked.ends_at
        if direction == "extend" and ends_at <= before:
            raise SpecError("To extend, give an end later than the present one.", field="ends_at")
        if direction == "shorten" and ends_at >= before:
            raise SpecError(
                "To shorten, give an end earlier than the present one.", field="ends_at"
            )
        if ends_at == before:
            return locked
        if ends_at > before:
            _extend(locked, ends_at, now=now)
        else:
            BookingHold.objects.filter(occurrence=locked).update(ends_at=ends_at)
        Occurrence.objects.filter(pk=locked.pk).update(ends_at=ends_at, warned_at=None)
        old_words = occurrence_local(locked)
        locked.ends_at, locked.warned_at = ends_at, None
        new_words = occurrence_local(locked)
        verb = "Extended" if ends_at > before else "Shortened"
        composer_change_record(
            locked.booking,
            ChangeAction.CHANGED,
            {"occurrence": (old_words, new_words)},
            actor=actor,
            source=SOURCE,
            remote_addr=remote_addr,
            message=f"{verb} the occurrence of {old_words} of {locked.booking.name} to {new_words}",
        )
        occurrence_event(
            locked, verb.lower(), f"{locked.booking.name}: {verb.lower()} to {new_words}."
        )
    logger.info("occurrence %s end moved from %s to %s", occurrence.pk, before, ends_at)
    occurrence.refresh_from_db()
    return occurrence


def _extend(occurrence: Occurrence, ends_at: datetime, *, now: datetime) -> None:
    """Rewrite the holds for the longer window, or BookingRefused naming `ends_at`."""
    if connection.vendor == "postgresql":  # decided one at a time with admissions
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PLACEMENT_LOCK_KEY])
    _check_quotas(occurrence, ends_at, now=now)
    _check_host(occurrence, ends_at)
    holds = list(BookingHold.objects.filter(occurrence=occurrence).order_by("device_id"))
    whole = [h.device_id for h in holds if h.gib is None and h.share is None]
    in_use = (
        Allocation.objects.filter(device_id__in=whole, released_at__isnull=True)
        .exclude(composition_id=occurrence.composition_id)
        .values_list("device_id", flat=True)
    )
    taken = len(set(in_use))  # counted, not named: the tenant reads this refusal
    if taken:
        raise BookingRefused(
            f"Cannot extend to {ends_at:%Y-%m-%d %H:%M} UTC: {taken} of the devices it holds "
            f"{'is' if taken == 1 else 'are'} in use by another composition.",
            field="ends_at",
        )
    longer = [
        BookingHold(
            occurrence=occurrence,
            device_id=h.device_id,
            host_id=h.host_id,
            starts_at=h.starts_at,
            ends_at=ends_at,
            gib=h.gib,
            share=h.share,
        )
        for h in holds
    ]
    BookingHold.objects.filter(occurrence=occurrence).delete()
    try:
        with transaction.atomic():
            holds_write(longer)
    except ClaimConflict as exc:
        raise BookingRefused(
            f"Cannot extend to {ends_at:%Y-%m-%d %H:%M} UTC: a device it holds is booked "
            f"by another window in the extra time ({exc.message})",
            field="ends_at",
        ) from exc


def _check_host(occurrence: Occurrence, ends_at: datetime) -> None:
    """The occurrence's host over the extra time, as an admission counts it: a host taken
    out of service (maintenance, absent) takes no more time, and the cores and host memory
    of the compositions on it now (but the occurrence's own: compositions have no end), of
    the other booked windows on it that overlap the extra time (summed, as if all at once),
    and the occurrence's own must fit it; else BookingRefused naming `ends_at`. Counted, not
    named: the tenant reads this refusal. A running occurrence's host is its composition's
    (a heal may have moved it), a booked one's the one it was placed on."""
    spec = occurrence.booking.spec or {}
    asked = {
        "cores": int(spec.get("cores") or 0),
        "host_memory_gib": int(spec.get("host_memory_gib") or 0),
    }
    composition = occurrence.composition
    host_id = (composition.host_id if composition else None) or occurrence.host_id
    host = Host.objects.filter(pk=host_id).first() if host_id else None
    if host is None:
        return
    if host.state != ComponentState.ACTIVE:
        raise BookingRefused(
            f"Cannot extend to {ends_at:%Y-%m-%d %H:%M} UTC: its host is out of service "
            f"({host.get_state_display().lower()}).",
            field="ends_at",
        )
    if not any(asked.values()):
        return
    # The other windows there, summed as an admission sums them (its own window ends where
    # the extra time starts, so it is not among them).
    booked = held_totals([Window(occurrence.ends_at, ends_at)])
    at = f"host:{host.pk}"  # held_totals' host ids
    taken = {
        "cores": asked["cores"] + booked.cores.get(at, 0),
        "host_memory_gib": asked["host_memory_gib"] + booked.host_memory_gib.get(at, 0),
    }
    for spec_now in (
        Composition.objects.filter(state__in=ACTIVE_COMPOSITION_STATES, host_id=host.pk)
        .exclude(pk=occurrence.composition_id)
        .values_list("spec", flat=True)
    ):
        for name in taken:
            taken[name] += int((spec_now or {}).get(name) or 0)
    short = [
        words
        for key, words, capacity in (
            ("cores", "cores", host.cores),
            ("host_memory_gib", "host memory", host.memory_gib),
        )
        if asked[key] and taken[key] > capacity
    ]
    if short:
        raise BookingRefused(
            f"Cannot extend to {ends_at:%Y-%m-%d %H:%M} UTC: its host lacks the "
            f"{' and the '.join(short)} it asks for in the extra time.",
            field="ends_at",
        )


def _check_quotas(occurrence: Occurrence, ends_at: datetime, *, now: datetime) -> None:
    """The tenant's quotas over the extra time, as an admission counts them: the tenant's
    compositions now, beside its other windows (and its running windows' compositions until
    they end) in the extra time, plus what the occurrence asks for; BookingRefused naming
    `ends_at` with the quota's words when it does not fit."""
    booking = occurrence.booking
    quotas = list(Quota.objects.filter(tenant_id=booking.tenant_id))
    if not quotas:
        return
    booked = booked_quota_peak(
        quotas,
        now=now,
        start=occurrence.ends_at,
        end=ends_at,
        tenant=booking.tenant_id,
        exclude_occurrence=occurrence.pk,
    )
    try:
        composition_check_quotas(
            tenant=booking.tenant,
            spec=booking.spec,
            pins=pins_resolve(spec=booking.spec),
            booked=booked,
            quotas=quotas,
        )
    except QuotaExceeded as exc:
        raise BookingRefused(
            f"Cannot extend to {ends_at:%Y-%m-%d %H:%M} UTC: {exc.message}", field="ends_at"
        ) from exc
