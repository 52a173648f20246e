"""Who holds a device: the layer above the fabric knows (compositions), the fabric asks.

The device page shows which composition holds a device, but fabric never imports composer.
So the composition layer registers a lookup from its AppConfig.ready(), the
same way it adds to a blast radius (fabric.topology.impact), and the page renders the
generic `Holder` rows it returns. A lookup must only return what `user` may see.

The fabric's own writers (the health poll, inventory sync) ask the same layer what its
claims imply for a device's state (`held_states`), so that a device held by a composition
is never made FREE behind its back, and comes back RESERVED or BOUND when it recovers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabric.choices import DeviceState

__all__ = [
    "HeldStateLookup",
    "Holder",
    "HolderLookup",
    "device_holders",
    "held_states",
    "register_held_state_lookup",
    "register_holder_lookup",
]


@dataclass(frozen=True)
class Holder:
    """Something holding a device (or, with `gib`, a slice of a CXL memory device; with
    `share`, a share of a GPU, on `host`)."""

    name: str
    url: str
    state: str
    owner: str | None = None  # e.g. the tenant, for viewers allowed to see it
    owner_url: str | None = None
    gib: int | None = None
    share: int | None = None
    host: str | None = None


HolderLookup = Callable[[Any, Any], Sequence[Holder]]  # (device, user) -> holders

_LOOKUPS: list[HolderLookup] = []


def register_holder_lookup(fn: HolderLookup) -> HolderLookup:
    """Register `fn` (once); returns it, so it can be used as a decorator."""
    if fn not in _LOOKUPS:
        _LOOKUPS.append(fn)
    return fn


def device_holders(*, device: Any, user: Any) -> list[Holder]:
    """What holds `device`, as far as `user` may know, from every registered lookup."""
    return [holder for lookup in _LOOKUPS for holder in lookup(device, user)]


# device ids -> {device id: RESERVED or BOUND} for the held ones among them
HeldStateLookup = Callable[[Collection[int]], Mapping[int, str]]

_HELD_STATE_LOOKUPS: list[HeldStateLookup] = []


def register_held_state_lookup(fn: HeldStateLookup) -> HeldStateLookup:
    """Register `fn` (once): what the claims on some devices imply for their state."""
    if fn not in _HELD_STATE_LOOKUPS:
        _HELD_STATE_LOOKUPS.append(fn)
    return fn


def held_states(device_ids: Collection[int]) -> dict[int, str]:
    """For each device among `device_ids` that something holds, the state the holding
    implies (`fabric.capacity.held_state`'s `claimed`): BOUND when one lookup says bound,
    else RESERVED. Devices nothing holds are left out. One query per registered lookup;
    none when `device_ids` is empty."""
    found: dict[int, str] = {}
    if not device_ids:
        return found
    for lookup in _HELD_STATE_LOOKUPS:
        for device_id, state in lookup(device_ids).items():
            if found.get(device_id) != DeviceState.BOUND:
                found[device_id] = state
    return found
