"""The periodic recount of memory devices' `allocated_gib` from the slices that hold them.

Every claim and give-back keeps `Device.allocated_gib` under the device's row lock, so the
figure should never drift; if it does (a bug, a hand edit, a restore), a figure too high
strands GiB and one too low lets the same GiB be handed out twice. The reconciler
(`composer.services.reconcile`) recounts it and corrects each drift, audited.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection

from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from composer.models import Allocation, UnbindPending
from composer.selectors.allocations import allocation_held_states
from fabric.capacity import SLICEABLE_STATES, held_state
from fabric.choices import ChangeAction, DeviceState
from fabric.kinds import partitioned
from fabric.models import Device
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = ["devices_allocated_reconcile", "slices_held_gib"]

SOURCE = "reconciliation"


def slices_held_gib(device_ids: Collection[int] | None = None) -> dict[int, int]:
    """Device -> the GiB its slices hold (of `device_ids`, or every device): the unreleased
    slices, plus those released with an unbind still pending (still on the fabric, so kept
    out of the pool: `UnbindPending`). Devices holding nothing are left out. Two queries.

    The same count as the backfill in composer/migrations/0005_device_allocated_gib.py,
    which keeps its own copy: a migration must not import code that may change after it.
    """
    unreleased = Allocation.objects.filter(released_at__isnull=True, gib__isnull=False)
    if device_ids is not None:
        unreleased = unreleased.filter(device_id__in=list(device_ids))
    held: dict[int, int] = defaultdict(int)
    for device_id, total in (
        unreleased.order_by()
        .values("device_id")
        .annotate(total=Sum("gib"))
        .values_list("device_id", "total")
    ):
        held[device_id] += total or 0
    # Slices released whose unbind is still pending: still on the fabric, still held.
    pending = UnbindPending.objects.filter(undone_at__isnull=True, gib__isnull=False)
    if device_ids is not None:
        pending = pending.filter(device_id__in=list(device_ids))
    counted: set[tuple[int, int | None]] = set()
    for device_id, allocation_id, gib in pending.values_list("device_id", "allocation_id", "gib"):
        # One slice may have left two bindings behind; its GiB are counted once.
        key = (device_id, allocation_id)
        if allocation_id is not None and key in counted:
            continue
        counted.add(key)
        held[device_id] += gib or 0
    return dict(held)


def devices_allocated_reconcile() -> list[int]:
    """Recount every memory device's `allocated_gib` from its slices (`slices_held_gib`) and
    correct each one that drifted; its state follows (FREE / RESERVED / BOUND) unless it is
    failed, in maintenance or absent. Returns the ids corrected.

    A drift is corrected only if the recount under the device's row lock still finds it as
    the first count did: a claim or release committing meanwhile is left alone (the next
    pass sees it settled). Each correction is a ChangeRecord (source "reconciliation") and a
    warning in the log.
    """
    expected = slices_held_gib()
    memory = Device.objects.filter(Q(kind__in=partitioned("slices")) | Q(pk__in=list(expected)))
    drifted = [
        (pk, recorded)
        for pk, recorded in memory.values_list("pk", "allocated_gib")
        if recorded != expected.get(pk, 0)
    ]
    corrected: list[int] = []
    for pk, recorded in drifted:
        with transaction.atomic():
            device = Device.objects.select_for_update().filter(pk=pk).first()
            held = slices_held_gib([pk]).get(pk, 0)
            if device is None or (device.allocated_gib, held) != (recorded, expected.get(pk, 0)):
                continue  # changed since the first count: a claim or release in flight
            state = device.state
            if state in SLICEABLE_STATES:
                claimed = allocation_held_states([pk]).get(pk)
                state = held_state(claimed=claimed, allocated_gib=held) or DeviceState.FREE
            Device.objects.filter(pk=pk).update(
                allocated_gib=held, state=state, updated_at=timezone.now()
            )
            changes: dict[str, tuple[object, object]] = {"allocated_gib": (recorded, held)}
            if state != device.state:
                changes["state"] = (device.state, state)
            change_record(
                device,
                ChangeAction.CHANGED,
                changes,
                message=(
                    f"Allocated memory recounted from the compositions' slices: {held} GiB "
                    f"held, {recorded} GiB recorded"
                ),
                source=SOURCE,
            ).save()
        logger.warning(
            "device %s: allocated_gib was %s, its slices hold %s GiB; corrected", pk, recorded, held
        )
        corrected.append(pk)
    return corrected
