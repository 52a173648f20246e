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
from composer.services.allocations.claims import _source
from fabric.capacity import SLICEABLE_STATES
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
    keep: Sequence[int] = (),
) -> int:
    """Release the unreleased allocations of `composition` (those in `only`, or all) except
    those in `keep` (allocations whose binding could not be undone: they stay recorded).
    Whole devices go back RESERVED/BOUND -> FREE (compare-and-set; a FAILED device stays
    FAILED); memory devices give their slices' GiB back (`slices_give_back`); each device
    changed gets a ChangeRecord. Returns how many were released.
    """
    now = timezone.now()
    with transaction.atomic():
        rows_qs = Allocation.objects.filter(
            composition=composition, released_at__isnull=True
        ).exclude(pk__in=list(keep))
        if only is not None:
            rows_qs = rows_qs.filter(pk__in=list(only))
        rows = list(rows_qs.order_by("device_id"))
        if not rows:
            return 0
        sliced: dict[int, int] = defaultdict(int)  # device -> GiB given back
        for row in rows:
            if row.gib is not None:
                sliced[row.device_id] += row.gib
        # Lock the devices (id order, as claims do) before giving them back.
        devices = list(
            Device.objects.select_for_update()
            .filter(pk__in=[a.device_id for a in rows])
            .order_by("pk")
        )
        Allocation.objects.filter(pk__in=[a.pk for a in rows]).update(
            state=AllocationState.RELEASED, released_at=now
        )
        records = []
        message = f"Released by composition {composition.name}"
        for device in devices:
            if device.pk in sliced:
                record = _give_back(
                    device,
                    sliced[device.pk],
                    message=message,
                    actor=actor,
                    source=source or _source(composition),
                )
                if record is not None:
                    records.append(record)
                continue
            updated = Device.objects.filter(
                pk=device.pk, state__in=[DeviceState.RESERVED, DeviceState.BOUND]
            ).update(state=DeviceState.FREE, bound_host=None, updated_at=now)
            if updated:
                records.append(
                    change_record(
                        device,
                        ChangeAction.CHANGED,
                        {"state": (device.state, DeviceState.FREE)},
                        message=message,
                        actor=actor,
                        source=source or _source(composition),
                    )
                )
        ChangeRecord.objects.bulk_create(records)
    logger.info("composition %s released %s allocation(s)", composition.pk, len(rows))
    return len(rows)


def slices_give_back(
    *, device_id: int, gib: int, message: str, actor: Any = None, source: str = ""
) -> None:
    """Give `gib` GiB of memory device `device_id` back to its pool, for slices already
    released whose unbind was pending until now (see `composer.services.heal.undo`). Locks
    the device; writes a ChangeRecord."""
    with transaction.atomic():
        device = Device.objects.select_for_update().filter(pk=device_id).first()
        if device is None:
            return
        record = _give_back(device, gib, message=message, actor=actor, source=source)
        if record is not None:
            record.save()


def _give_back(
    device: Device, gib: int, *, message: str, actor: Any, source: str
) -> ChangeRecord | None:
    """`gib` fewer GiB held on `device` (locked by the caller, its slices' Allocation rows
    already released); its state follows what still holds it. Returns the ChangeRecord."""
    if gib > device.allocated_gib:
        logger.warning(
            "device %s gives back %s GiB but held only %s GiB", device.pk, gib, device.allocated_gib
        )
    left = max(0, device.allocated_gib - gib)
    state = device.state
    if state in SLICEABLE_STATES:
        state = _sliced_state(device, left)
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


def _sliced_state(device: Device, held_gib: int) -> str:
    """The state of a memory device holding `held_gib` GiB: FREE with none; RESERVED while
    only claimed slices hold it; else BOUND (a bound slice, or one whose unbind is pending)."""
    if held_gib == 0:
        return DeviceState.FREE
    states = set(
        Allocation.objects.filter(device=device, released_at__isnull=True).values_list(
            "state", flat=True
        )
    )
    if states and states <= {AllocationState.RESERVED}:
        return DeviceState.RESERVED
    return DeviceState.BOUND
