"""A degraded composition whose lost devices are all back is READY again, audited.

Three paths lead here, and all of them write the same kind of StateChange, so the history
reads the same whichever noticed first: the health poll that sees a device (or the switch,
link or enclosure that cut it off) come back, the periodic health reconcile that finds a
degraded composition with nothing lost any more, and a *Heal now* pressed after the loss
cleared (there is nothing to replace then, so the composition is simply ready again).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from composer.choices import CompositionState
from composer.errors import InvalidTransition, StaleState
from composer.models import Composition
from composer.states import composition_transition

logger = logging.getLogger(__name__)

__all__ = ["composition_recover", "recovery_reason"]


def recovery_reason(*, back: Sequence[str], why: str) -> str:
    """The audit reason of a recovery: "Recovered: gpu-a-02-1 back (health poll); every
    device is healthy and reachable again". `back` names the composition's own devices
    that came back, when the caller knows them; `why` says who noticed."""
    if back:
        return (
            f"Recovered: {', '.join(back)} back ({why}); "
            "every device is healthy and reachable again"
        )
    return f"Recovered ({why}): every device it lost is healthy and reachable again"


def composition_recover(
    *,
    composition: Composition,
    back: Sequence[str] = (),
    why: str,
    source: str,
    actor: Any = None,
    remote_addr: str | None = None,
) -> bool:
    """DEGRADED -> READY, the failure reason cleared, audited with `actor`/`remote_addr`
    and published as a `composition.state` event after commit (the tenant's page redraws).

    The caller has checked, from the tables (`composer.selectors.health`), that nothing is
    lost. Returns False, changing nothing, when the composition was not DEGRADED any more
    (another worker moved it first, or a heal started).
    """
    reason = recovery_reason(back=back, why=why)
    try:
        composition_transition(
            composition,
            CompositionState.READY,
            reason=reason,
            actor=actor,
            remote_addr=remote_addr,
            source=source,
            failure_reason="",
        )
    except (StaleState, InvalidTransition):
        logger.info("composition %s changed before it could recover", composition.pk)
        return False
    logger.info("composition %s recovered: %s", composition.pk, reason)
    return True
