"""What bookings hold in a window, taken out of a placement snapshot; and the writing of new
holds under the database's guarantee (rule 7).

Read by two callers: the booking admission (`composer.services.bookings`), which places
each occurrence on the free inventory less what other bookings hold in that occurrence's
window, and the immediate request (`composer.services.composition_placement`), which
leaves out everything any booking holds from now on: a composition made now has no end,
so it would still hold the device when the booked window starts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from django.db import IntegrityError, connection
from django.db.models import Q

from composer.errors import ClaimConflict
from composer.models import BookingHold, Occurrence
from composer.placement.shareable import free_shares
from composer.placement.snapshot import Snapshot
from composer.selectors.booked_totals import HeldTotals
from composer.selectors.bookings import Booked
from fabric.kinds import is_sliced, shares_per_device
from fabric.models import Device

__all__ = [
    "holds_write",
    "snapshot_less_booked",
    "snapshot_less_held",
]


def snapshot_less_booked(snapshot: Snapshot, booked: Booked) -> Snapshot:
    """`snapshot` with what `booked` holds taken (`snapshot_less_held` of its totals)."""
    if not booked.holds and not booked.occupants:
        return snapshot
    return snapshot_less_held(snapshot, HeldTotals.of(booked))


def snapshot_less_held(snapshot: Snapshot, held: HeldTotals) -> Snapshot:
    """`snapshot` with what `held` sums taken: whole devices, GiB of memory devices,
    shares of GPUs on their hosts (a device shared on another host, or with fewer shares
    free than held, leaves the snapshot), and the occurrences' cores and host memory. A
    memory device holding a booked slice for a host is marked sliced for it (one slice of
    a device per host). A device no longer in the snapshot (allocated now, failed) is
    passed over: it is taken already."""
    if not held:
        return snapshot
    present = snapshot.devices
    whole = {d for d in held.whole if d in present}
    gib = {d: n for d, n in held.gib.items() if d in present}
    shares = {d: per_host for d, per_host in held.shares.items() if d in present}
    sliced = {
        host: kept
        for host, devices in held.sliced.items()
        if (kept := frozenset(d for d in devices if d in present))
    }
    share_taken: dict[str, tuple[str, int]] = {}
    for device_id in sorted(whole):
        device = present[device_id]
        if device.shared_host:  # shared since (an operator's override): all it has left
            share_taken[device_id] = (device.shared_host, device.shares_free)
            shares.pop(device_id, None)
    for device_id, per_host in shares.items():
        # Taken whole already: shared out since (above), or held whole by a window while
        # another window holds shares of it (possible only in sums over several windows:
        # it stays taken whole, never left partly free).
        if device_id in share_taken or device_id in whole:
            continue
        device = present[device_id]
        hosts = set(per_host) | ({device.shared_host} if device.shared_host else set())
        total = sum(per_host.values())
        if len(hosts) == 1 and total < free_shares(device):
            share_taken[device_id] = (hosts.pop(), total)
        elif device.shared_host:  # every share it has left
            share_taken[device_id] = (device.shared_host, device.shares_free)
        else:
            whole.add(device_id)
    taken = snapshot.taking(
        devices=whole - set(share_taken),
        memory_gib=gib,
        shares=share_taken,
        cores=held.cores,
        host_memory_gib=held.host_memory_gib,
    )
    if sliced:
        merged = {h: frozenset(v) for h, v in taken.sliced.items()}
        for host, devices in sliced.items():
            merged[host] = merged.get(host, frozenset()) | devices
        taken = replace(taken, sliced=merged)
    return taken


def holds_write(holds: Sequence[BookingHold]) -> None:
    """Save `holds` under rule 7 and raise ClaimConflict when another booking got there
    first. Whole devices: the exclusion constraint (PostgreSQL) refuses an overlapping
    hold. Slices and shares: the devices' rows are locked in id order, then each window's
    sum of GiB (or shares) held, with what compositions hold now, is checked against the
    device. Call inside the transaction that writes the booking."""
    parted = sorted({h.device_id for h in holds if h.gib is not None or h.share is not None})
    if parted:
        devices = {
            d.pk: d for d in Device.objects.select_for_update().filter(pk__in=parted).order_by("pk")
        }
        _check_parts(holds, devices)
    if connection.vendor != "postgresql":
        _check_whole_overlaps(holds)
    _check_whole_against_parts(holds)
    try:
        BookingHold.objects.bulk_create(holds)
    except IntegrityError as exc:  # the exclusion constraint: another window holds it
        raise ClaimConflict(
            "A device this booking needs was booked by another request at the same time; "
            "try again.",
            field="starts_at",
        ) from exc


def _check_whole_overlaps(holds: Iterable[BookingHold]) -> None:
    """Without the exclusion constraint (SQLite, whose writes are serialised): the same
    rule as a query before the insert."""
    for hold in holds:
        if hold.gib is not None or hold.share is not None:
            continue
        clash = BookingHold.objects.filter(
            device_id=hold.device_id,
            gib__isnull=True,
            share__isnull=True,
            starts_at__lt=hold.ends_at,
            ends_at__gt=hold.starts_at,
        )
        if clash.exists():
            raise ClaimConflict(
                "A device this booking needs is booked by another request in that window; "
                "try again.",
                field="starts_at",
            )


def _check_whole_against_parts(holds: Sequence[BookingHold]) -> None:
    """A device is never held whole and in parts (slices or shares) in overlapping windows.
    The admission never plans it, and both writers (a booking, an extension) hold the
    placement lock, so this is a check before the insert: it keeps the rule should a plan
    ever be wrong. One query reads the other holds of the same devices over the span of
    the new ones (by the device's index); the windows are compared here."""
    if not holds:
        return
    others = (
        BookingHold.objects.filter(
            device_id__in={h.device_id for h in holds},
            starts_at__lt=max(h.ends_at for h in holds),
            ends_at__gt=min(h.starts_at for h in holds),
        )
        .exclude(occurrence_id__in={h.occurrence_id for h in holds})
        .exclude(occurrence_id__in=Occurrence.objects.filter(state="running").values("pk"))
        .values_list("device_id", "starts_at", "ends_at", "gib", "share")
    )
    held: dict[int, list[tuple[Any, Any, bool]]] = defaultdict(list)
    for device_id, starts_at, ends_at, gib, share in others:
        held[device_id].append((starts_at, ends_at, gib is None and share is None))
    for hold in holds:
        whole = hold.gib is None and hold.share is None
        for starts_at, ends_at, other_whole in held.get(hold.device_id, ()):
            if other_whole != whole and starts_at < hold.ends_at and ends_at > hold.starts_at:
                raise ClaimConflict(
                    "A device this booking needs is held whole by one request and in parts "
                    "by another in that window; try again.",
                    field="starts_at",
                )


def _check_parts(holds: Sequence[BookingHold], devices: dict[int, Device]) -> None:
    """Under the devices' row locks: each new slice or share, with what others hold over
    its window and what compositions hold now, fits the device."""
    for hold in holds:
        device = devices.get(hold.device_id)
        if device is None or (hold.gib is None and hold.share is None):
            continue
        # A running occurrence's slice or share is in the device's allocated figures
        # already (its composition holds it): counted once.
        overlapping = (
            BookingHold.objects.filter(
                Q(gib__isnull=False) | Q(share__isnull=False),
                device_id=hold.device_id,
                starts_at__lt=hold.ends_at,
                ends_at__gt=hold.starts_at,
            )
            .exclude(occurrence__state="running")
            .values_list("gib", "share")
        )
        if hold.gib is not None:
            capacity = (device.memory_gib or 0) - (device.allocated_gib or 0)
            used = sum(g or 0 for g, _ in overlapping) + hold.gib
        else:
            capacity = shares_per_device(device.kind) - (device.allocated_shares or 0)
            used = sum(s or 0 for _, s in overlapping) + (hold.share or 0)
        if used > capacity or (hold.gib is not None and not is_sliced(device.kind)):
            raise ClaimConflict(
                f"A {device.kind.replace('_', ' ')} device it would share has no room left in "
                "that window for this booking; try again.",
                field="starts_at",
            )
