"""Holds ending without being applied: let go by the holder, or lapsed past their time.

Kept apart from `composer.services.holds` (which makes holds through the request path)
so that the request path itself can release lapsed holds before it places: a hold's
devices must not wait on beat's sweep to be free again once its time is up. Three callers
release lapsed holds, each the same way (`holds_lapsed_release`):

- beat's sweep (`holds_expire`, every COMPOSER_HOLD_SWEEP_S on the housekeeping queue);
- every preview, request and hold, before its quotas and placement
  (`composer.services.compositions`), so a lapsed hold's devices are free to it even when
  beat or its queue is down;
- the reconciler, which records each hold it found past its time ("Held past expiry").

One hold that cannot be released (a database error, a bug) is logged with its traceback
and reported; the others are still released, so the oldest failing hold never blocks the
rest.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState
from composer.errors import InvalidTransition, StaleState
from composer.models import Composition
from composer.services.allocations import allocations_release
from composer.states import composition_transition

logger = logging.getLogger(__name__)

__all__ = [
    "SWEEP_SOURCE",
    "HoldSweep",
    "composition_hold_release",
    "hold_clock",
    "holds_expire",
    "holds_lapsed_release",
    "locked_hold",
]

SWEEP_SOURCE = "hold sweep"


@dataclass
class HoldSweep:
    """What one pass over lapsed holds did: the holds released, and those it could not
    release with the kind of error each met (its traceback is in the log)."""

    released: list[int] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)


def hold_clock(at: datetime) -> str:
    """A moment as holds name it: "12:34 UTC", with the date when it is not today's."""
    at = at.astimezone(UTC)
    today = timezone.now().astimezone(UTC).date()
    return f"{at:%H:%M} UTC" + ("" if at.date() == today else f" on {at:%Y-%m-%d}")


def locked_hold(composition: Composition, doing: str) -> Composition:
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
        locked = locked_hold(composition, "released")
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
    return len(holds_lapsed_release(now=now).released)


def holds_lapsed_release(
    *, now: datetime | None = None, source: str = SWEEP_SOURCE, only: int | None = None
) -> HoldSweep:
    """Release every hold past its time at `now` (default the clock), or only composition
    `only` if it is one: each in its own transaction, oldest first, with `source` in the
    audit. A hold applied or let go since it was read is left alone; one that fails
    otherwise is logged and reported in the result, and the rest go on."""
    now = now or timezone.now()
    due = Composition.objects.filter(state=CompositionState.HELD, hold_expires_at__lte=now)
    if only is not None:
        due = due.filter(pk=only)
    sweep = HoldSweep()
    for composition in due.order_by("hold_expires_at", "pk"):
        expires = composition.hold_expires_at
        assert expires is not None
        try:
            composition_hold_release(
                composition=composition,
                actor=None,
                reason=f"Hold lapsed at {hold_clock(expires)}",
                source=source,
            )
        except (InvalidTransition, StaleState):
            continue  # applied or let go since it was read
        except Exception as exc:  # one hold must not keep the others held
            logger.exception("lapsed hold %s could not be released", composition.pk)
            sweep.failed.append((composition.pk, type(exc).__name__))
            continue
        sweep.released.append(composition.pk)
    if sweep.released:
        logger.info("%s lapsed hold(s) released (%s)", len(sweep.released), source)
    return sweep
