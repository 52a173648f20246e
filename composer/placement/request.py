"""What a placement is asked for, and what it answers: request, plan, rejection. Pure Python."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "REJECTION_CODES",
    "DeviceItem",
    "DevicePick",
    "MemorySlice",
    "Note",
    "PinnedDevice",
    "Placement",
    "PlacementRequest",
    "Rejection",
]

REJECTION_CODES = ("no_capacity", "domain_conflict", "latency", "quota", "invalid")


@dataclass(frozen=True, slots=True)
class Note:
    """One sentence of an explanation, in the words of each audience: `operator` may name
    fabric internals (switches, enclosures, hosts the request does not get); `tenant` says
    the same without them (None: the same words suit both). The engine writes both, so
    nothing has to be cut out of a sentence afterwards (`composer.placement.audience`)."""

    operator: str
    tenant: str | None = None

    def text(self, *, operator: bool) -> str:
        """The sentence for an operator (`operator`) or a tenant."""
        return self.operator if operator or self.tenant is None else self.tenant


@dataclass(frozen=True, slots=True)
class DeviceItem:
    """`count` whole devices of one kind (and model, when set), each with at least the
    attribute `minima` (e.g. {"memory_gib": 80}). With `share`, a share of ONE device
    (`count` 1) in thousandths (1 to 999 of a GPU's 1000: `fabric.kinds`, `Kind.shares`),
    held beside other compositions on the host the device is bound to
    (composer.placement.shares)."""

    kind: str
    count: int
    model: str | None = None
    minima: Mapping[str, float] = field(default_factory=dict)
    share: int | None = None


@dataclass(frozen=True, slots=True)
class PinnedDevice:
    """A device the request names itself (a "specific composition"): `device` its snapshot
    id, `name` for sentences (it may be missing from the snapshot, which holds only usable
    devices), `gib` a slice of a CXL memory device (None: all of its free GiB)."""

    device: str
    name: str
    kind: str
    gib: int | None = None


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """One composition's needs.

    `memory_gib`: CXL memory, sliced over one or several partitionable devices.
    `storage_tb`: NVMe capacity (whole drives, as few as cover it).
    `cores`, `host_memory_gib`: what the host must have free. `host`: a host id, or any.
    `max_latency_ns`: the ceiling from the host to every device.
    `policy`: the name of a selectable policy of `composer.placement.policies`:
    "enclosure" or "switch" (spread: no two devices of an item share one), "pack" (as few
    enclosures as possible), or "none".
    `same_switch`: every device of `items` behind one switch (memory and storage are
    dual-homed to spines and exempt). `critical`: share no switch or enclosure with another
    tenant. `tenant_hosts`: the hosts the tenant's live compositions are on; with any
    policy but "pack", compositions spread across hosts (the emptiest first, and the
    tenant's own hosts after the others), so that one host's loss does not take all of a
    tenant's compositions. `pinned`: devices taken exactly as named, on a host that
    reaches them all (composer.placement.pinned); the rest of the request is placed
    around them on that host.
    """

    items: tuple[DeviceItem, ...] = ()
    memory_gib: int = 0
    storage_tb: float = 0.0
    cores: int = 0
    host_memory_gib: int = 0
    host: str | None = None
    max_latency_ns: int | None = None
    policy: str = "none"
    same_switch: bool = False
    critical: bool = False
    tenant: str | None = None
    tenant_hosts: frozenset[str] = frozenset()
    pinned: tuple[PinnedDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class DevicePick:
    """A whole device (or, with `gib`, a slice of a CXL memory device; with `share`, a share
    of a shareable device) and its path. `estimated_hops`: links of the path whose latency
    is estimated (the manager gives none)."""

    device: str
    name: str
    kind: str
    enclosure: str
    latency_ns: int
    bottleneck_gbps: float
    gib: int | None = None
    estimated_hops: int = 0
    share: int | None = None


MemorySlice = DevicePick  # a pick with `gib` set


@dataclass(frozen=True, slots=True)
class Placement:
    """A plan: the host, the devices and memory slices (each with its path summary), the
    score (higher is better) and the sentences that explain it."""

    host: str
    host_name: str
    devices: tuple[DevicePick, ...]
    memory: tuple[DevicePick, ...]
    score: float
    explanation: tuple[Note, ...]
    funnel: tuple[tuple[str, int, int], ...] = ()

    @property
    def ok(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why no plan exists: a stable `code`, a message naming the constraint that blocks (in
    words fit for everyone), the funnel (constraint, candidates before, after — in order)
    and the nearest feasible alternative as a sentence for each audience."""

    code: str
    message: str
    funnel: tuple[tuple[str, int, int], ...] = ()
    nearest: Note = Note("")

    @property
    def ok(self) -> bool:
        return False
