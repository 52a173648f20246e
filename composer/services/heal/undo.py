"""Swapping a spare in, undoing a heal, and the unbinds retried later (rule 2)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from composer.choices import AllocationState, CompositionState
from composer.errors import InvalidTransition, StaleState
from composer.models import Allocation, Composition, Job
from composer.runner import for_tenants
from composer.services.allocations import allocations_release, slices_give_back
from composer.services.bindings import _matches, manager_bindings
from composer.services.heal.common import (
    HEALED_KEY,
    HEALING_KEY,
    UNBIND_PENDING_KEY,
    _active,
    _records,
)
from composer.states import composition_transition
from fabric.choices import ChangeAction, DeviceState
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import ChangeRecord, Device, Host
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

# --- swapping in, and undoing ----------------------------------------------------------------


def _unbind_all(
    driver: FabricDriver, allocation: Allocation, host: Host, reported: list[Binding] | None
) -> list[str]:
    """Unbind what `allocation` bound (its recorded id, and bindings the manager reports
    for it that a lost reply never recorded). Returns the binding ids not undone."""
    ids = {allocation.binding_id} if allocation.binding_id else set()
    if reported is not None:
        ids |= {b.binding_id for b in reported if _matches(b, allocation, host)}
    left = []
    name = allocation.device.name
    for binding_id in sorted(ids):
        try:
            driver.unbind(binding_id=binding_id)
            logger.info("unbound %s (%s)", name, binding_id, extra=for_tenants(f"Unbound {name}."))
        except DriverError as exc:
            logger.error(
                "could not unbind %s (%s): %s; kept for reconciliation to retry",
                name,
                binding_id,
                exc.message,
                extra=for_tenants(f"Could not unbind {name} yet; it is tried again later."),
            )
            left.append(binding_id)
    return left


def _release(
    composition: Composition,
    allocation: Allocation,
    not_undone: Sequence[str],
    host: Host,
    source: str,
    placement: dict[str, Any],
) -> dict[str, Any]:
    """Release `allocation` (inside the caller's transaction). When some of its bindings
    could not be undone, the allocation is released but its device (a slice: its GiB, in
    the device's `allocated_gib`) is kept out of the pool and the bindings go to
    `placement["unbind_pending"]`; returns the placement."""
    if not not_undone:
        allocations_release(composition=composition, source=source, only=[allocation.pk])
        return placement
    now = timezone.now()
    Allocation.objects.filter(pk=allocation.pk, released_at__isnull=True).update(
        state=AllocationState.RELEASED, released_at=now
    )
    change_record(
        allocation.device,
        ChangeAction.CHANGED,
        {},
        message=(
            f"Released by composition {composition.name}; binding "
            f"{', '.join(not_undone)} could not be undone yet (retried by reconciliation)"
        ),
        source=source,
    ).save()
    pending = list(placement.get(UNBIND_PENDING_KEY) or [])
    pending += [
        {
            "binding_id": binding_id,
            "allocation": allocation.pk,
            "device_id": allocation.device_id,
            "device": allocation.device.name,
            "host_id": host.pk,
            "since": now.isoformat(),
        }
        for binding_id in not_undone
    ]
    logger.warning(
        "released %s with %s binding(s) still on the fabric manager; reconciliation retries "
        "the unbind, and the device stays out of the pool until then",
        allocation.device.name,
        len(not_undone),
    )
    return {**placement, UNBIND_PENDING_KEY: pending}


def _swap(
    job: Job,
    composition: Composition,
    record: dict[str, Any],
    driver: FabricDriver,
    reported: list[Binding],
    host: Host,
    source: str,
) -> dict[str, Any]:
    """Unbind and release the lost device, put the spare in the plan, drop the record."""
    lost = Allocation.objects.select_related("device").filter(pk=record["failed"]).first()
    not_undone: list[str] = []
    if lost is not None and lost.released_at is None:
        not_undone = _unbind_all(driver, lost, host, reported)
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        placement = dict(locked.placement or {})
        if lost is not None and lost.released_at is None:
            placement = _release(locked, lost, not_undone, host, source, placement)
            logger.info("released %s", lost.device.name, extra=for_tenants())
        key = "memory" if record["gib"] else "devices"
        picks = list(placement.get(key) or [])
        at = next(
            (
                i
                for i, p in enumerate(picks)
                if p.get("device") == record["device"] and p.get("gib") == record["gib"]
            ),
            None,
        )
        new = [p for p in record["picks"] if (p["gib"] is not None) == (key == "memory")]
        others = [p for p in record["picks"] if p not in new]
        if at is None:
            picks += new
        else:
            picks[at : at + 1] = new
        placement[key] = picks
        if others:  # a whole drive for a whole drive, a slice for a slice: kept just in case
            other_key = "devices" if key == "memory" else "memory"
            placement[other_key] = [*(placement.get(other_key) or []), *others]
        names = [p["name"] for p in record["picks"]]
        placement["explanation"] = [
            *(placement.get("explanation") or []),
            f"Self-heal (job {job.pk}): {record['name']} ({record['why']}) replaced by "
            + ", ".join(f"{p['name']} at {p['latency_ns']} ns" for p in record["picks"])
            + ".",
        ]
        placement[HEALED_KEY] = [
            *(placement.get(HEALED_KEY) or []),
            {
                "job": job.pk,
                "at": timezone.now().isoformat(),
                "failed": record["name"],
                "why": record["why"],
                "replacement": names,
            },
        ]
        placement[HEALING_KEY] = [
            r for r in placement.get(HEALING_KEY) or [] if r["failed"] != record["failed"]
        ]
        if not placement[HEALING_KEY]:
            del placement[HEALING_KEY]
        Composition.objects.filter(pk=locked.pk).update(
            placement=placement, updated_at=timezone.now()
        )
        composition.placement = placement
    return {"failed": record["name"], "replacement": names, "unbind_pending": not_undone}


def _rollback(
    composition: Composition, driver: FabricDriver | None, reason: str, source: str
) -> None:
    """Undo what this heal claimed and bound, back to DEGRADED with `reason`. Safe twice.

    Spares already swapped in stay (they replaced a lost device for good). A spare whose
    unbind fails is released with its binding kept in `unbind_pending`, like a lost device.
    """
    composition.refresh_from_db()
    if composition.state != CompositionState.HEALING:
        return
    said = "Self-heal rolled back"
    logger.warning(
        "composition %s: heal rolled back (%s)",
        composition.pk,
        reason,
        extra=for_tenants(reason if reason.startswith(said) else f"{said}: {reason}"),
    )
    records = _records(composition)
    spares = _active([pk for r in records for pk in r["replacements"]])
    host = composition.host
    left: dict[int, list[str]] = {}
    if spares and host is not None:
        try:
            driver = driver or get_driver(host.manager)
            reported = manager_bindings(driver)
            left = {a.pk: _unbind_all(driver, a, host, reported) for a in spares}
        except DriverError as exc:  # no driver at all: what was bound stays recorded
            logger.error(
                "heal rollback of composition %s: %s",
                composition.pk,
                exc.message,
                extra=for_tenants("The fabric manager cannot be reached: nothing was unbound."),
            )
            left = {a.pk: [a.binding_id] if a.binding_id else [] for a in spares}
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        placement = dict(locked.placement or {})
        for spare in spares:
            if host is not None:
                placement = _release(locked, spare, left.get(spare.pk, []), host, source, placement)
            else:
                allocations_release(composition=locked, source=source, only=[spare.pk])
        placement.pop(HEALING_KEY, None)
        Composition.objects.filter(pk=locked.pk).update(placement=placement)
        composition.placement = placement
        try:
            composition_transition(
                locked,
                CompositionState.DEGRADED,
                reason=reason,
                source=source,
                failure_reason=reason,
            )
        except (StaleState, InvalidTransition):
            logger.warning("composition %s changed during its heal rollback", composition.pk)
    composition.state = locked.state


def heal_unbinds_retry() -> list[str]:
    """Retry the unbinds a heal could not do (`placement["unbind_pending"]`).

    Each binding the manager now removes (or no longer has: unbind is idempotent) leaves
    the record, and its device, if it is BOUND and nothing holds it, goes back FREE (a
    FAILED one stays FAILED until inventory sync sees it repaired); a memory slice's GiB go
    back to the device's pool once none of its bindings is pending. Returns the binding ids
    this run took off the pending list; failures are logged and retried next time. Two runs
    at once give each slice back once: the list is re-read under the composition's row
    lock, and only entries still on it are given back.
    """
    undone: list[str] = []
    for composition in Composition.objects.filter(placement__has_key=UNBIND_PENDING_KEY):
        entries = list((composition.placement or {}).get(UNBIND_PENDING_KEY) or [])
        done: list[dict[str, Any]] = []
        for entry in entries:
            host = Host.objects.select_related("manager").filter(pk=entry["host_id"]).first()
            try:
                if host is None:
                    raise DriverError(f"host {entry['host_id']} no longer exists", permanent=True)
                get_driver(host.manager).unbind(binding_id=entry["binding_id"])
            except DriverError as exc:
                logger.warning(
                    "composition %s: unbind of %s (%s) failed again: %s",
                    composition.pk,
                    entry["device"],
                    entry["binding_id"],
                    exc.message,
                )
                continue
            logger.info(
                "composition %s: unbound %s (%s) at last",
                composition.pk,
                entry["device"],
                entry["binding_id"],
            )
            done.append(entry)
        if not done:
            continue
        with transaction.atomic():
            locked = Composition.objects.select_for_update().get(pk=composition.pk)
            placement = dict(locked.placement or {})
            pending = list(placement.get(UNBIND_PENDING_KEY) or [])
            # Only what is still pending under the lock: another run may have removed (and
            # given back) some of `done` while this one waited on the manager.
            gone = {e["binding_id"] for e in done} & {e["binding_id"] for e in pending}
            if not gone:
                continue
            left = [e for e in pending if e["binding_id"] not in gone]
            if left:
                placement[UNBIND_PENDING_KEY] = left
            else:
                placement.pop(UNBIND_PENDING_KEY, None)
            Composition.objects.filter(pk=locked.pk).update(placement=placement)
            still = {e.get("allocation") for e in left}
            _free_devices(
                locked,
                [
                    e
                    for e in pending
                    if e["binding_id"] in gone and e.get("allocation") not in still
                ],
            )
        undone += sorted(gone)
    return undone


def _free_devices(composition: Composition, entries: Sequence[dict[str, Any]]) -> None:
    """Give back what the unbinds in `entries` (none of their allocations has a binding
    still pending) kept out of the pool: a whole device, a memory slice's GiB."""
    held = Allocation.objects.filter(device_id=OuterRef("pk"), released_at__isnull=True)
    records = []
    # The slices among them: their GiB go back once, whatever the number of bindings.
    slices: dict[int, int] = dict(
        Allocation.objects.filter(
            pk__in={e.get("allocation") for e in entries}, gib__isnull=False
        ).values_list("pk", "gib")
    )
    given_back: set[int] = set()
    for entry in entries:
        allocation = entry.get("allocation")
        if isinstance(allocation, int) and allocation in slices:
            if allocation not in given_back:
                given_back.add(allocation)
                slices_give_back(
                    device_id=entry["device_id"],
                    gib=slices[allocation],
                    message=f"Unbound at last for composition {composition.name}",
                    source="reconciliation",
                )
            continue
        device = Device.objects.filter(pk=entry["device_id"]).first()
        if device is None:
            continue
        # Compare-and-set: only a device still bound to that host and held by nobody.
        freed = (
            Device.objects.filter(
                pk=device.pk, state=DeviceState.BOUND, bound_host_id=entry["host_id"]
            )
            .exclude(Exists(held))
            .update(state=DeviceState.FREE, bound_host=None, updated_at=timezone.now())
        )
        if freed:
            records.append(
                change_record(
                    device,
                    ChangeAction.CHANGED,
                    {"state": (DeviceState.BOUND, DeviceState.FREE)},
                    message=f"Unbound at last for composition {composition.name}",
                    source="reconciliation",
                )
            )
    ChangeRecord.objects.bulk_create(records)
