"""What the compositions' allocations say about devices: the state their claims imply.

Registered with `fabric.holders` in ComposerConfig.ready(), so that the fabric's own
writers (health poll, inventory sync) never make a held device FREE, and the allocation
service reads the same answer when a memory device gives GiB back.
"""

from __future__ import annotations

from collections.abc import Collection

from composer.choices import AllocationState
from composer.models import Allocation
from fabric.choices import DeviceState

__all__ = ["allocation_held_states"]


def allocation_held_states(device_ids: Collection[int]) -> dict[int, str]:
    """For each device among `device_ids` with an unreleased allocation: BOUND when one of
    them is bound, else RESERVED (claimed, none bound yet). One query, none for no ids."""
    if not device_ids:
        return {}
    found: dict[int, str] = {}
    rows = Allocation.objects.filter(device_id__in=list(device_ids), released_at__isnull=True)
    for device_id, state in rows.order_by().values_list("device_id", "state").distinct():
        if state == AllocationState.BOUND:
            found[device_id] = DeviceState.BOUND
        else:
            found.setdefault(device_id, DeviceState.RESERVED)
    return found
