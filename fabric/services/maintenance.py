"""Maintenance: an operator takes a device, an enclosure or a switch out of service and back.

In maintenance, what already runs there keeps running (nothing is unbound), but nothing new
is placed on it: placement takes FREE devices and ACTIVE enclosures only, and no path
through a switch in maintenance (fabric.topology.maintenance.placeable), so the devices
that only that switch connects are not placeable either. Inventory sync keeps the state
(fabric.services.sync.kinds), the health poller opens no new alert for it (its open ones
still close on recovery), and only `maintenance_set(on=False)` ends it.

Before an operator confirms, `maintenance_dependents` lists what depends on the element:
the devices and hosts that would lose something if it went away, and the compositions
holding them (from the impact contributors and the holders registry: the fabric never
imports the composer).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from fabric.capacity import held_state
from fabric.choices import ChangeAction, ComponentState, DeviceState, Health
from fabric.health.blast import BlastRadius
from fabric.holders import Holder, device_holders, held_states
from fabric.models import Device, Enclosure, Switch
from fabric.services.history import change_record, target_type_of
from fabric.topology.radius import domain_impact
from fabric.topology.report import impact_report
from fabric.validators import check_text_fields

logger = logging.getLogger(__name__)

__all__ = [
    "Dependents",
    "MaintenanceTarget",
    "device_maintenance_state",
    "maintenance_dependents",
    "maintenance_dependents_all",
    "maintenance_set",
    "maintenance_set_all",
]

MaintenanceTarget = Device | Switch | Enclosure
HOLDER_LIMIT = 25  # held devices whose holders are looked up (one query each)
REASON_MAX = 200
BULK_MAX = 200  # elements in one bulk change: the confirmation lists every one


def device_maintenance_state(device: Device, *, on: bool) -> str:
    """The state `device` (as read under its row lock) goes to when put in maintenance
    (`on`) or taken out of it: the one rule `maintenance_set` and the admin's form share.

    In: MAINTENANCE, from any state but ABSENT and RESERVED (a compose job is binding it).
    Out: back to what the fabric says it is: what holds it (`fabric.capacity.held_state`:
    its bound host, its slices, the compositions' claims), else FAILED when its health is
    critical, else FREE. Raises ValidationError naming `on`.
    """
    state = device.state
    if on:
        if state == DeviceState.ABSENT:
            raise ValidationError(
                {"on": f"Device {device.name} is absent (no longer reported by its manager)."}
            )
        if state == DeviceState.RESERVED:
            raise ValidationError(
                {
                    "on": f"Device {device.name} is reserved by a composition being built; put "
                    "it in maintenance once the compose job has bound it or given it back."
                }
            )
        return DeviceState.MAINTENANCE
    if state != DeviceState.MAINTENANCE:
        return state
    held = held_state(
        claimed=held_states([device.pk]).get(device.pk),
        bound=device.bound_host_id is not None,
        allocated_gib=device.allocated_gib,
    )
    if held is not None:
        return held
    if device.health == Health.CRITICAL:
        return DeviceState.FAILED
    return DeviceState.FREE


def _next_component_state(target: Switch | Enclosure, on: bool) -> str:
    if target.state == ComponentState.ABSENT:
        raise ValidationError(
            {
                "on": f"{type(target).__name__} {target.name} is absent (no longer reported "
                "by its manager)."
            }
        )
    return ComponentState.MAINTENANCE if on else ComponentState.ACTIVE


def maintenance_set(
    *,
    target: MaintenanceTarget,
    on: bool,
    actor: Any = None,
    reason: str = "",
    remote_addr: str | None = None,
    source: str = "console",
) -> bool:
    """Put `target` (a Device, Switch or Enclosure) in maintenance (`on`) or take it out.

    A device goes MAINTENANCE from FREE, BOUND or FAILED (a bound one stays bound: its
    composition keeps it, and a release leaves it in maintenance); a RESERVED one is refused
    (a compose job is binding it). Out of maintenance, a device goes back to what holds it
    (BOUND, or RESERVED), else FAILED when its health is critical, FREE otherwise
    (`device_maintenance_state`). A switch or
    enclosure moves between ACTIVE and MAINTENANCE. Idempotent: returns False when the
    target already was in the asked state. Audited: a ChangeRecord with the actor, the
    address and the reason. Raises ValidationError naming `on` or `reason`. `target` is
    refreshed in place.
    """
    if not isinstance(target, Device | Switch | Enclosure):
        raise ValidationError(
            {
                "target": "Only devices, switches and enclosures go into maintenance; "
                f"got {target!r}."
            }
        )
    if not isinstance(on, bool):
        raise ValidationError({"on": f"Must be true or false; got {on!r}."})
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX:
        raise ValidationError({"reason": f"At most {REASON_MAX} characters; got {len(reason)}."})
    check_text_fields(free_text={"reason": reason})
    model = type(target)
    with transaction.atomic():
        # Lock the row: a sync or a claim may be changing its state right now.
        row = model.objects.select_for_update().get(pk=target.pk)
        before = row.state
        after = (
            device_maintenance_state(row, on=on)
            if isinstance(row, Device)
            else _next_component_state(row, on)
        )
        if after == before:
            target.refresh_from_db()
            return False
        # Compare-and-set as well (SQLite ignores FOR UPDATE).
        changed = model.objects.filter(pk=row.pk, state=before).update(
            state=after, updated_at=timezone.now()
        )
        if not changed:
            raise ValidationError({"on": f"{row.name} changed meanwhile; try again."})
        verb = "put in maintenance" if on else "taken out of maintenance"
        change_record(
            row,
            ChangeAction.CHANGED,
            {"state": (before, after)},
            label=row.name,
            message=f"{verb}{f': {reason}' if reason else ''}",
            actor=actor,
            source=source,
            remote_addr=remote_addr,
        ).save()
    target.refresh_from_db()
    logger.info(
        "%s %s %s by user %s",
        target_type_of(target),
        target.pk,
        "put in maintenance" if on else "taken out of maintenance",
        getattr(actor, "pk", None),
    )
    return True


@dataclass(frozen=True)
class Dependents:
    """What depends on an element: what its loss (or a careless repair) would take.

    `devices` / `hosts`: rows of `fabric.topology.report.impact_report` (id, name, kind,
    node, reason): what its loss would lose. `devices_degraded`: how many more devices keep
    a path but lose redundancy. `compositions` / `tenants`: what the impact contributors add (empty
    until the composer registers one). `holders`: held devices among `devices` (at most
    HOLDER_LIMIT) with what holds each, as far as the viewer may know; `held_count`: how
    many of `devices` are held in all.
    """

    devices: list[dict[str, Any]] = field(default_factory=list)
    hosts: list[dict[str, Any]] = field(default_factory=list)
    devices_degraded: int = 0
    compositions: list[Any] = field(default_factory=list)
    tenants: list[Any] = field(default_factory=list)
    holders: list[tuple[Device, list[Holder]]] = field(default_factory=list)
    held_count: int = 0


def maintenance_dependents(*, target: MaintenanceTarget, user: Any) -> Dependents:
    """What depends on `target` (see Dependents): `maintenance_dependents_all` of one."""
    return maintenance_dependents_all(targets=[target], user=user)


def maintenance_dependents_all(*, targets: Sequence[MaintenanceTarget], user: Any) -> Dependents:
    """What depends on `targets` out of service together (see Dependents).

    Together, not one by one: a device that two redundant switches reach is lost only when
    both are out, which a list of each one's dependents would miss. One graph per fabric
    manager among the targets, one query for the held devices, and one per held device
    shown (at most HOLDER_LIMIT).
    """
    by_manager: dict[int, list[MaintenanceTarget]] = defaultdict(list)
    for target in targets:
        by_manager[target.manager_id].append(target)
    devices: list[dict[str, Any]] = []
    hosts: list[dict[str, Any]] = []
    degraded = 0
    compositions: list[Any] = []
    tenants: list[Any] = []
    for group in by_manager.values():
        radius = BlastRadius(group[0].manager)
        specs = [
            spec
            for target in group
            if (spec := radius.spec(target_type_of(target), target.pk)) is not None
        ]
        if not specs:
            continue
        graph, impact = domain_impact(radius.graph, specs)
        report = impact_report(graph, impact, domains=[])
        devices += report["devices"]
        hosts += report["hosts"]
        degraded += len(report["devices_degraded"])
        compositions += [c for c in report.get("compositions", []) if c not in compositions]
        tenants += [t for t in report.get("tenants", []) if t not in tenants]
    if not devices and not hosts and not degraded:
        return Dependents()
    device_ids = [row["id"] for row in devices]
    held = Device.objects.filter(
        pk__in=device_ids, state__in=[DeviceState.RESERVED, DeviceState.BOUND]
    ) | Device.objects.filter(pk__in=device_ids, bound_host__isnull=False)
    held = held.distinct().select_related("bound_host").order_by("name", "pk")
    held_count = held.count()
    holders = [(device, device_holders(device=device, user=user)) for device in held[:HOLDER_LIMIT]]
    return Dependents(
        devices=devices,
        hosts=hosts,
        devices_degraded=degraded,
        compositions=compositions,
        tenants=tenants,
        holders=holders,
        held_count=held_count,
    )


def maintenance_set_all(
    *,
    targets: Sequence[MaintenanceTarget],
    on: bool,
    actor: Any = None,
    reason: str = "",
    remote_addr: str | None = None,
    source: str = "console",
) -> list[MaintenanceTarget]:
    """`maintenance_set` on each of `targets`, all of them or none: one refusal (a device a
    compose job is binding, a reason too long) rolls the others back and is raised naming
    the element (`ValidationError` on "targets"). Returns the targets that changed; each
    change is audited as one of its own."""
    if not targets:
        raise ValidationError({"targets": "Choose at least one element."})
    if len(targets) > BULK_MAX:
        raise ValidationError(
            {"targets": f"At most {BULK_MAX} elements at once; got {len(targets)}."}
        )
    changed = []
    with transaction.atomic():
        # Rows are locked in id order, whatever order they were ticked in: two bulk changes
        # over the same elements then queue behind each other instead of deadlocking.
        for target in sorted(targets, key=lambda t: t.pk):
            try:
                if maintenance_set(
                    target=target,
                    on=on,
                    actor=actor,
                    reason=reason,
                    remote_addr=remote_addr,
                    source=source,
                ):
                    changed.append(target)
            except ValidationError as exc:
                if "reason" in getattr(exc, "error_dict", {}):
                    raise  # the same for every element, named as it is
                # The element's own refusal, which names it ("Device gpu-3 is reserved…").
                raise ValidationError(
                    {"targets": f"{' '.join(exc.messages)} Nothing changed."}
                ) from exc
    return changed
