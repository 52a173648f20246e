"""Holds: a composition placed and its devices claimed, without binding, until it lapses.

The Redfish Composition Service's `PreviewReserve` (and the API's hold action) asks for
this: the plan is made and its devices are claimed exactly as a request's are (same
checks, quotas, placement lock, claims, audit), but no compose job is queued; the
composition waits HELD until `hold_expires_at`. Then either

- `composition_hold_apply` moves it HELD -> PLACING and queues the compose job (the very
  job a request queues: from there it is an ordinary composition), or
- `composition_hold_release` (the holder lets go) or, for holds past their time,
  `composer.services.hold_lapse.holds_lapsed_release` (beat's sweep, every request and
  preview before it places, an apply that comes too late, the reconciler) gives the
  claims back and moves it HELD -> RELEASED.

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
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState, JobKind
from composer.errors import InvalidTransition, SpecError
from composer.models import Composition, Job, Template, Tenant
from composer.services.compositions import composition_job_create, composition_request
from composer.services.dispatch import job_enqueue
from composer.services.hold_lapse import (
    composition_hold_release,
    hold_clock,
    holds_expire,
    holds_lapsed_release,
    locked_hold,
)
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


def composition_hold_apply(
    *, composition: Composition, actor: Any, remote_addr: str | None = None
) -> Job:
    """Compose a held composition: HELD -> PLACING and its compose job queued (after
    commit), the claims it holds carried over. Returns the job. Raises InvalidTransition
    (field "state") when it is not held, or when its hold has lapsed (its devices are given
    back then and there; request it again)."""
    with transaction.atomic():
        locked = locked_hold(composition, "applied")
        expires = locked.hold_expires_at
        lapsed = expires is not None and expires <= timezone.now()
        if not lapsed:
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
    if lapsed:
        # Its devices are given back now rather than at the next sweep: "request it again"
        # must find them free.
        assert expires is not None
        holds_lapsed_release(only=locked.pk, source="hold apply")
        raise InvalidTransition(
            f"The hold on {locked.name} lapsed at {hold_clock(expires)}; request it again.",
            field="state",
        )
    composition.state, composition.hold_expires_at = locked.state, None
    logger.info("composition %s hold applied, job %s", composition.pk, job.pk)
    return job
