"""Devices a composition request names itself (a "specific composition": the spec's `devices`).

Resolving them is a check before anything is written (rule 4): a name or id that is no
device, or GiB asked of a device that is bound whole, is a SpecError naming the entry
(`devices[1].device`). Whether a named device can be had *now* is placement's question:
the engine takes only usable devices (free, healthy, reachable), and when one is missing
from its snapshot `pins_unusable` says why in the operator's words, from the device's row
("GPU gpu-03 is already composed."). Reads only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import QuerySet

from composer.choices import CompositionState
from composer.errors import SpecError
from composer.models import Allocation, UnbindPending
from composer.placement.pinned import device_words
from composer.placement.request import PinnedDevice, Rejection
from composer.placement.snapshot import Snapshot
from fabric.choices import DeviceState, Health
from fabric.models import Device

__all__ = ["Pin", "pins_as_request", "pins_resolve", "pins_unusable"]

MAX_ID = 2**63 - 1  # the largest primary key a row can have (bigint)
Pin = tuple[Device, "int | None"]  # a named device and the GiB asked of it (None: whole/all)


def pins_resolve(*, spec: Mapping[str, Any]) -> list[Pin]:
    """The devices the normalised `spec` names, with their GiB, in the spec's order.

    Raises SpecError (field `devices[i].device` or `devices[i].gib`) for a name or id that
    is no present device, a name several devices share, a device named twice under its
    name and its id, or GiB asked of a device that is bound whole."""
    pins: list[Pin] = []
    present = Device.objects.exclude(state=DeviceState.ABSENT)
    for index, entry in enumerate(spec.get("devices") or []):
        value, where = entry["device"], f"devices[{index}]"
        matches, missing = _lookup(present, value)
        if not matches:
            raise SpecError(missing, field=f"{where}.device")
        if len(matches) > 1:
            raise SpecError(f"Several devices are named {value!r}; give its id.", field=where)
        device = matches[0]
        if any(device.pk == other.pk for other, _ in pins):
            raise SpecError(f"Device {device.name} is named twice.", field=f"{where}.device")
        if entry.get("gib") is not None and not device.is_partitionable:
            raise SpecError(
                f"{device_words(device.kind, device.name)} is bound whole: GiB are for CXL "
                "memory only.",
                field=f"{where}.gib",
            )
        pins.append((device, entry.get("gib")))
    return pins


def _lookup(present: QuerySet[Device], value: int | str) -> tuple[list[Device], str]:
    """The present devices `value` names, and the sentence for none.

    The rule (docs/placement.md): a JSON number is an id; a string is a name first, and
    only when no present device has that name, and it is ASCII digits, an id. So a device
    whose name is digits is named by it, and "41" from a form still finds device 41."""
    if isinstance(value, int):
        return _by_id(present, value), f"There is no device with id {value}."
    matches = list(present.filter(name=value)[:2])
    if not matches and value.isascii() and value.isdigit():
        matches = _by_id(present, int(value))
        return matches, f"There is no device named {value!r} nor with id {value}."
    return matches, f"There is no device named {value!r}."


def _by_id(present: QuerySet[Device], pk: int) -> list[Device]:
    """The present device with id `pk` (none for an id no row could have)."""
    return list(present.filter(pk=pk)) if 0 < pk <= MAX_ID else []


def pins_as_request(pins: Sequence[Pin]) -> tuple[PinnedDevice, ...]:
    """The named devices as the placement engine takes them."""
    return tuple(PinnedDevice(f"device:{d.pk}", d.name, d.kind, gib) for d, gib in pins)


def pins_unusable(pins: Sequence[Pin], snapshot: Snapshot) -> Rejection | None:
    """A rejection naming the first named device `snapshot` does not offer, and why (read
    from its row as it is now), or None when the snapshot offers them all."""
    for device, _ in pins:
        if f"device:{device.pk}" in snapshot.devices:
            continue
        device.refresh_from_db()
        return Rejection("no_capacity", _why(device))
    return None


def _why(device: Device) -> str:
    """Why `device` is not usable now, in a sentence that names it."""
    words = device_words(device.kind, device.name)
    if device.state == DeviceState.ABSENT:
        return f"{words} is no longer reported by its fabric manager."
    if device.state == DeviceState.FAILED or device.health == Health.CRITICAL:
        return f"{words} has failed."
    if device.state == DeviceState.MAINTENANCE:
        return f"{words} is in maintenance."
    if UnbindPending.objects.filter(device=device, undone_at__isnull=True).exists():
        return f"{words} is still being unbound from an earlier composition."
    if device.is_partitionable:
        return f"{words} has no GiB free."
    held = Allocation.objects.filter(device=device, released_at__isnull=True)
    if held.filter(composition__state=CompositionState.HELD).exists():
        return f"{words} is held for another composition."
    if device.state in (DeviceState.RESERVED, DeviceState.BOUND):
        return f"{words} is already composed."
    return f"{words} is out of reach now (its enclosure or a switch on its path is out of service)."
