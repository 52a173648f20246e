"""Releasing a composition's allocations, and giving a memory device's GiB back.

See the package's docstring for how rule 1 is enforced.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import AllocationState
from composer.models import Allocation, Composition
from composer.selectors.allocations import allocation_held_states
from composer.services.allocations.claims import composition_source
from composer.services.allocations.shares import give_back_shares
from fabric.capacity import SLICEABLE_STATES, held_state
from fabric.choices import ChangeAction, DeviceState
from fabric.models import ChangeRecord, Device
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = ["allocations_release", "slices_give_back"]


def allocations_release(
    *,
    composition: Composition,
    actor: Any = None,
    source: str = "",
    only: Sequence[int] | None = None,
) -> int:
    """Release the unreleased allocations of `composition` (those in `only`, or all) whose
    bindings are undone (one that could not be undone is released by
    `composer.services.unbinds.allocation_release_unbind_pending` instead, which keeps the
    device held). Whole devices go back RESERVED/BOUND -> FREE (compare-and-set; a FAILED
    device, or one in maintenance, keeps its state and loses its bound host: the caller
    undid the binding); memory devices give their slices' GiB back
    (`slices_give_back`), shared GPUs their shares (whole and FREE again with the last one,
    `shares.give_back_shares`); each device changed gets a ChangeRecord. Returns how many
    this call released.

    Safe when run twice at once (a decompose and a rollback, a redelivered job): the devices
    are locked first, then the allocations are read and locked again, and only what this
    call itself moved to RELEASED is given back, so no GiB (and no device) goes back twice
    while another composition may already hold it.
    """
    now = timezone.now()
    with transaction.atomic():
        rows_qs = Allocation.objects.filter(composition=composition, released_at__isnull=True)
        if only is not None:
            rows_qs = rows_qs.filter(pk__in=list(only))
        device_ids = sorted(set(rows_qs.values_list("device_id", flat=True)))
        if not device_ids:
            return 0
        # Lock the devices (id order, as claims do) before anything is read for good: a
        # release of the same allocations by another worker waits here, then finds them
        # released below.
        devices = list(Device.objects.select_for_update().filter(pk__in=device_ids).order_by("pk"))
        rows = list(
            rows_qs.filter(device_id__in=device_ids).select_for_update().order_by("device_id")
        )
        if not rows:
            return 0
        Allocation.objects.filter(pk__in=[a.pk for a in rows], released_at__isnull=True).update(
            state=AllocationState.RELEASED, released_at=now
        )
        sliced: dict[int, int] = defaultdict(int)  # device -> GiB this call gives back
        shared: dict[int, int] = defaultdict(int)  # device -> shares this call gives back
        whole: set[int] = set()
        for row in rows:
            if row.share is not None:
                shared[row.device_id] += row.share
            elif row.gib is None:
                whole.add(row.device_id)
            else:
                sliced[row.device_id] += row.gib
        claimed = allocation_held_states(list(sliced))  # what still holds them, once
        records = []
        message = f"Released by composition {composition.name}"
        for device in devices:
            if device.pk in shared:
                records.append(
                    give_back_shares(
                        device,
                        shared[device.pk],
                        message=message,
                        actor=actor,
                        source=source or composition_source(composition),
                    )
                )
            if device.pk in sliced:
                records.append(
                    _give_back(
                        device,
                        sliced[device.pk],
                        claimed=claimed.get(device.pk),
                        message=message,
                        actor=actor,
                        source=source or composition_source(composition),
                    )
                )
            if device.pk not in whole:
                continue
            updated = Device.objects.filter(
                pk=device.pk, state__in=[DeviceState.RESERVED, DeviceState.BOUND]
            ).update(state=DeviceState.FREE, bound_host=None, updated_at=now)
            changes: dict[str, tuple[Any, Any] | list[Any]] = {}
            if updated:
                changes["state"] = (device.state, DeviceState.FREE)
            elif device.bound_host_id is not None and device.bound_host_id == composition.host_id:
                # FAILED or in maintenance, it keeps its state, but its binding to this
                # composition's host is undone: held by nothing, it is not BOUND on recovery.
                Device.objects.filter(pk=device.pk).update(bound_host=None, updated_at=now)
                host = composition.host
                changes["bound_host"] = (host.name if host else device.bound_host_id, None)
            if changes:
                records.append(
                    change_record(
                        device,
                        ChangeAction.CHANGED,
                        changes,
                        message=message,
                        actor=actor,
                        source=source or composition_source(composition),
                    )
                )
        ChangeRecord.objects.bulk_create(records)
    logger.info("composition %s released %s allocation(s)", composition.pk, len(rows))
    return len(rows)


def slices_give_back(
    *, device_id: int, gib: int, message: str, actor: Any = None, source: str = ""
) -> None:
    """Give `gib` GiB of memory device `device_id` back to its pool, for slices already
    released whose unbind was pending until now (`composer.services.unbinds`). Locks the
    device; writes a ChangeRecord. The caller makes sure it gives each slice back once
    (`unbinds_pending_retry` does it as it closes the `UnbindPending` row, under its lock)."""
    with transaction.atomic():
        device = Device.objects.select_for_update().filter(pk=device_id).first()
        if device is None:
            return
        claimed = allocation_held_states([device.pk]).get(device.pk)
        _give_back(device, gib, claimed=claimed, message=message, actor=actor, source=source).save()


def _give_back(
    device: Device, gib: int, *, claimed: str | None, message: str, actor: Any, source: str
) -> ChangeRecord:
    """`gib` fewer GiB held on `device` (locked by the caller, its slices' Allocation rows
    already released); its state follows what still holds it (`claimed`: what its
    unreleased allocations imply, `fabric.capacity.held_state`). Returns the ChangeRecord.
    A figure that would go below zero is clamped and logged; the periodic reconcile
    (`devices_allocated_reconcile`) recounts it from the allocations."""
    if gib > device.allocated_gib:
        logger.warning(
            "device %s gives back %s GiB but held only %s GiB", device.pk, gib, device.allocated_gib
        )
    left = max(0, device.allocated_gib - gib)
    state = device.state
    if state in SLICEABLE_STATES:
        state = held_state(claimed=claimed, allocated_gib=left) or DeviceState.FREE
    Device.objects.filter(pk=device.pk).update(
        allocated_gib=left, state=state, updated_at=timezone.now()
    )
    changes: dict[str, tuple[Any, Any] | list[Any]] = {
        "allocated_gib": (device.allocated_gib, left)
    }
    if state != device.state:
        changes["state"] = (device.state, state)
    device.allocated_gib, device.state = left, state
    return change_record(
        device,
        ChangeAction.CHANGED,
        changes,
        message=f"{message}: {gib} GiB given back",
        actor=actor,
        source=source,
    )
