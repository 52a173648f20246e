"""What a placement snapshot is made of: one frozen record per host, enclosure and device,
and how a host reaches an enclosure; and which devices belong in a snapshot at all.

Plain values, no Django and no indexes: `composer.placement.snapshot.Snapshot.build`
indexes them, `composer.placement.load` fills them from the database, and tests write them
by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fabric.kinds import is_sliced

__all__ = ["DeviceInfo", "EnclosureInfo", "HostInfo", "Reach", "usable"]


@dataclass(frozen=True, slots=True)
class HostInfo:
    """A host that compositions may be built on, with what it has free.

    `uplink_gbps` is the sum of its usable uplinks' bandwidth (GB/s, one direction);
    `uplink_used_gbps` what devices already bound to it are charged (see docs/placement.md).
    `switches` are the switches its uplinks land on (its "own" switches).
    """

    id: str
    name: str
    cores_free: int
    memory_gib_free: int
    cores_total: int = 0
    uplink_gbps: float = 0.0
    uplink_used_gbps: float = 0.0
    switches: tuple[str, ...] = ()
    rack: str | None = None
    power_feed: str | None = None


@dataclass(frozen=True, slots=True)
class EnclosureInfo:
    """An enclosure: its name, the switches it hangs off, and how many devices it holds in
    all (free or not), so that scoring can tell a partly used enclosure from an untouched one."""

    id: str
    name: str
    switches: tuple[str, ...] = ()
    rack: str | None = None
    power_feed: str | None = None
    device_total: int = 0


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """A usable device (free, health not critical). `free_gib` is what a partitionable
    (CXL memory) device still has unsliced; `attributes` holds numbers that requests may set
    minima on (memory_gib, capacity_gb and the device's own numeric attributes).

    A shareable device (`shareable.shares_per_device`) some composition holds a share of
    is *partly shared*: `shared_host` is the host it is bound to (only compositions on that
    host may take its other shares) and `shares_free` what is left. A whole free device has
    `shared_host` None and `shares_free` 0, read as all of its shares (`shareable.free_shares`).
    """

    id: str
    name: str
    kind: str
    model: str
    enclosure: str
    attributes: Mapping[str, float] = field(default_factory=dict)
    free_gib: int = 0
    capacity_gb: int = 0
    domains: tuple[str, ...] = ()  # failure-domain keys: enclosure, switches, rack, feed
    shares_free: int = 0
    shared_host: str | None = None


@dataclass(frozen=True, slots=True)
class Reach:
    """The best path from a host to an enclosure: latency (ns) and bottleneck (GB/s).
    `estimated_hops`: its links whose latency the fabric manager does not give, each
    counted as `fabric.topology.graph.ESTIMATED_HOP_LATENCY_NS` in `latency_ns`."""

    latency_ns: int
    bottleneck_gbps: float
    hops: int = 0
    estimated_hops: int = 0


def usable(device: DeviceInfo) -> bool:
    """Whether a device belongs in a snapshot: one handed out in GiB slices only with GiB
    free, a partly shared one only with a share free."""
    return (not is_sliced(device.kind) or device.free_gib > 0) and (
        device.shared_host is None or device.shares_free > 0
    )
