"""Claiming devices and memory slices for a composition, and recording their binds.

See the package's docstring for how rule 1 is enforced.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, F, IntegerField, Value, When
from django.utils import timezone

from composer.choices import AllocationState
from composer.errors import ClaimConflict
from composer.models import Allocation, Composition
from composer.services.allocations.shares import check_share, claim_shares
from fabric.capacity import SLICEABLE_STATES
from fabric.choices import ChangeAction, DeviceState, Health
from fabric.models import ChangeRecord, Device, Host
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = ["Claim", "allocation_mark_bound", "allocations_claim", "composition_source"]


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing to claim: a whole device (`gib` and `share` None), a `gib` slice of a
    memory device, or a `share` (thousandths) of a GPU."""

    device_id: int
    gib: int | None = None
    share: int | None = None


def composition_source(composition: Composition) -> str:
    """The audit's source for a change a composition made: "composition 12"."""
    return f"composition {composition.pk}"


def allocations_claim(
    *, composition: Composition, claims: Sequence[Claim], host: Host | None, actor: Any = None
) -> list[Allocation]:
    """Claim every device and slice in `claims` for `composition` on `host`, all or nothing.

    Side effects: Allocation rows (RESERVED); whole devices FREE -> RESERVED; memory
    devices' `allocated_gib` grows by their slices (FREE -> RESERVED at the first); shared
    GPUs' `allocated_shares` by their shares (`shares.claim_shares`); each device changed
    gets a ChangeRecord. Raises ClaimConflict (nothing written) when a device is no longer
    free or usable, a slice or a share no longer fits, a share's GPU is shared on another
    host, another composition on the same host already holds a slice of the same memory
    device (the manager keeps one slice per device and host), or the database refuses a
    second holder.
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
            allocations: list[Allocation] = []
            records: list[ChangeRecord] = []
            whole: list[Device] = []
            slices: list[tuple[Device, int]] = []
            shares: list[tuple[Device, int]] = []
            sliced = _sliced_for_host(composition, host, [c.device_id for c in claims if c.gib])
            for claim in sorted(claims, key=lambda c: c.device_id):
                device = devices.get(claim.device_id)
                if device is None:
                    raise ClaimConflict(f"Device {claim.device_id} no longer exists.")
                if device.health == Health.CRITICAL:
                    raise ClaimConflict(f"Device {device.name} has failed.")
                if claim.share is not None:
                    if host is None:
                        raise ClaimConflict(f"A share of {device.name} is claimed for a host.")
                    check_share(device, claim.share, host)
                    shares.append((device, claim.share))
                elif claim.gib is None:
                    _check_whole(device)
                    whole.append(device)
                    records.append(
                        change_record(
                            device,
                            ChangeAction.CHANGED,
                            {"state": (DeviceState.FREE, DeviceState.RESERVED)},
                            message=f"Reserved for composition {composition.name}",
                            actor=actor,
                            source=composition_source(composition),
                        )
                    )
                else:
                    if host is not None and device.pk in sliced:
                        raise ClaimConflict(
                            f"Host {host.name} already holds a slice of {device.name}."
                        )
                    _check_slice(device, claim.gib)
                    slices.append((device, claim.gib))
                allocations.append(
                    Allocation(
                        composition=composition, device=device, gib=claim.gib, share=claim.share
                    )
                )
            _claim_whole(whole)
            records += _claim_slices(slices, composition, actor)
            if host is not None:
                records += claim_shares(
                    shares,
                    host,
                    message=f"reserved for composition {composition.name} on {host.name}",
                    actor=actor,
                    source=composition_source(composition),
                )
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
        "composition %s claimed %s device(s), %s GiB of memory and %s share(s)",
        composition.pk,
        sum(1 for c in claims if c.gib is None and c.share is None),
        sum(c.gib or 0 for c in claims),
        sum(1 for c in claims if c.share is not None),
    )
    return created


def _check_whole(device: Device) -> None:
    """ClaimConflict unless `device` (as read under its row lock) may be claimed whole."""
    if device.is_partitionable:
        raise ClaimConflict(f"Device {device.name} is CXL memory: claim it as a GiB slice.")
    if device.allocated_shares:
        raise ClaimConflict(f"Device {device.name} is shared: claim a share of it, or another.")
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
    updated = Device.objects.filter(pk__in=ids, state=DeviceState.FREE, allocated_shares=0).update(
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


def _sliced_for_host(
    composition: Composition, host: Host | None, device_ids: Sequence[int]
) -> set[int]:
    """Which of `device_ids` already hold a slice for another composition on `host` (the
    manager keeps one slice of a device per host); one query, none without slices."""
    if host is None or not device_ids:
        return set()
    return set(
        Allocation.objects.filter(
            device_id__in=list(device_ids), released_at__isnull=True, composition__host=host
        )
        .exclude(composition=composition)
        .values_list("device_id", flat=True)
    )


def _check_slice(device: Device, gib: int) -> None:
    """ClaimConflict unless a `gib` slice of `device` (as read under its row lock) fits."""
    if not device.is_partitionable:
        raise ClaimConflict(f"Device {device.name} is not partitionable.")
    if device.state not in SLICEABLE_STATES:
        raise ClaimConflict(f"Device {device.name} is {device.state}.")
    free = max(0, device.memory_gib - device.allocated_gib)
    if gib <= 0 or gib > free:
        raise ClaimConflict(
            f"Device {device.name} has {free} GiB unclaimed of {device.memory_gib} GiB; "
            f"{gib} GiB asked."
        )


def _claim_slices(
    slices: Sequence[tuple[Device, int]], composition: Composition, actor: Any
) -> list[ChangeRecord]:
    """Each (device, gib) of `slices` (devices locked by the caller) holds `gib` more GiB,
    by one conditional UPDATE for all: the database grants them only while each fits and
    its device takes slices. Returns the ChangeRecords to write; raises ClaimConflict when
    one no longer fits (its savepoint rolls the others back)."""
    if not slices:
        return []
    ids = [device.pk for device, _ in slices]
    size = Case(
        *[When(pk=device.pk, then=Value(gib)) for device, gib in slices],
        output_field=IntegerField(),
    )
    now = timezone.now()
    granted = Device.objects.filter(
        pk__in=ids, state__in=SLICEABLE_STATES, allocated_gib__lte=F("memory_gib") - size
    ).update(
        allocated_gib=F("allocated_gib") + size,
        state=Case(
            When(state=DeviceState.FREE, then=Value(DeviceState.RESERVED)), default=F("state")
        ),
        updated_at=now,
    )
    if granted != len(slices):
        # A row changed since it was read (no row lock on SQLite): which one, by the rows
        # this UPDATE did not write.
        asked = {device.pk: (device.name, gib) for device, gib in slices}
        short = (
            Device.objects.filter(pk__in=ids)
            .exclude(updated_at=now)
            .order_by("pk")
            .values_list("pk", flat=True)
            .first()
        )
        name, gib = asked.get(short or 0) or asked[ids[0]]
        raise ClaimConflict(f"Device {name} no longer has {gib} GiB unclaimed.")
    records = []
    for device, gib in slices:
        changes: dict[str, tuple[Any, Any] | list[Any]] = {
            "allocated_gib": (device.allocated_gib, device.allocated_gib + gib)
        }
        if device.state == DeviceState.FREE:
            changes["state"] = (DeviceState.FREE, DeviceState.RESERVED)
            device.state = DeviceState.RESERVED
        device.allocated_gib += gib
        records.append(
            change_record(
                device,
                ChangeAction.CHANGED,
                changes,
                message=f"{gib} GiB reserved for composition {composition.name}",
                actor=actor,
                source=composition_source(composition),
            )
        )
    return records


def allocation_mark_bound(
    *, allocation: Allocation, binding_id: str, host: Host, source: str = ""
) -> Allocation:
    """Record that the driver bound `allocation` (its `binding_id`), committed at once.

    A whole device moves RESERVED -> BOUND with `bound_host` (compare-and-set; a sync may
    already have set BOUND from the manager's report); a memory device with a slice bound
    moves to BOUND (its `bound_host` stays empty: slices go to several hosts). Idempotent.
    The device is locked first, as a release locks it: a release of another slice of the
    same memory device, which sets the state from the slices still held, then sees this
    one bound, or this one sees the state it left.
    """
    now = timezone.now()
    with transaction.atomic():
        device = Device.objects.select_for_update().get(pk=allocation.device_id)
        before = device.state
        marked = Allocation.objects.filter(pk=allocation.pk, released_at__isnull=True).update(
            binding_id=binding_id, state=AllocationState.BOUND, bound_at=now
        )
        if allocation.gib is None:
            # A whole device, or a share of a GPU: the GPU is bound to this host (once, by
            # the first share bound; later shares find it bound).
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
        elif marked:
            # A slice: the memory device is bound (to this host among others) from now on.
            updated = Device.objects.filter(
                pk=device.pk, state__in=[DeviceState.FREE, DeviceState.RESERVED]
            ).update(state=DeviceState.BOUND, updated_at=now)
            if updated:
                change_record(
                    device,
                    ChangeAction.CHANGED,
                    {"state": (before, DeviceState.BOUND)},
                    message=f"{allocation.gib} GiB bound to {host.name}",
                    source=source,
                ).save()
                device.state = DeviceState.BOUND
    allocation.device = device
    allocation.binding_id, allocation.state, allocation.bound_at = (
        binding_id,
        AllocationState.BOUND,
        now,
    )
    return allocation
