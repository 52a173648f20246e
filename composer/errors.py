"""Errors of the logical world; the API maps each to a stable JSON `code`."""

from __future__ import annotations

from fabric.drivers.base import DriverError


class ComposerError(Exception):
    """Base of every domain error. `code` is stable and documented; `field` names bad input.

    `message` stands on its own (the API's `detail`, a log line): it says which part of the
    request is wrong. `field_message` is the same in fewer words, for a form that shows it
    next to the field ("Count must be at least 1."); it defaults to `message`.
    """

    code = "composer_error"
    status_code = 400

    def __init__(
        self, message: str, *, field: str | None = None, field_message: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.field_message = field_message or message


class InvalidTransition(ComposerError):
    """The requested state change is not in the transition table."""

    code = "invalid_transition"
    status_code = 409


class StaleState(ComposerError):
    """Another worker changed the row first (the compare-and-set matched nothing)."""

    code = "stale_state"
    status_code = 409


class SpecError(ComposerError):
    """A composition request (or template spec) is malformed; `field` names the bad part."""

    code = "invalid_spec"
    status_code = 400


class NameTaken(ComposerError):
    """Another live composition of the tenant has this name (field `name`)."""

    code = "name_taken"
    status_code = 409


class QuotaExceeded(ComposerError):
    """The request would take the tenant over one of its quotas; the message says by how much."""

    code = "quota_exceeded"
    status_code = 409


class ClaimConflict(StaleState):
    """A device chosen by placement was taken (or its memory filled) before it was claimed."""

    code = "claim_conflict"
    status_code = 409


class PlacementRejected(ComposerError):
    """No placement exists for the request (the composition is kept, REJECTED, with the funnel)."""

    code = "placement_rejected"
    status_code = 409


class BindingFailed(DriverError):
    """A binding could not be made or verified, in composer's words: which of the
    composition's devices, on its host, and whether trying again can help (`permanent`).

    Raised in place of the driver's own error (which may name the manager's elements): the
    manager's answer goes to the operators' log line where it is caught, while this message
    reaches everyone who reads the job or the composition, its tenant included.
    """


class BookingRefused(ComposerError):
    """A booking cannot be admitted: one of its occurrences has no placement (or would take
    the tenant over a quota). The message names the occurrence and why, and the nearest
    window that fits when one does (`nearest`: {"starts_at", "ends_at"} of the first window
    shifted, ISO 8601, else None)."""

    code = "booking_refused"
    status_code = 409

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        field_message: str | None = None,
        nearest: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message, field=field, field_message=field_message)
        self.nearest = nearest
