"""Allocations: claiming devices and memory slices for a composition, binding, releasing.

Rule 1 (never allocate a device or a GiB twice) is enforced in the database:

- the Device rows are locked (`SELECT ... FOR UPDATE`, in id order so that two claims
  never wait on each other in a cycle) before anything is checked;
- a whole device moves FREE -> RESERVED by compare-and-set on its state, and a partial
  unique index on Allocation(device) (whole, unreleased) refuses a second holder even if
  the Python checks were wrong;
- a CXL memory slice is granted only when, under the device's row lock, the unreleased
  slices plus the new one fit its `memory_gib`.

A claim that loses raises ClaimConflict and writes nothing (its savepoint is rolled back).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from composer.choices import AllocationState
from composer.errors import ClaimConflict
from composer.models import Allocation, Composition
from fabric.choices import ChangeAction, DeviceKind, DeviceState, Health
from fabric.models import ChangeRecord, Device, Host
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = [
    "Claim",
    "allocation_mark_bound",
    "allocations_claim",
    "allocations_release",
]


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing to claim: a whole device (`gib` None) or a `gib` slice of a memory device."""

    device_id: int
    gib: int | None = None


def _source(composition: Composition) -> str:
    return f"composition {composition.pk}"


def allocations_claim(
    *, composition: Composition, claims: Sequence[Claim], host: Host | None, actor: Any = None
) -> list[Allocation]:
    """Claim every device and slice in `claims` for `composition` on `host`, all or nothing.

    Side effects: Allocation rows (RESERVED); whole devices FREE -> RESERVED, each with a
    ChangeRecord. Raises ClaimConflict (nothing written) when a device is no longer free or
    usable, a slice no longer fits, another composition on the same host already holds a
    slice of the same memory device (the manager keeps one slice per device and host), or
    the database constraint refuses a second holder.
    """
    if not claims:
        return []
    ids = sorted({claim.device_id for claim in claims})
    if len(ids) != len(claims):
        raise ClaimConflict("The same device was claimed twice in one request.")
    try:
        with transaction.atomic():
            # Row locks in id order: concurrent claims of overlapping devices queue here.
            devices = {
                d.pk: d
                for d in Device.objects.select_for_update().filter(pk__in=ids).order_by("pk")
            }
            # Only slices need what is already sliced; whole-device requests skip the query.
            used: dict[int, int] = {}
            if any(claim.gib is not None for claim in claims):
                used = dict(
                    Allocation.objects.filter(
                        device_id__in=ids, released_at__isnull=True, gib__isnull=False
                    )
                    .values("device_id")
                    .annotate(total=Sum("gib"))
                    .values_list("device_id", "total")
                )
            allocations: list[Allocation] = []
            records: list[ChangeRecord] = []
            whole: list[Device] = []
            for claim in sorted(claims, key=lambda c: c.device_id):
                device = devices.get(claim.device_id)
                if device is None:
                    raise ClaimConflict(f"Device {claim.device_id} no longer exists.")
                if device.health == Health.CRITICAL:
                    raise ClaimConflict(f"Device {device.name} has failed.")
                if claim.gib is None:
                    _check_whole(device)
                    whole.append(device)
                    records.append(
                        change_record(
                            device,
                            ChangeAction.CHANGED,
                            {"state": (DeviceState.FREE, DeviceState.RESERVED)},
                            message=f"Reserved for composition {composition.name}",
                            actor=actor,
                            source=_source(composition),
                        )
                    )
                else:
                    _claim_slice(device, claim.gib, used.get(device.pk, 0))
                    if host is not None and (
                        Allocation.objects.filter(
                            device=device, released_at__isnull=True, composition__host=host
                        )
                        .exclude(composition=composition)
                        .exists()
                    ):
                        raise ClaimConflict(
                            f"Host {host.name} already holds a slice of {device.name}."
                        )
                allocations.append(
                    Allocation(composition=composition, device=device, gib=claim.gib)
                )
            _claim_whole(whole)
            for allocation in allocations:
                # The composition and the devices are rows in hand (the devices locked
                # above): validating those keys would only read each of them again.
                allocation.full_clean(exclude=["composition", "device"], validate_constraints=False)
            created = Allocation.objects.bulk_create(allocations)
            ChangeRecord.objects.bulk_create(records)
    except IntegrityError as exc:
        # The partial unique index caught a second holder: someone else got there first.
        raise ClaimConflict(f"A device was claimed by another composition first ({exc}).") from exc
    logger.info(
        "composition %s claimed %s device(s) and %s GiB of memory",
        composition.pk,
        sum(1 for c in claims if c.gib is None),
        sum(c.gib or 0 for c in claims),
    )
    return created


