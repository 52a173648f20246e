"""Fault injection into a simulated fabric: fail, degrade or recover one element.

For demos and tests of health, alerts, blast radius and self-healing. The fault is set in
the simulated manager's own state, where every process sees it; the console learns of it
(with propagation: a failed power feed takes its gear down) at the next discovery or
health poll, exactly as it would from real hardware.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from fabric.choices import ChangeAction, FaultAction, FaultTarget
from fabric.drivers.base import DriverError
from fabric.drivers.simulated import store
from fabric.models import (
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    Link,
    PowerFeed,
    SimulatedElement,
    Switch,
)
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

FAULT_MODELS: dict[str, type[models.Model]] = {
    FaultTarget.DEVICE: Device,
    FaultTarget.LINK: Link,
    FaultTarget.SWITCH: Switch,
    FaultTarget.ENCLOSURE: Enclosure,
    FaultTarget.POWER_FEED: PowerFeed,
}
_FAULT_LABELS = {"": "none", "failed": "failed", "degraded": "degraded"}


def fault_target_resolve(
    *, manager: FabricManager, target_type: str, target_id: int | str
) -> models.Model:
    """Find the console row a fault is aimed at.

    `target_id` is the console's primary key when it is an int, otherwise the manager's
    external id, or failing that the element's name (links have no name). Raises
    ValidationError naming `target_type` or `target_id`.
    """
    model = FAULT_MODELS.get(str(target_type))
    if model is None:
        raise ValidationError(
            {"target_type": f"Must be one of {', '.join(FaultTarget.values)}; got {target_type!r}."}
        )
    rows = model.objects.filter(manager=manager)  # type: ignore[attr-defined]
    obj = None
    if isinstance(target_id, int) and not isinstance(target_id, bool):
        obj = rows.filter(pk=target_id).first()
    elif isinstance(target_id, str) and target_id.strip():
        key = target_id.strip()
        obj = rows.filter(external_id=key).first()
        if obj is None and model is not Link:
            matches = list(rows.filter(name=key)[:2])
            if len(matches) > 1:
                raise ValidationError(
                    {"target_id": f"Several {target_type}s are named {key!r}; use the external id."}
                )
            obj = matches[0] if matches else None
    else:
        raise ValidationError({"target_id": "Give a console id (number) or an external id/name."})
    if obj is None:
        raise ValidationError(
            {
                "target_id": f"No {target_type} {target_id!r} on fabric manager {manager.name}; "
                "run an inventory sync if it was added recently."
            }
        )
    return obj


def fault_inject(
    *,
    manager: FabricManager,
    target_type: str,
    target_id: int | str,
    action: str,
    actor: Any = None,
    remote_addr: str | None = None,
    source: str = "fault injection",
) -> ChangeRecord:
    """Fail, degrade or recover one device, link, switch, enclosure or power feed.

    `target_type` is a FaultTarget value, `action` a FaultAction value, `target_id` as in
    `fault_target_resolve`. Only managers that use the simulated driver accept faults.
    Writes a ChangeRecord (action FAULT, `changes={"fault": [before, after]}`) and returns
    it. Raises ValidationError naming the offending field.
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
    label = getattr(obj, "name", "") or obj.external_id  # type: ignore[attr-defined]
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
    return record
