"""Enumerations of the logical world; each value carries a comment on what it means."""

from __future__ import annotations

from django.db import models


class Role(models.TextChoices):
    ADMIN = "admin", "Tenant admin"  # manages the tenant's compositions and members
    MEMBER = "member", "Member"  # requests and releases compositions
    READONLY = "readonly", "Read-only"  # sees, never changes


class JobKind(models.TextChoices):
    INVENTORY_SYNC = "inventory_sync", "Inventory sync"  # diff a manager's report into the tables
    COMPOSE = "compose", "Compose"  # bind a composition's reserved devices, verify, ready
    DECOMPOSE = "decompose", "Decompose"  # unbind a composition's devices and release them
    HEAL = "heal", "Self-heal"  # replace a degraded composition's failed devices from spares
    RESIZE = "resize", "Resize"  # bind what a ready composition gains, unbind what it drops


class CompositionState(models.TextChoices):
    """Lifecycle of a composition; `composer.states.COMPOSITION_ALLOWED` says what may follow."""

    REQUESTED = "requested", "Requested"  # the request is recorded, nothing is held yet
    PLACING = "placing", "Placing"  # placed; its devices are claimed (reserved) in the database
    # placed and claimed, not bound: a hold that composes when applied (-> PLACING, the
    # compose job queued) or lapses at `hold_expires_at` (-> RELEASED, claims given back)
    HELD = "held", "Held"
    BINDING = "binding", "Binding"  # the compose job binds the devices through the driver
    READY = "ready", "Ready"  # every device is bound to the host and verified
    DEGRADED = "degraded", "Degraded"  # ready, but a device or the path to it is unhealthy
    HEALING = "healing", "Healing"  # a self-heal job replaces the unhealthy devices
    # ready and in use with what it keeps, while a resize job binds the devices it gains
    # and unbinds those it drops (-> READY, resized or rolled back to what it had)
    RESIZING = "resizing", "Resizing"
    DECOMPOSING = "decomposing", "Decomposing"  # the decompose job unbinds and releases
    RELEASED = "released", "Released"  # nothing bound, nothing held: the end of a good life
    FAILED = "failed", "Failed"  # compose failed; what it bound was undone (see failure_reason)
    REJECTED = "rejected", "Rejected"  # no placement exists; the reason and funnel are kept


# Compositions that hold (or may still hold) resources; quotas and isolation count them
# (a hold's claimed devices included).
ACTIVE_COMPOSITION_STATES = frozenset(
    {
        CompositionState.REQUESTED,
        CompositionState.PLACING,
        CompositionState.HELD,
        CompositionState.BINDING,
        CompositionState.READY,
        CompositionState.DEGRADED,
        CompositionState.HEALING,
        CompositionState.RESIZING,
        CompositionState.DECOMPOSING,
    }
)


# Compositions whose name no other composition of their tenant may have (a unique index):
# from the request until the tenant lets go. A composition being decomposed, released,
# rejected or failed frees its name, and none of those states leads back here.
LIVE_COMPOSITION_STATES = ACTIVE_COMPOSITION_STATES - {CompositionState.DECOMPOSING}


class AllocationState(models.TextChoices):
    RESERVED = "reserved", "Reserved"  # claimed in the database, not bound on the fabric yet
    BOUND = "bound", "Bound"  # the driver bound it; `binding_id` is recorded
    RELEASED = "released", "Released"  # unbound (or never bound) and given back


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"  # created, enqueued after commit
    RUNNING = "running", "Running"  # a worker claimed it (compare-and-set)
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"  # the error is recorded on the row
    CANCELLED = "cancelled", "Cancelled"  # abandoned before it ran, or swept as lost


TERMINAL_JOB_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})


class EventType(models.TextChoices):
    """What an Event row (and the websocket message made from it) is about."""

    COMPOSITION_STATE = "composition.state", "Composition state"  # a lifecycle transition
    JOB_PROGRESS = "job.progress", "Job progress"  # progress %, message, new log lines, end
    FABRIC_ALERT = "fabric.alert", "Alert"  # an alert opened, changed or closed
    ALERT_ACKNOWLEDGED = "alert.acknowledged", "Alert acknowledged"  # who and when
    DEVICE_HEALTH = "device.health", "Device health"  # an element's health or state changed
    BOOKING_OCCURRENCE = "booking.occurrence", "Booking"  # a window started, warned, ended...


class Recurrence(models.TextChoices):
    """How a booking repeats (iCalendar RRULE: FREQ=DAILY; FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;
    FREQ=WEEKLY on the first window's weekday), each with an UNTIL date."""

    NONE = "none", "Once"  # one window
    DAILY = "daily", "Every day"
    WEEKDAYS = "weekdays", "Weekdays (Monday to Friday)"
    WEEKLY = "weekly", "Every week"


class BookingState(models.TextChoices):
    BOOKED = "booked", "Booked"  # admitted: every occurrence's capacity is held
    CANCELLED = "cancelled", "Cancelled"  # the whole series let go; its holds are gone
    OVER = "over", "Over"  # every occurrence ended (done, missed or failed): nothing held


class OccurrenceState(models.TextChoices):
    """An occurrence's life under the clock (`composer.services.booking_clock`):
    BOOKED -> RUNNING (composed at its start less the lead) -> DONE (decomposed at its end);
    BOOKED -> MISSED (its window passed with no worker to start it: never composed);
    RUNNING -> FAILED (it could not come up and no spare healed it); BOOKED or RUNNING ->
    CANCELLED. Holds are given back on every end state but RUNNING's."""

    BOOKED = "booked", "Booked"  # its devices are held for its window
    RUNNING = "running", "Running"  # its composition was requested; holds kept to its end
    DONE = "done", "Done"  # its end came: decomposed, holds gone
    MISSED = "missed", "Missed"  # its window ended before any worker could start it
    FAILED = "failed", "Failed"  # it could not come up (the reason says why); holds gone
    CANCELLED = "cancelled", "Cancelled"  # let go (alone or with its series); holds gone
