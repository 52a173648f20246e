"""Bookings: capacity reserved for a window, once or on a recurrence, and the devices each
window holds.

A `Booking` is a composition request for later: the spec (as a composition's is stored),
its first window (or only one) and its recurrence, in the time zone the tenant gave. Its
`Occurrence`s are the windows the recurrence expands to, each placed by the placement
engine when the booking is admitted; a `BookingHold` per device (or memory slice, or GPU
share) an occurrence was given keeps that device for that window. Rule 7 lives in the
holds: on PostgreSQL an exclusion constraint (migration `bookings`) lets a whole device be
held by one window at a time, and slices and shares are summed under the device rows'
locks (`composer.services.bookings`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from composer.choices import BookingState, OccurrenceState, Recurrence
from composer.querysets import TenantScopedQuerySet
from fabric.models.base import TimeStampedModel


class _ThroughBookingQuerySet(TenantScopedQuerySet):
    """Rows that belong to a tenant through their booking."""

    tenant_field = "booking__tenant"


class _ThroughOccurrenceQuerySet(TenantScopedQuerySet):
    tenant_field = "occurrence__booking__tenant"


class Booking(TimeStampedModel):
    """A reservation: the capacity of `spec` guaranteed to `tenant` in each window.

    Lifecycle: BOOKED (admitted, every occurrence held) -> CANCELLED (the series let go).
    `starts_at`/`ends_at` are the first window (in UTC; `time_zone` is where its wall-clock
    times are read: a 08:00-20:00 weekday booking stays 08:00-20:00 there across DST);
    `recurrence` and `until` (a local date, inclusive) repeat it.
    """

    tenant = models.ForeignKey("composer.Tenant", on_delete=models.PROTECT, related_name="bookings")
    name = models.CharField(max_length=100)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    template = models.ForeignKey(
        "composer.Template", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    spec = models.JSONField(default=dict)
    time_zone = models.CharField(max_length=64, default="UTC")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    recurrence = models.CharField(
        max_length=10, choices=Recurrence.choices, default=Recurrence.NONE
    )
    until = models.DateField(null=True, blank=True)
    state = models.CharField(
        max_length=10, choices=BookingState.choices, default=BookingState.BOOKED
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")), name="composer_booking_window_forward"
            ),
        ]
        indexes = [models.Index(fields=["tenant", "state"], name="composer_booking_tenant")]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class Occurrence(models.Model):
    """One window of a booking, with the host and devices the engine placed it on.

    Lifecycle: see `composer.choices.OccurrenceState` (the clock moves it:
    `composer.services.booking_clock`). `placement` is the plan as a composition stores
    it; `composition` is the one that serves the window once it is composed. `started_at`
    is when the clock requested it (later than `starts_at` less the lead after a worker
    outage: `late_s` says by how much after the start), `warned_at` when the tenant was
    told its end is near, `finished_at` when it ended (done, missed, failed or cancelled
    while running), `reason` why it ended as it did, in the tenant's words.
    """

    booking = models.ForeignKey(Booking, on_delete=models.CASCADE, related_name="occurrences")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    state = models.CharField(
        max_length=10, choices=OccurrenceState.choices, default=OccurrenceState.BOOKED
    )
    host = models.ForeignKey(
        "fabric.Host", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    placement = models.JSONField(default=dict, blank=True)
    composition = models.ForeignKey(
        "composer.Composition", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    late_s = models.PositiveIntegerField(default=0)
    warned_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True, default="")

    objects = _ThroughBookingQuerySet.as_manager()

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")), name="composer_occurrence_window_forward"
            ),
        ]
        indexes = [
            models.Index(fields=["ends_at", "state"], name="composer_occurrence_ends"),
            models.Index(fields=["state", "starts_at"], name="composer_occurrence_due"),
        ]

    def __str__(self) -> str:
        return f"occurrence {self.pk} of booking {self.booking_id} ({self.state})"


class BookingHold(models.Model):
    """One device held for one occurrence's window: whole, a memory slice (`gib`) or a GPU
    share (`share`, thousandths) on `host`.

    The window is copied from the occurrence so that the database can compare windows:
    on PostgreSQL `composer_bookinghold_whole_device_once` excludes two whole-device holds
    of one device whose `[starts_at, ends_at)` overlap. A cancelled occurrence's holds are
    deleted (its cancellation is in the audit trail).
    """

    occurrence = models.ForeignKey(Occurrence, on_delete=models.CASCADE, related_name="holds")
    device = models.ForeignKey("fabric.Device", on_delete=models.PROTECT, related_name="+")
    host = models.ForeignKey(
        "fabric.Host", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    gib = models.PositiveIntegerField(null=True, blank=True)
    share = models.PositiveIntegerField(null=True, blank=True)

    objects = _ThroughOccurrenceQuerySet.as_manager()

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")), name="composer_bookinghold_window_forward"
            ),
            models.CheckConstraint(
                condition=Q(gib__isnull=True) | Q(share__isnull=True),
                name="composer_bookinghold_slice_or_share",
            ),
        ]
        indexes = [
            models.Index(fields=["device", "ends_at"], name="composer_hold_device_ends"),
            models.Index(fields=["ends_at"], name="composer_hold_ends"),
        ]

    def __str__(self) -> str:
        return f"hold of device {self.device_id} {self.starts_at:%Y-%m-%d %H:%M}"
