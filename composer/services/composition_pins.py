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

from composer.choices import CompositionState
from composer.errors import SpecError
from composer.models import Allocation, UnbindPending
from composer.placement.pinned import device_words
from composer.placement.request import PinnedDevice, Rejection
from composer.placement.snapshot import Snapshot
from fabric.choices import DeviceState, Health
from fabric.models import Device

__all__ = ["Pin", "pins_as_request", "pins_resolve", "pins_unusable"]

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
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            matches = list(present.filter(pk=int(value)))
            missing = f"There is no device with id {value}."
        else:
            matches = list(present.filter(name=value)[:2])
            missing = f"There is no device named {value!r}."
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