def _check_whole(device: Device) -> None:
    """ClaimConflict unless `device` (as read under its row lock) may be claimed whole."""
    if device.is_partitionable:
        raise ClaimConflict(f"Device {device.name} is CXL memory: claim it as a GiB slice.")
    if device.state != DeviceState.FREE:
        raise ClaimConflict(f"Device {device.name} is {device.state}, no longer free.")


def _claim_whole(devices: Sequence[Device]) -> None:
    """FREE -> RESERVED for every device in `devices`, in one compare-and-set UPDATE."""
    if not devices:
        return
    ids = [device.pk for device in devices]
    # Compare-and-set on the state, all at once: the rows are locked, but a sync (or, on
    # SQLite, another process) may still have changed one since it was read.
    now = timezone.now()
    updated = Device.objects.filter(pk__in=ids, state=DeviceState.FREE).update(
        state=DeviceState.RESERVED, updated_at=now
    )
    if updated != len(ids):
        # Which one was not free: not among the rows this UPDATE wrote (it is rolled back
        # with the caller's savepoint when ClaimConflict propagates).
        taken = (
            Device.objects.filter(pk__in=ids)
            .exclude(state=DeviceState.RESERVED, updated_at=now)
            .order_by("pk")
            .values_list("name", "state")
            .first()
        )
        name, state = taken or (devices[0].name, "taken")
        raise ClaimConflict(f"Device {name} is {state}, no longer free.")


def _claim_slice(device: Device, gib: int, used: int) -> None:
    if device.kind != DeviceKind.CXL_MEMORY:
        raise ClaimConflict(f"Device {device.name} is not partitionable.")
    if device.state != DeviceState.FREE:
        raise ClaimConflict(f"Device {device.name} is {device.state}.")
    if gib <= 0 or used + gib > device.memory_gib:
        raise ClaimConflict(
            f"Device {device.name} has {device.memory_gib - used} GiB unclaimed of "
            f"{device.memory_gib} GiB; {gib} GiB asked."
        )


def allocation_mark_bound(
    *, allocation: Allocation, binding_id: str, host: Host, source: str = ""
) -> Allocation:
    """Record that the driver bound `allocation` (its `binding_id`), committed at once.

    A whole device moves RESERVED -> BOUND with `bound_host` (compare-and-set; a sync may
    already have set BOUND from the manager's report). Idempotent.
    """
    now = timezone.now()
    with transaction.atomic():
        Allocation.objects.filter(pk=allocation.pk, released_at__isnull=True).update(
            binding_id=binding_id, state=AllocationState.BOUND, bound_at=now
        )
        if allocation.gib is None:
            device = allocation.device
            before = device.state
            updated = Device.objects.filter(
                pk=device.pk, state__in=[DeviceState.RESERVED, DeviceState.BOUND]
            ).update(state=DeviceState.BOUND, bound_host=host, updated_at=now)
            if updated and before != DeviceState.BOUND:
                change_record(
                    device,
                    ChangeAction.CHANGED,
                    {"state": (before, DeviceState.BOUND), "bound_host": (None, host.name)},
                    message=f"Bound to {host.name}",
                    source=source,
                ).save()
            device.state, device.bound_host = DeviceState.BOUND, host
    allocation.binding_id, allocation.state, allocation.bound_at = (
        binding_id,
        AllocationState.BOUND,
        now,
    )
    return allocation


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
    FAILED), each with a ChangeRecord. Returns how many were released.
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
        whole = [a.device_id for a in rows if a.gib is None]
        # Lock the devices (id order, as claims do) before giving them back.
        devices = {
            d.pk: d for d in Device.objects.select_for_update().filter(pk__in=whole).order_by("pk")
        }
        records = []
        for device in devices.values():
            updated = Device.objects.filter(
                pk=device.pk, state__in=[DeviceState.RESERVED, DeviceState.BOUND]
            ).update(state=DeviceState.FREE, bound_host=None, updated_at=now)
            if updated:
                records.append(
                    change_record(
                        device,
                        ChangeAction.CHANGED,
                        {"state": (device.state, DeviceState.FREE)},
                        message=f"Released by composition {composition.name}",
                        actor=actor,
                        source=source or _source(composition),
                    )
                )
        Allocation.objects.filter(pk__in=[a.pk for a in rows]).update(
            state=AllocationState.RELEASED, released_at=now
        )
        ChangeRecord.objects.bulk_create(records)
    logger.info("composition %s released %s allocation(s)", composition.pk, len(rows))
    return len(rows)
