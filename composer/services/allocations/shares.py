"""Shares of a GPU: claimed for one host, given back, the device free again with the last.

Rule 1 for shares holds in the database, whatever the Python checks say:

- the Device row is locked (`SELECT ... FOR UPDATE`, by the caller, in id order) before
  anything is checked, so two claims of one GPU queue there;
- a share is granted by one conditional UPDATE of that row, in the same transaction as its
  Allocation row: the GPU is FREE and holds no share (it becomes shared on this host), or
  it is already shared on this very host (`shared_host`) with the share free
  (`allocated_shares + share <= shares`). Under PostgreSQL's READ COMMITTED an UPDATE
  re-reads a row changed since the statement began before applying its WHERE, so even a
  writer that skipped the lock could not grant a share the row no longer has;
- the Device's check constraints (`fabric.models.inventory._share_constraints`) refuse
  `allocated_shares` above what the kind declares, a device holding shares with no host or
  a host with no shares, and a device holding shares that is FREE. `shared_host` is one
  column: while any share is held it names one host, and only a claim on that host passes
  the UPDATE's condition; it is cleared only in the UPDATE that gives the last share back.
  So every live share of a GPU is on one host, and a shared GPU is never claimed whole
  (whole claims move FREE -> RESERVED by compare-and-set, and it is never FREE).

`allocated_shares` is the sum of the unreleased shares' Allocation rows because both are
written in the same transactions under the same row lock; `shares_held` recounts it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Case, F, Q, Sum, Value, When
from django.utils import timezone

from composer.errors import ClaimConflict
from composer.models import Allocation
from composer.selectors.allocations import allocation_held_states
from fabric.capacity import HELD_STATES, held_state
from fabric.choices import ChangeAction, DeviceState
from fabric.models import ChangeRecord, Device, Host
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = [
    "check_share",
    "claim_shares",
    "devices_shares_reconcile",
    "give_back_shares",
    "shares_held",
]


def check_share(device: Device, share: int, host: Host) -> None:
    """ClaimConflict unless a `share` of `device` (read under its row lock) fits on `host`:
    a GPU free or already shared on this host, with the share free."""
    whole = device.shares_per_device
    if not whole:
        raise ClaimConflict(f"Device {device.name} is taken whole, never shared.")
    if not 0 < share < whole:
        raise ClaimConflict(f"A share of {device.name} is 1 to {whole - 1} of {whole}.")
    if device.allocated_shares == 0:
        if device.state != DeviceState.FREE:
            raise ClaimConflict(f"Device {device.name} is {device.state}, no longer free.")
        return
    if device.shared_host_id != host.pk:
        raise ClaimConflict(f"Device {device.name} is shared on another host.")
    free = whole - device.allocated_shares
    if device.state not in HELD_STATES or share > free:
        raise ClaimConflict(
            f"Device {device.name} has {free}/{whole} free; a {share}/{whole} share asked."
        )


def claim_shares(
    shares: Sequence[tuple[Device, int]], host: Host, *, message: str, actor: Any, source: str
) -> list[ChangeRecord]:
    """Each (device, share) of `shares` (devices locked by the caller) holds `share` more,
    on `host`, by a conditional UPDATE each (see the module's docstring); FREE -> RESERVED
    at the first share. Returns the ChangeRecords to write; raises ClaimConflict when one
    no longer fits (the caller's savepoint rolls the others back)."""
    records = []
    now = timezone.now()
    for device, share in shares:
        whole = device.shares_per_device
        fits = Q(allocated_shares=0, state=DeviceState.FREE) | Q(
            shared_host=host, state__in=HELD_STATES, allocated_shares__lte=whole - share
        )
        granted = (
            Device.objects.filter(pk=device.pk)
            .filter(fits)
            .update(
                allocated_shares=F("allocated_shares") + share,
                shared_host=host,
                state=Case(
                    When(state=DeviceState.FREE, then=Value(DeviceState.RESERVED)),
                    default=F("state"),
                ),
                updated_at=now,
            )
        )
        if not granted:
            raise ClaimConflict(f"Device {device.name} no longer has a {share}/{whole} share free.")
        changes: dict[str, tuple[Any, Any] | list[Any]] = {
            "allocated_shares": (device.allocated_shares, device.allocated_shares + share)
        }
        if device.allocated_shares == 0:
            changes["shared_host"] = (None, host.name)
            changes["state"] = (device.state, DeviceState.RESERVED)
            device.state = DeviceState.RESERVED
        device.allocated_shares += share
        device.shared_host = host
        records.append(
            change_record(
                device,
                ChangeAction.CHANGED,
                changes,
                message=f"A {share}/{whole} share {message}",
                actor=actor,
                source=source,
            )
        )
    return records


def give_back_shares(
    device: Device,
    share: int,
    *,
    message: str,
    actor: Any,
    source: str,
    still_bound: bool = False,
) -> ChangeRecord:
    """`share` fewer shares held on `device` (locked by the caller, the shares' Allocation
    rows already released). With the last one it is whole again, no shared host: FREE with
    no bound host (the caller undid the binding) unless failed or in maintenance, or, when
    its unbind is pending (`still_bound`), BOUND to its host and held by the `UnbindPending`
    row as a whole device is until the reconciler unbinds it. Returns the ChangeRecord."""
    left = max(0, device.allocated_shares - share)
    changes: dict[str, tuple[Any, Any] | list[Any]] = {
        "allocated_shares": (device.allocated_shares, left)
    }
    fields: dict[str, Any] = {"allocated_shares": left, "updated_at": timezone.now()}
    if left == 0:
        host = device.shared_host.name if device.shared_host else device.shared_host_id
        changes["shared_host"] = (host, None)
        fields["shared_host"] = None
        if device.bound_host_id is not None and not still_bound:
            fields["bound_host"] = None
            changes["bound_host"] = (host, None)
        if device.state in HELD_STATES and not still_bound:
            fields["state"] = DeviceState.FREE
            changes["state"] = (device.state, DeviceState.FREE)
    Device.objects.filter(pk=device.pk).update(**fields)
    for name, value in fields.items():
        setattr(device, name, value)
    whole = device.shares_per_device
    return change_record(
        device,
        ChangeAction.CHANGED,
        changes,
        message=f"{message}: a {share}/{whole} share given back",
        actor=actor,
        source=source,
    )


def shares_held(device_ids: Collection[int] | None = None) -> dict[int, int]:
    """Device -> the shares its unreleased Allocation rows hold (of `device_ids`, or every
    device); devices holding none are left out. One query."""
    rows = Allocation.objects.filter(released_at__isnull=True, share__isnull=False)
    if device_ids is not None:
        rows = rows.filter(device_id__in=list(device_ids))
    return {
        device_id: total or 0
        for device_id, total in rows.order_by()
        .values("device_id")
        .annotate(total=Sum("share"))
        .values_list("device_id", "total")
    }


def devices_shares_reconcile() -> list[int]:
    """Recount every shared GPU's `allocated_shares` (and `shared_host`) from the shares its
    unreleased allocations hold (`shares_held`), correcting each that drifted; returns the
    ids corrected. As `devices_allocated_reconcile` does for GiB: a drift is corrected only
    if the recount under the device's row lock still finds it (a claim or release in flight
    is left to the next pass), and each correction is a ChangeRecord (source
    "reconciliation") and a warning. A GPU whose shares are held by compositions with no
    host (none should be) is left alone and logged."""
    expected = shares_held()
    drifted = [
        (pk, recorded)
        for pk, recorded in Device.objects.filter(
            Q(allocated_shares__gt=0) | Q(pk__in=list(expected))
        ).values_list("pk", "allocated_shares")
        if recorded != expected.get(pk, 0)
    ]
    corrected: list[int] = []
    for pk, recorded in drifted:
        with transaction.atomic():
            device = Device.objects.select_for_update().filter(pk=pk).first()
            held = shares_held([pk]).get(pk, 0)
            if device is None or (device.allocated_shares, held) != (recorded, expected.get(pk, 0)):
                continue  # changed since the first count
            host_id = (
                Allocation.objects.filter(
                    device_id=pk, released_at__isnull=True, share__isnull=False
                )
                .values_list("composition__host_id", flat=True)
                .first()
            )
            if held and host_id is None:
                logger.warning("device %s: shares held by compositions with no host", pk)
                continue
            fields: dict[str, Any] = {
                "allocated_shares": held,
                "shared_host_id": host_id if held else None,
                "updated_at": timezone.now(),
            }
            if held and device.state == DeviceState.FREE:
                fields["state"] = DeviceState.RESERVED
            elif not held and device.state in HELD_STATES:
                claimed = allocation_held_states([pk]).get(pk)
                bound = device.bound_host_id is not None
                fields["state"] = held_state(claimed=claimed, bound=bound) or DeviceState.FREE
            Device.objects.filter(pk=pk).update(**fields)
            changes: dict[str, tuple[Any, Any] | list[Any]] = {"allocated_shares": (recorded, held)}
            if fields.get("state", device.state) != device.state:
                changes["state"] = (device.state, fields["state"])
            change_record(
                device,
                ChangeAction.CHANGED,
                changes,
                message=(
                    f"Allocated GPU shares recounted from the compositions' shares: {held} "
                    f"held, {recorded} recorded"
                ),
                source="reconciliation",
            ).save()
        logger.warning("device %s: allocated_shares was %s, its shares hold %s; corrected",
                       pk, recorded, held)  # fmt: skip
        corrected.append(pk)
    return corrected
