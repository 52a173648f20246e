"""The bindings still to undo (`UnbindPending`) that hold a device, and their retries.

A rollback (compose or heal) or a heal's swap unbinds what it no longer wants through
`fabric.reconfig` (`undo`: a transient driver error tried again at once, with back-off, a
few times within a few seconds: COMPOSER_UNBIND_ATTEMPTS, COMPOSER_UNBIND_BACKOFF_MS). What
still fails is not kept on the composition: its allocation is released (a FAILED
composition never holds a device), and an `UnbindPending` row takes the device over
instead. A whole device stays BOUND to the host, a memory slice's GiB stay in its device's
`allocated_gib`, so no claim can have it while it is still bound on the fabric; the
reconciler retries the unbind (`unbinds_pending_retry`) and gives the device back once the
manager confirms.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from composer.choices import AllocationState
from composer.models import Allocation, Composition, UnbindPending
from composer.services.allocations import slices_give_back
from fabric import reconfig
from fabric.choices import ChangeAction, DeviceState
from fabric.drivers.base import DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Device, Host
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = [
    "PendingAttempt",
    "allocation_release_unbind_pending",
    "device_unbound",
    "unbind_held_states",
    "unbinds_pending_retry",
]

SOURCE = "reconciliation"


def allocation_release_unbind_pending(
    *,
    composition: Composition,
    allocation: Allocation,
    host: Host,
    not_undone: dict[str, str],
    source: str,
) -> None:
    """Release `allocation` (inside the caller's transaction) whose bindings `not_undone`
    ({binding id: last error}) are still on the fabric: an `UnbindPending` row per binding
    holds the device instead (a whole device BOUND to `host`, a slice's GiB still counted).
    Audited on the device."""
    now = timezone.now()
    released = Allocation.objects.filter(pk=allocation.pk, released_at__isnull=True).update(
        state=AllocationState.RELEASED, released_at=now
    )
    if not released:
        return
    device = Device.objects.select_for_update().get(pk=allocation.device_id)
    changes: dict[str, tuple[object, object]] = {}
    if allocation.gib is None and device.state in (DeviceState.RESERVED, DeviceState.BOUND):
        # It is bound on the fabric (a lost reply may have left it RESERVED here).
        Device.objects.filter(pk=device.pk).update(
            state=DeviceState.BOUND, bound_host=host, updated_at=now
        )
        if device.state != DeviceState.BOUND:
            changes["state"] = (device.state, DeviceState.BOUND)
        if device.bound_host_id != host.pk:
            changes["bound_host"] = (None, host.name)
    for binding_id, error in not_undone.items():
        UnbindPending.objects.get_or_create(
            host=host,
            binding_id=binding_id,
            undone_at=None,
            defaults={
                "device_id": device.pk,
                "gib": allocation.gib,
                "composition": composition,
                "allocation": allocation,
                "attempts": 1,
                "last_error": error,
                "source": source,
                "last_attempt_at": now,
            },
        )
    change_record(
        device,
        ChangeAction.CHANGED,
        changes,
        message=(
            f"Released by composition {composition.name}; being cleaned up: its binding to "
            f"{host.name} ({', '.join(sorted(not_undone))}) could not be undone yet and is "
            "retried by the reconciler"
        ),
        source=source,
    ).save()
    logger.warning(
        "composition %s released %s with %s binding(s) still on the fabric manager; the "
        "reconciler retries the unbind and the device stays held until then",
        composition.pk,
        device.name,
        len(not_undone),
    )


def unbind_held_states(device_ids: Collection[int]) -> dict[int, str]:
    """Registered with `fabric.holders`: a device with a binding still to undo is BOUND
    (it is, on the fabric), so the health poll and inventory sync never make it FREE."""
    if not device_ids:
        return {}
    rows = UnbindPending.objects.filter(device_id__in=list(device_ids), undone_at__isnull=True)
    return {pk: DeviceState.BOUND for pk in rows.values_list("device_id", flat=True).distinct()}


@dataclass(frozen=True)
class PendingAttempt:
    """What one retry of a binding still to undo came to."""

    pending: UnbindPending
    undone: bool
    error: str = ""


def unbinds_pending_retry(*, manager_ids: Sequence[int] | None = None) -> list[PendingAttempt]:
    """Try each binding still to undo once more, with its retries (of hosts of
    `manager_ids`, or all); `attempts` counts these runs.

    Unbound (or no longer known to the manager: unbind is idempotent) -> the row is closed
    under its row lock and the device given back: a whole device BOUND to that host and
    held by nothing else goes FREE, a slice's GiB go back to its device's pool. Two runs at
    once give each back once: only the run that closes the row gives anything back.
    """
    rows = UnbindPending.objects.filter(undone_at__isnull=True).select_related(
        "device", "host__manager", "composition"
    )
    if manager_ids is not None:
        rows = rows.filter(host__manager_id__in=list(manager_ids))
    attempts: list[PendingAttempt] = []
    drivers: dict[int, FabricDriver] = {}
    for row in rows.order_by("pk"):
        try:
            driver = drivers.get(row.host.manager_id) or get_driver(row.host.manager)
            drivers[row.host.manager_id] = driver
            failure = reconfig.unbind(driver, row.binding_id)
            error = failure.message if failure is not None else None
        except DriverError as exc:  # no driver for its manager
            error = exc.message
        now = timezone.now()
        if error is not None:
            UnbindPending.objects.filter(pk=row.pk, undone_at__isnull=True).update(
                attempts=row.attempts + 1, last_error=error[:2000], last_attempt_at=now
            )
            logger.warning("unbind of %s (%s) failed again: %s", row.device, row.binding_id, error)
            attempts.append(PendingAttempt(row, undone=False, error=error))
            continue
        if _close(row, now):
            logger.info("unbound %s (%s) at last", row.device.name, row.binding_id)
            attempts.append(PendingAttempt(row, undone=True))
    return attempts


def _close(row: UnbindPending, now: object) -> bool:
    """Close `row` and give its device back; False when another run closed it first."""
    with transaction.atomic():
        locked = UnbindPending.objects.select_for_update().filter(pk=row.pk).first()
        if locked is None or locked.undone_at is not None:
            return False
        UnbindPending.objects.filter(pk=row.pk).update(
            undone_at=now, attempts=locked.attempts + 1, last_attempt_at=now, last_error=""
        )
        name = row.composition.name if row.composition else "a composition since removed"
        message = f"Unbound at last (released by {name})"
        if row.gib is not None:
            # A slice that left two bindings behind gives its GiB back with the last one
            # (`slices_held_gib` counts them once).
            siblings = UnbindPending.objects.filter(
                allocation=row.allocation, undone_at__isnull=True
            ).exclude(pk=row.pk)
            if row.allocation_id is None or not siblings.exists():
                slices_give_back(
                    device_id=row.device_id, gib=row.gib, message=message, source=SOURCE
                )
            return True
        device_unbound(device_id=row.device_id, host=row.host, message=message)
    return True


def device_unbound(*, device_id: int, host: Host, message: str) -> None:
    """`device_id`'s binding to `host` is gone from the fabric: when nothing holds the device
    any more (no active allocation, no other binding of it to `host` still to undo), it is
    no longer bound to `host`, and a BOUND one is FREE again. Audited; inside or outside
    the caller's transaction."""
    with transaction.atomic():
        device = Device.objects.select_for_update().filter(pk=device_id).first()
        if device is None or device.bound_host_id != host.pk:
            return
        still = UnbindPending.objects.filter(
            device_id=device_id, host=host, undone_at__isnull=True
        ).exists()
        if still:
            return  # another binding of it to that host is still on the fabric
        held = Allocation.objects.filter(device_id=OuterRef("pk"), released_at__isnull=True)
        free = device.state == DeviceState.BOUND
        changed = (
            Device.objects.filter(pk=device.pk, bound_host=host)
            .exclude(Exists(held))
            .update(
                state=DeviceState.FREE if free else device.state,
                bound_host=None,
                updated_at=timezone.now(),
            )
        )
        if changed:
            changes: dict[str, tuple[object, object]] = {"bound_host": (host.name, None)}
            if free:
                changes["state"] = (DeviceState.BOUND, DeviceState.FREE)
            change_record(
                device, ChangeAction.CHANGED, changes, message=message, source=SOURCE
            ).save()
