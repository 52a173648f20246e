"""Holds: a composition placed and its devices claimed, without binding, until it lapses.

The Redfish Composition Service's `PreviewReserve` (and the API's hold action) asks for
this: the plan is made and its devices are claimed exactly as a request's are (same
checks, quotas, placement lock, claims, audit), but no compose job is queued; the
composition waits HELD until `hold_expires_at`. Then either

- `composition_hold_apply` moves it HELD -> PLACING and queues the compose job (the very
  job a request queues: from there it is an ordinary composition), or
- `composition_hold_release` (the holder lets go) or `holds_expire` (beat's sweep, for
  holds past their time) gives the claims back and moves it HELD -> RELEASED.

Held devices count against quotas and no one else can claim them (they are RESERVED, the
memory slices counted in `allocated_gib`), because a hold is an ordinary set of claims.
Each change is a `composition_transition` (compare-and-set, an audited StateChange with
its reason, an event after commit) under the composition's row lock, so an apply and the
sweep racing for one hold leave exactly one of them done.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState, JobKind
from composer.errors import InvalidTransition, SpecError, StaleState
from composer.models import Composition, Job, Template, Tenant
from composer.services.allocations import allocations_release
from composer.services.compositions import composition_job_create, composition_request
from composer.services.dispatch import job_enqueue
from composer.states import composition_transition

logger = logging.getLogger(__name__)

__all__ = [
    "HOLD_MAX_S",
    "HOLD_MIN_S",
    "composition_hold",
    "composition_hold_apply",
    "composition_hold_release",
    "hold_clock",
    "hold_words",
    "holds_expire",
]

HOLD_MIN_S = 10  # shorter than beat's sweep could ever honour
HOLD_MAX_S = 24 * 3600  # a hold is a preview kept for a while, not a reservation of days
SWEEP_SOURCE = "hold sweep"


def hold_clock(at: datetime) -> str:
    """A moment as holds name it: "12:34 UTC", with the date when it is not today's."""
    at = at.astimezone(UTC)
    today = timezone.now().astimezone(UTC).date()
    return f"{at:%H:%M} UTC" + ("" if at.date() == today else f" on {at:%Y-%m-%d}")


def hold_words(expires_at: datetime) -> str:
    """How a hold reads on pages and in the API: "Held until 12:34 UTC; applies or lapses"."""
    return f"Held until {hold_clock(expires_at)}; applies or lapses"


def composition_hold(
    *,
    tenant: Tenant,
    requested_by: Any,
    spec: Mapping[str, Any] | None,
    name: str,
    ttl_s: Any,
    template: Template | None = None,
    idempotency_key: str | None = None,
    remote_addr: str | None = None,
) -> Composition:
    """Place and claim a composition as a hold that lapses `ttl_s` seconds from now.

    Returns the composition HELD (its devices claimed, nothing bound, no job), or REJECTED
    with the reason when nothing fits now, as `composition_request` does. Raises SpecError
    (field `ttl_s`) for a time outside [HOLD_MIN_S, HOLD_MAX_S], and whatever
    `composition_request` raises for bad input, a taken name or a quota, writing nothing.
    """
    seconds = _ttl(ttl_s)
    return composition_request(
        tenant=tenant,
        requested_by=requested_by,
        spec=spec,
        name=name,
        template=template,
        idempotency_key=idempotency_key,
        remote_addr=remote_addr,
        hold_until=timezone.now() + timedelta(seconds=seconds),
    )


def _ttl(value: Any) -> int:
    """`value` as whole seconds within [HOLD_MIN_S, HOLD_MAX_S]; SpecError (field `ttl_s`,
    which the API names `hold_s`) for anything else, "nan" and infinities included."""
    whole = SpecError("Hold time must be a whole number of seconds.", field="ttl_s")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise whole
    try:
        seconds = float(value)
    except (ValueError, OverflowError):
        raise whole from None
    if not math.isfinite(seconds) or seconds != int(seconds):
        raise whole
    if not HOLD_MIN_S <= seconds <= HOLD_MAX_S:
        raise SpecError(
            f"Hold time must be from {HOLD_MIN_S} to {HOLD_MAX_S:,} seconds (got {seconds:g}).",
            field="ttl_s",
        )
    return int(seconds)


def _locked_hold(composition: Composition, doing: str) -> Composition:
    """The composition, row-locked, when it is HELD; InvalidTransition (field "state")
    otherwise, saying what it is."""
    locked = Composition.objects.select_for_update().get(pk=composition.pk)
    if locked.state != CompositionState.HELD:
        state = CompositionState(locked.state).label.lower()
        raise InvalidTransition(
            f"Composition {locked.name} is {state}, not held; only a hold can be {doing}.",
            field="state",
        )
    return locked


def composition_hold_apply(
    *, composition: Composition, actor: Any, remote_addr: str | None = None
) -> Job:
    """Compose a held composition: HELD -> PLACING and its compose job queued (after
    commit), the claims it holds carried over. Returns the job. Raises InvalidTransition
    (field "state") when it is not held, or when its hold has lapsed (the sweep gives the
    devices back; request it again)."""
    with transaction.atomic():
        locked = _locked_hold(composition, "applied")
        expires = locked.hold_expires_at
        if expires is not None and expires <= timezone.now():
            raise InvalidTransition(
                f"The hold on {locked.name} lapsed at {hold_clock(expires)}; request it again.",
                field="state",
            )
        composition_transition(
            locked,
            CompositionState.PLACING,
            reason="Hold applied: composing",
            actor=actor,
            remote_addr=remote_addr,
            hold_expires_at=None,
        )
        job = composition_job_create(locked, JobKind.COMPOSE, actor)
        transaction.on_commit(partial(job_enqueue, job))
    composition.state, composition.hold_expires_at = locked.state, None
    logger.info("composition %s hold applied, job %s", composition.pk, job.pk)
    return job


def composition_hold_release(
    *,
    composition: Composition,
    actor: Any,
    remote_addr: str | None = None,
    reason: str = "Hold let go",
    source: str = "",
) -> Composition:
    """Let a hold go: its claims are given back (devices FREE again, slices' GiB returned)
    and it becomes RELEASED with `reason`. Raises InvalidTransition (field "state") when it
    is not held."""
    with transaction.atomic():
        locked = _locked_hold(composition, "released")
        given = allocations_release(
            composition=locked, actor=actor, source=source or f"composition {locked.pk} hold"
        )
        composition_transition(
            locked,
            CompositionState.RELEASED,
            reason=reason,
            actor=actor,
            remote_addr=remote_addr,
            source=source,
            released_at=timezone.now(),
        )
    composition.state, composition.released_at = locked.state, locked.released_at
    logger.info("composition %s hold released (%s claim(s))", composition.pk, given)
    return composition


def holds_expire(*, now: datetime | None = None) -> int:
    """Release every hold whose time is up (at `now`, default the clock): beat's sweep.
    Returns how many it released; a hold applied or released meanwhile is left alone."""
    now = now or timezone.now()
    due = Composition.objects.filter(state=CompositionState.HELD, hold_expires_at__lte=now)
    released = 0
    for composition in due.order_by("hold_expires_at", "pk"):
        expires = composition.hold_expires_at
        assert expires is not None
        try:
            composition_hold_release(
                composition=composition,
                actor=None,
                reason=f"Hold lapsed at {hold_clock(expires)}",
                source=SWEEP_SOURCE,
            )
        except (InvalidTransition, StaleState):
            continue  # applied or let go since it was read
        released += 1
    if released:
        logger.info("%s lapsed hold(s) released", released)
    return released
