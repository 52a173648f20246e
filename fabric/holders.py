"""Who holds a device: the layer above the fabric knows (compositions), the fabric asks.

The device page shows which composition holds a device, but fabric never imports composer.
So the composition layer registers a lookup from its AppConfig.ready(), the
same way it adds to a blast radius (fabric.topology.impact), and the page renders the
generic `Holder` rows it returns. A lookup must only return what `user` may see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Holder", "HolderLookup", "device_holders", "register_holder_lookup"]


@dataclass(frozen=True)
class Holder:
    """Something holding a device (or, with `gib`, a slice of a CXL memory device)."""

    name: str
    url: str
    state: str
    owner: str | None = None  # e.g. the tenant, for viewers allowed to see it
    owner_url: str | None = None
    gib: int | None = None


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
