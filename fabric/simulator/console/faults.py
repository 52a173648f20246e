"""Fault injection as operators use it: inject into the simulated fabric, then look at once.

What the fault page and `POST /api/v1/simulator/faults/` call (the admin's actions and
`manage.py sim_fault` call `fault_inject` alone and leave the console to the next poll or
`--sync`). `fabric.simulator.faults.fault_inject` changes the simulated manager's
own state, where every process sees it — the console learns of it the way it learns of
real hardware, from a health poll. Waiting for the next scheduled poll would make a demo
(and a test) wait for the poll interval, so after the injection commits a poll of that
manager is queued straight away; the beat schedule would find the fault anyway if the
queueing fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from fabric.models import FabricManager
from fabric.simulator.faults import FaultOutcome, fault_inject

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FaultInjected:
    """What an injection did: `outcome`, with its audit record when something changed."""

    outcome: FaultOutcome

    @property
    def changed(self) -> bool:
        return self.outcome.changed

    def message(self) -> str:
        """The operator's sentence for the page and the API."""
        text = self.outcome.sentence()
        if self.changed:
            text += " A health poll is queued: alerts and compositions follow in a moment."
        return text


def simulator_fault(
    *,
    manager: FabricManager,
    target_type: str,
    target_id: int | str,
    action: str,
    actor: Any = None,
    remote_addr: str | None = None,
    source: str = "fault injection",
) -> FaultInjected:
    """Fail, degrade or recover one element of a simulated fabric and poll the manager's
    health now — also when the action changed nothing, so a console that missed a change
    made elsewhere (`manage.py sim_fault`) catches up.

    Raises django's ValidationError naming the field (`manager`, `target_type`,
    `target_id`, `action`) for bad input; nothing is changed then.
    """
    from composer.services.health_poll import health_poll_request

    with transaction.atomic():
        outcome = fault_inject(
            manager=manager,
            target_type=target_type,
            target_id=target_id,
            action=action,
            actor=actor,
            remote_addr=remote_addr,
            source=source,
        )
        transaction.on_commit(lambda: health_poll_request(manager=manager))
    return FaultInjected(outcome=outcome)
