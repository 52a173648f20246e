"""The reconciler's step per fabric manager: its bindings against the database's claims.

What the manager reports (`driver.bindings()`) is read first, the claims second, so that
every binding reported was made before the claims were read:

- claimed: an active allocation records its binding id, or an `UnbindPending` row holds it
  (the pending step retries those): in agreement;
- in flight: not recorded, but it matches (device, host, GiB) an active allocation that
  has no binding id yet: a compose or heal job is binding it, or a rollback of a lost
  reply will sweep it (those ask the manager too). Never touched here;
- an orphan: nothing claims it. It is unbound (with retries); if that fails, an
  `UnbindPending` row holds the device (BOUND to that host) until a later run unbinds it;
- missing: an active allocation of a READY or DEGRADED composition records a binding the
  manager no longer reports. It is bound again (the database says the tenant holds it; a
  bind that timed out is looked for in the manager's report, as a job's is), and
  reported; a failed bind is reported and tried again at the next run. A device out of
  service (failed, in maintenance, critical) is left to the health path, which degrades
  the composition and heals it from a spare.

The manager is reached through `fabric.reconfig` only (its bindings read, bind with the
reconciliation of a timeout, unbind with retries), on the driver's protocol, so the same
code faces the simulated manager and real ones.
"""

from __future__ import annotations

import logging

from django.db import transaction

from composer.choices import CompositionState
from composer.models import (
    Allocation,
    Composition,
    FindingKind,
    FindingOutcome,
    ReconcileFinding,
    UnbindPending,
)
from composer.services.allocations import allocation_mark_bound
from composer.services.bindings import JobNarrator, allocation_target
from composer.services.unbinds import device_unbound
from fabric import reconfig
from fabric.capacity import is_out_of_service
from fabric.choices import ChangeAction, DeviceState
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager, Host
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = ["manager_reconcile"]

SOURCE = "reconciliation"
SETTLED = (CompositionState.READY, CompositionState.DEGRADED)


def manager_reconcile(manager: FabricManager) -> list[ReconcileFinding]:
    """Compare `manager`'s bindings with the database and repair what differs; returns the
    findings (unsaved). A manager that cannot be read is a finding, nothing else is done."""
    try:
        driver = get_driver(manager)
        reported = reconfig.reported_bindings(driver)
    except DriverError as exc:
        return [
            ReconcileFinding(
                kind=FindingKind.MANAGER_UNREACHABLE,
                outcome=FindingOutcome.PENDING,
                manager=manager,
                action="Could not read its bindings; compared again at the next run",
                detail=exc.message,
            )
        ]
    active = list(
        Allocation.objects.filter(released_at__isnull=True, composition__host__manager=manager)
        .select_related("device", "composition__host")
        .order_by("pk")
    )
    pending = set(
        UnbindPending.objects.filter(undone_at__isnull=True, host__manager=manager).values_list(
            "binding_id", flat=True
        )
    )
    claimed = {a.binding_id for a in active if a.binding_id}
    in_flight = {
        (a.device.external_id, a.composition.host.external_id, a.gib)
        for a in active
        if not a.binding_id and a.composition.host is not None
    }
    findings: list[ReconcileFinding] = []
    orphans = [
        b
        for b in reported
        if b.binding_id not in claimed
        and b.binding_id not in pending
        and (b.device_id, b.host_id, b.size_gib) not in in_flight
    ]
    if orphans:
        findings += _orphans(manager, driver, orphans)
    reported_ids = {b.binding_id for b in reported}
    for allocation in active:
        device = allocation.device
        if (
            allocation.binding_id
            and allocation.binding_id not in reported_ids
            and allocation.composition.state in SETTLED
            # A failed device's binding is the health path's: degraded, healed from a spare.
            and not is_out_of_service(device.state, device.health)
        ):
            findings.append(_missing(manager, driver, allocation))
    return findings


