"""Fault injection into a simulated fabric: fail, degrade or recover one element.

Here, beside the simulated driver, because it writes the simulated manager's own state
(`store`), which only the simulator has: a real fabric manager's faults are its hardware's.
The console side (the fault page, the API, the admin's actions, `manage.py sim_fault`)
is the optional `fabric.simulator` app, the one caller outside this package.

The target is resolved by `fabric.services.fault_targets` (names, link ends, external or
console ids), the one resolver of the page, the API and the command.

For demos and tests of health, alerts, blast radius and self-healing. The fault is set in
the simulated manager's own state, where every process sees it; the manager reports it on
the element it was injected on, and the console learns of it at the next discovery or
health poll and derives what it takes with it (a failed power feed takes its gear down:
fabric.health.propagation), exactly as it would from real hardware.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from fabric.choices import ChangeAction, FaultAction, FaultTarget
from fabric.drivers.base import DriverError
from fabric.models import ChangeRecord, FabricManager
from fabric.services.fault_targets import FAULT_MODELS, fault_target_name, fault_target_resolve
from fabric.services.history import change_record
from fabric.simulator import store
from fabric.simulator.models import SimulatedElement

logger = logging.getLogger(__name__)

# The resolver's names are re-exported: callers (the admin actions) import them from here.
__all__ = ["FAULT_MODELS", "FaultOutcome", "fault_inject", "fault_target_resolve"]

_FAULT_LABELS = {"": "none", "failed": "failed", "degraded": "degraded"}


@dataclass(frozen=True, slots=True)
class FaultOutcome:
    """What an injection did. `before` and `after` are the element's own fault ("",
    "failed", "degraded"); when they are equal nothing changed and nothing was recorded
    (`record` is None)."""

    target_type: str
    target_id: int
    target_name: str
    action: str
    before: str
    after: str
    record: ChangeRecord | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def sentence(self) -> str:
        """What happened, as the operator says it: "Switch cxl-leaf-a failed (it was
        running normally).", "Link a <-> b has no fault to recover from; nothing changed."."""
        what = f"{FaultTarget(self.target_type).label} {self.target_name}"
        if not self.changed:
            if self.after == "failed":
                return f"{what} has already failed; nothing changed."
            if self.after == "degraded":
                return f"{what} is already degraded; nothing changed."
            return f"{what} has no fault to recover from; nothing changed."
        was = {"": "running normally", "failed": "failed", "degraded": "degraded"}[self.before]
        done = {"": "recovered", "failed": "failed", "degraded": "degraded"}[self.after]
        return f"{what} {done} (it was {was})."


def fault_inject(
    *,
    manager: FabricManager,
    target_type: str,
    target_id: int | str,
    action: str,
    actor: Any = None,
    remote_addr: str | None = None,
    source: str = "fault injection",
) -> FaultOutcome:
    """Fail, degrade or recover one device, link, switch, enclosure or power feed.

    `target_type` is a FaultTarget value, `action` a FaultAction value, `target_id` as in
    `fabric.services.fault_targets.fault_target_resolve`. Only managers that use the
    simulated driver accept faults. A change writes a ChangeRecord (action FAULT,
    `changes={"fault": [before, after]}`); an action that changes nothing (recovering an
    element with no fault, failing a failed one) writes none. Returns the FaultOutcome.
    Raises ValidationError naming the offending field.
    """
    if action not in FaultAction.values:
        raise ValidationError(
            {"action": f"Must be one of {', '.join(FaultAction.values)}; got {action!r}."}
        )
    if manager.driver != "simulated":
        raise ValidationError(
            {
                "manager": f"Fabric manager {manager.name} uses the {manager.driver!r} driver; "
                "faults can only be injected into a simulated fabric."
            }
        )
    obj = fault_target_resolve(manager=manager, target_type=target_type, target_id=target_id)
    fabric_name = str((manager.settings or {}).get("fabric") or "")
    try:
        fabric = store.fabric_get(fabric_name)
    except DriverError as exc:
        raise ValidationError({"manager": exc.message}) from exc
    label = fault_target_name(obj)
    with transaction.atomic():
        try:
            before, after = store.element_fault_set(
                fabric=fabric,
                kind=SimulatedElement.Kind(target_type),
                external_id=obj.external_id,  # type: ignore[attr-defined]
                action=action,
            )
        except SimulatedElement.DoesNotExist as exc:
            raise ValidationError(
                {"target_id": f"{target_type} {label} is not in simulated fabric {fabric.name}."}
            ) from exc
        outcome = FaultOutcome(
            target_type=str(target_type),
            target_id=int(obj.pk),
            target_name=label,
            action=action,
            before=before,
            after=after,
            record=None,
        )
        if not outcome.changed:
            logger.info("fault %s on %s %s changed nothing", action, target_type, label)
            return outcome
        record = change_record(
            obj,
            ChangeAction.FAULT,
            {"fault": (_FAULT_LABELS.get(before, before), _FAULT_LABELS.get(after, after))},
            label=label,
            message=f"{action} injected on {target_type.replace('_', ' ')} {label}",
            actor=actor,
            source=source,
            remote_addr=remote_addr,
        )
        record.save()
    logger.info("fault %s injected on %s %s (manager %s)", action, target_type, label, manager.name)
    return replace(outcome, record=record)
