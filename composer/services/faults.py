"""Fault injection as operators use it: inject into the simulated fabric, then look at once.

`fabric.services.faults.fault_inject` changes the simulated manager's own state, where
every process sees it — the console learns of it the way it learns of real hardware, from
a health poll. Waiting for the next scheduled poll would make a demo (and a test) wait
for the poll interval, so after the injection commits a poll of that manager is queued
straight away; the beat schedule would find the fault anyway if the queueing fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from fabric.models import ChangeRecord, FabricManager
from fabric.services.faults import fault_inject

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FaultInjected:
    """What an injection did: the audit record and the poll it queued."""

    record: ChangeRecord
    target_type: str
    target_id: int
    target_name: str
    action: str
    before: str
    after: str


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
    """Fail, degrade or recover one element of a simulated fabric and poll its health now.

    Raises django's ValidationError naming the field (`manager`, `target_type`,
    `target_id`, `action`) for bad input; nothing is changed then.
    """
    from composer.services.health_poll import health_poll_request

    with transaction.atomic():
        record = fault_inject(
            manager=manager,
            target_type=target_type,
            target_id=target_id,
            action=action,
            actor=actor,
            remote_addr=remote_addr,
            source=source,
        )
        transaction.on_commit(lambda: health_poll_request(manager=manager))
    before, after = (record.changes or {}).get("fault", ("none", "none"))
    return FaultInjected(
        record=record,
        target_type=target_type,
        target_id=record.target_id,
        target_name=record.target_label,
        action=action,
        before=str(before),
        after=str(after),
    )
