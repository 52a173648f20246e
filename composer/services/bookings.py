"""Booking services: admit a booking (every occurrence placed, its devices held for its
window), cancel a series or one occurrence. Each audited (a ChangeRecord its tenant's
members may read).

A booking is admitted in one transaction, under the tenant's row lock (quotas against
settled bookings) and the placement lock (PostgreSQL: immediate requests and other
bookings decide one at a time, so each sees what the other took). The holds are written
under rule 7's database guarantee (`composer.services.booking_holds.holds_write`): were
two admissions to decide on the same device anyway, the second insert is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db import connection, transaction
from django.utils import timezone

from composer.choices import BookingState, OccurrenceState, Recurrence
from composer.errors import InvalidTransition, SpecError
from composer.models import Booking, BookingHold, Occurrence, Template, Tenant
from composer.placement.request import Placement
from composer.recurrence import Window, schedule_first_window, windows_expand, zone_find
from composer.services.booking_admission import admission_check
from composer.services.booking_holds import holds_write
from composer.services.changes import composer_change_record
from composer.services.composition_checks import composition_check_fabric
from composer.services.composition_pins import pins_resolve
from composer.services.composition_placement import (
    PLACEMENT_LOCK_KEY,
    placement_as_dict,
    placement_request,
    placement_snapshot,
    snapshot_pk,
)
from composer.specs import spec_normalise
from fabric.choices import ChangeAction
from fabric.validators import text_problem

logger = logging.getLogger(__name__)

__all__ = ["booking_cancel", "booking_request", "occurrence_cancel"]

SOURCE = "bookings"


# How far ahead a booking may reach (its windows and its recurrence's last date).
HORIZON = timedelta(days=730)


def _aware(value: datetime, zone: ZoneInfo, field: str) -> datetime:
    """A window's time: an aware one as given, a naive one read in the booking's zone."""
    if not isinstance(value, datetime):
        raise SpecError("Give a date and time.", field=field)
    if value.tzinfo is None:
        return value.replace(tzinfo=zone)
    return value


def _within_horizon(start: datetime, end: datetime, until: date | None) -> None:
    """Bookings look at most `HORIZON` ahead: a window or a last date past it is refused by
    name (a date near the calendar's end would otherwise overflow the arithmetic of the
    admission, and capacity is not promised years ahead)."""
    limit = timezone.now() + HORIZON
    for value, field in ((start, "starts_at"), (end, "ends_at")):
        if value > limit:
            raise SpecError(
                f"Book at most {HORIZON.days // 365} years ahead (until {limit:%Y-%m-%d}).",
                field=field,
            )
    if until is not None and until > limit.date():
        raise SpecError(
            f"Repeat at most {HORIZON.days // 365} years ahead (until {limit:%Y-%m-%d}).",
            field="until",
        )


def _name_clean(name: str | None) -> str:
    name = (name or "").strip()
    if not name:
        raise SpecError("Give the booking a name.", field="name")
    if len(name) > 100:
        raise SpecError(f"Name is at most 100 characters; this one has {len(name)}.", field="name")
    problem = text_problem(name)
    if problem is not None:
        raise SpecError(problem, field="name")
    return name


def booking_request(
    *,
    tenant: Tenant,
    requested_by: Any,
    name: str,
    spec: Mapping[str, Any] | None,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    time_zone: str | None = None,
    recurrence: str | None = None,
    until: date | None = None,
    template: Template | None = None,
    remote_addr: str | None = None,
) -> Booking:
    """Admit a booking: the capacity of `spec` (over the template's, key by key) for the
    window `[starts_at, ends_at)` (naive times are read in `time_zone`) and each
    occurrence of `recurrence` until the local date `until`. Returns the BOOKED booking,
    each occurrence placed and its devices held.

    What is not given comes from the template's default schedule when it has one: its
    recurrence, its time zone, and (with neither time given) its next window from now.

    Raises SpecError naming the field for bad input (a window in the past, an unknown time
    zone or recurrence, too many occurrences, a spec the fabric can never hold),
    BookingRefused (the first occurrence that does not fit, why, the nearest window that
    does) or QuotaExceeded-worded BookingRefused, writing nothing.
    """
    name = _name_clean(name)
    if template is not None and not template.is_active:
        raise SpecError(f"Template {template.name} is not available.", field="template")
    clean = spec_normalise({**(template.spec if template else {}), **(spec or {})})
    host = composition_check_fabric(spec=clean)
    pins = pins_resolve(spec=clean)
    schedule = template.schedule if template is not None and template.schedule else {}
    recurrence = recurrence or schedule.get("recurrence") or Recurrence.NONE
    zone = zone_find(time_zone or schedule.get("time_zone") or "UTC")
    if starts_at is None and ends_at is None and schedule:
        starts_at, ends_at = schedule_first_window(schedule, zone, timezone.now())
    if starts_at is None:
        raise SpecError("Say when the window starts.", field="starts_at")
    if ends_at is None:
        raise SpecError("Say when the window ends.", field="ends_at")
    start, end = _aware(starts_at, zone, "starts_at"), _aware(ends_at, zone, "ends_at")
    _within_horizon(start, end, until)
    windows = windows_expand(
        starts_at=start, ends_at=end, zone=zone, recurrence=str(recurrence), until=until
    )
    if windows[0].starts_at <= timezone.now():
        raise SpecError("The window must start in the future.", field="starts_at")
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PLACEMENT_LOCK_KEY])
        request = placement_request(tenant, clean, host, pins)
        plans = admission_check(
            tenant=tenant,
            spec=clean,
            request=request,
            host=host,
            pins=pins,
            base=placement_snapshot(honour_bookings=False),
            windows=windows,
            zone=zone,
        )
        booking = Booking(
            tenant=tenant,
            name=name,
            requested_by=requested_by if getattr(requested_by, "pk", None) else None,
            template=template,
            spec=clean,
            time_zone=str(zone.key),
            starts_at=windows[0].starts_at,
            ends_at=windows[0].ends_at,
            recurrence=recurrence,
            until=until if recurrence != Recurrence.NONE else None,
            state=BookingState.BOOKED,
        )
        booking.full_clean(exclude=["tenant", "requested_by", "template"])
        booking.save()
        _occurrences_write(booking, windows, plans)
        composer_change_record(
            booking,
            ChangeAction.ADDED,
            {"window": (None, _window_words(booking)), "occurrences": (None, len(windows))},
            actor=requested_by,
            source=SOURCE,
            remote_addr=remote_addr,
            message=f"Booked {name}: {len(windows)} occurrence(s)",
        )
    logger.info("booking %s admitted: %s occurrence(s)", booking.pk, len(windows))
    return booking


def _window_words(booking: Booking) -> str:
    zone = ZoneInfo(booking.time_zone)
    start, end = booking.starts_at.astimezone(zone), booking.ends_at.astimezone(zone)
    words = f"{start:%Y-%m-%d %H:%M}-{end:%H:%M} {booking.time_zone}"
    if booking.recurrence != Recurrence.NONE:
        words += f", {Recurrence(booking.recurrence).label.lower()} until {booking.until}"
    return words


def _occurrences_write(booking: Booking, windows: list[Window], plans: list[Placement]) -> None:
    """One Occurrence per window with its plan, and one hold per device it was given."""
    occurrences = Occurrence.objects.bulk_create(
        Occurrence(
            booking=booking,
            starts_at=window.starts_at,
            ends_at=window.ends_at,
            host_id=snapshot_pk(plan.host),
            placement=placement_as_dict(plan),
        )
        for window, plan in zip(windows, plans, strict=True)
    )
    holds: list[BookingHold] = []
    for occurrence, plan in zip(occurrences, plans, strict=True):
        host_id = snapshot_pk(plan.host)
        shares: dict[int, int] = {}
        for pick in plan.devices:
            if pick.share is None:
                holds.append(_hold(occurrence, snapshot_pk(pick.device), host_id))
            else:  # two shares of one device in one plan: one hold of their sum
                shares[snapshot_pk(pick.device)] = (
                    shares.get(snapshot_pk(pick.device), 0) + pick.share
                )
        holds += [_hold(occurrence, d, host_id, share=s) for d, s in shares.items()]
        holds += [_hold(occurrence, snapshot_pk(p.device), host_id, gib=p.gib) for p in plan.memory]
    holds_write(holds)


def _hold(
    occurrence: Occurrence,
    device: int,
    host: int,
    *,
    gib: int | None = None,
    share: int | None = None,
) -> BookingHold:
    return BookingHold(
        occurrence=occurrence,
        device_id=device,
        host_id=host,
        starts_at=occurrence.starts_at,
        ends_at=occurrence.ends_at,
        gib=gib,
        share=share,
    )


def booking_cancel(*, booking: Booking, actor: Any, remote_addr: str | None = None) -> Booking:
    """Cancel the whole series: every occurrence not ended is CANCELLED and its holds are
    given back (an ended one keeps its record); a running one's composition is decomposed.
    InvalidTransition (field "state") when the booking is cancelled already."""
    now = timezone.now()
    with transaction.atomic():
        locked = Booking.objects.select_for_update().get(pk=booking.pk)
        if locked.state != BookingState.BOOKED:
            raise InvalidTransition(
                f"Booking {locked.name} is {locked.get_state_display().lower()} already.",
                field="state",
            )
        ahead = Occurrence.objects.filter(
            booking=locked, state=OccurrenceState.BOOKED, ends_at__gt=now
        )
        BookingHold.objects.filter(occurrence__in=ahead).delete()
        count = ahead.update(state=OccurrenceState.CANCELLED, cancelled_at=now)
        running = Occurrence.objects.select_for_update(of=("self",)).filter(
            booking=locked, state=OccurrenceState.RUNNING
        )
        for occurrence in running.select_related("booking"):
            _running_cancel(occurrence, actor=actor, remote_addr=remote_addr, now=now)
            count += 1
        Booking.objects.filter(pk=locked.pk).update(
            state=BookingState.CANCELLED, cancelled_at=now, updated_at=now
        )
        composer_change_record(
            locked,
            ChangeAction.CHANGED,
            {"state": (BookingState.BOOKED, BookingState.CANCELLED)},
            actor=actor,
            source=SOURCE,
            remote_addr=remote_addr,
            message=f"Cancelled {locked.name}: {count} occurrence(s) given back",
        )
    booking.refresh_from_db()
    logger.info("booking %s cancelled, %s occurrence(s)", booking.pk, count)
    return booking


def _running_cancel(
    occurrence: Occurrence,
    *,
    actor: Any,
    remote_addr: str | None,
    now: datetime,
    audit: bool = True,
) -> None:
    """A running occurrence (locked) cancelled: its composition decomposed, the occurrence
    ended with the reason (`composer.services.booking_clock`; audited there unless the
    caller audits it itself)."""
    from composer.services.booking_clock import occurrence_finish, occurrence_stop

    if not occurrence_stop(occurrence, actor=actor, remote_addr=remote_addr):
        raise InvalidTransition(
            "This occurrence's composition is still being composed; cancel it once it is up.",
            field="state",
        )
    occurrence_finish(
        occurrence,
        OccurrenceState.CANCELLED,
        now=now,
        reason="Cancelled while running: decomposed and its devices given back.",
        actor=actor,
        remote_addr=remote_addr,
        audit=audit,
    )


def occurrence_cancel(
    *, occurrence: Occurrence, actor: Any, remote_addr: str | None = None
) -> Occurrence:
    """Cancel one occurrence not ended yet and give its holds back; the series goes on
    (cancelling its last occurrence left cancels the series). A running one's composition
    is decomposed. InvalidTransition (field "state") when it is cancelled or over already,
    or while its composition is still being composed (cancel it once it is up)."""
    now = timezone.now()
    with transaction.atomic():
        booking = Booking.objects.select_for_update().get(pk=occurrence.booking_id)
        locked = Occurrence.objects.select_for_update().get(pk=occurrence.pk)
        if (
            locked.state not in (OccurrenceState.BOOKED, OccurrenceState.RUNNING)
            or locked.ends_at <= now
        ):
            raise InvalidTransition("This occurrence is cancelled or over already.", field="state")
        running = locked.state == OccurrenceState.RUNNING
        if running:
            _running_cancel(locked, actor=actor, remote_addr=remote_addr, now=now, audit=False)
        BookingHold.objects.filter(occurrence=locked).delete()
        Occurrence.objects.filter(pk=locked.pk).update(
            state=OccurrenceState.CANCELLED, cancelled_at=now
        )
        zone = ZoneInfo(booking.time_zone)
        when = f"{locked.starts_at.astimezone(zone):%Y-%m-%d %H:%M} {booking.time_zone}"
        composer_change_record(
            booking,
            ChangeAction.CHANGED,
            {"occurrence": (when, OccurrenceState.CANCELLED)},
            actor=actor,
            source=SOURCE,
            remote_addr=remote_addr,
            message=f"Cancelled the occurrence of {when} of {booking.name}"
            + (" while running: decomposed and its devices given back" if running else ""),
        )
        left = Occurrence.objects.filter(
            booking=booking,
            state__in=(OccurrenceState.BOOKED, OccurrenceState.RUNNING),
            ends_at__gt=now,
        ).exists()
        if not left:
            Booking.objects.filter(pk=booking.pk).update(
                state=BookingState.CANCELLED, cancelled_at=now, updated_at=now
            )
    occurrence.refresh_from_db()
    return occurrence