def _orphans(
    manager: FabricManager, driver: FabricDriver, orphans: list[Binding]
) -> list[ReconcileFinding]:
    hosts = {h.external_id: h for h in Host.objects.filter(manager=manager)}
    devices = {
        d.external_id: d
        for d in Device.objects.filter(
            manager=manager, external_id__in=[b.device_id for b in orphans]
        )
    }
    findings = []
    for binding in orphans:
        device, host = devices.get(binding.device_id), hosts.get(binding.host_id)
        name = device.name if device else binding.device_id
        where = host.name if host else binding.host_id
        error = reconfig.unbind(driver, binding.binding_id)
        finding = ReconcileFinding(
            kind=FindingKind.ORPHAN,
            manager=manager,
            device=device,
            host=host,
            binding_id=binding.binding_id,
            outcome=FindingOutcome.REPAIRED,
            action=f"Unbound {name} from {where}: no composition claims that binding",
        )
        if error is None:
            logger.warning("reconcile: unbound orphan binding %s (%s)", binding.binding_id, name)
            if device is not None and host is not None and binding.size_gib is None:
                # Inventory sync may have marked it bound to that host: it is free again.
                device_unbound(device_id=device.pk, host=host, message=finding.action)
        else:
            finding.outcome = FindingOutcome.PENDING
            finding.action = f"Could not unbind {name} from {where} yet; retried at the next run"
            finding.detail = error.message
            if device is not None and host is not None:
                _hold(device, host, binding, error.message)
        findings.append(finding)
    return findings


def _hold(device: Device, host: Host, binding: Binding, error: str) -> None:
    """An orphan that could not be unbound holds its device (an `UnbindPending` row, BOUND
    to `host`) unless a composition holds the whole device meanwhile: no claim may take a
    device still bound on the fabric. A slice's GiB are counted by the recount (step 5)."""
    with transaction.atomic():
        locked = Device.objects.select_for_update().get(pk=device.pk)
        claimed = Allocation.objects.filter(device=locked, released_at__isnull=True).exists()
        if claimed and binding.size_gib is None:
            return
        UnbindPending.objects.get_or_create(
            host=host,
            binding_id=binding.binding_id,
            undone_at=None,
            defaults={
                "device": locked,
                "gib": binding.size_gib,
                "attempts": 1,
                "last_error": error[:2000],
                "source": SOURCE,
            },
        )
        if binding.size_gib is None and locked.state in (DeviceState.FREE, DeviceState.RESERVED):
            Device.objects.filter(pk=locked.pk).update(state=DeviceState.BOUND, bound_host=host)
            change_record(
                locked,
                ChangeAction.CHANGED,
                {"state": (locked.state, DeviceState.BOUND), "bound_host": (None, host.name)},
                message=(
                    f"Being cleaned up: bound to {host.name} on the fabric with no composition "
                    "claiming it; the reconciler retries the unbind"
                ),
                source=SOURCE,
            ).save()


def _missing(
    manager: FabricManager, driver: FabricDriver, allocation: Allocation
) -> ReconcileFinding:
    composition: Composition = allocation.composition
    host = composition.host
    assert host is not None  # filtered by the caller: its host's manager
    name = allocation.device.name
    finding = ReconcileFinding(
        kind=FindingKind.MISSING,
        manager=manager,
        device=allocation.device,
        host=host,
        composition=composition,
        binding_id=allocation.binding_id,
        outcome=FindingOutcome.REPAIRED,
        action=f"{name} was no longer bound to {host.name}; bound it again",
    )
    try:
        # After a timeout the manager is asked whether the bind happened.
        binding = reconfig.bind(
            driver, allocation_target(allocation, host), narrator=JobNarrator(host)
        )
    except DriverError as exc:
        finding.outcome = FindingOutcome.REPORTED
        finding.action = (
            f"{name} is no longer bound to {host.name} and could not be bound again; "
            "tried again at the next run"
        )
        finding.detail = exc.message
        logger.error("reconcile: binding %s of %s is missing: %s", allocation.pk, name, exc.message)
        return finding
    with transaction.atomic():
        still = Composition.objects.select_for_update().filter(pk=composition.pk).first()
        if still is None or still.state not in SETTLED or not _active(allocation):
            # It changed meanwhile (a decompose began): the new binding is undone again, and
            # a failure leaves it to the next run's orphan check.
            error = reconfig.unbind(driver, binding.binding_id)
            finding.outcome = FindingOutcome.REPORTED
            finding.action = f"{name} was missing; its composition changed meanwhile"
            finding.detail = error.message if error is not None else ""
            return finding
        allocation_mark_bound(
            allocation=allocation, binding_id=binding.binding_id, host=host, source=SOURCE
        )
    finding.detail = f"new binding {binding.binding_id}"
    logger.warning(
        "reconcile: binding %s of %s was missing; bound again as %s",
        allocation.binding_id,
        name,
        binding.binding_id,
    )
    return finding


def _active(allocation: Allocation) -> bool:
    return Allocation.objects.filter(pk=allocation.pk, released_at__isnull=True).exists()
