"""What a device gives a pool: allocated, free and unavailable, in devices or in GiB.

The one definition behind every capacity figure of the console (pool and dashboard bars,
the device table and its API, the topology, the placement snapshot). Pure: plain values
in, plain values out, so SQL aggregates, graph nodes and model rows all go through it.

What is held is allocated, whatever the device's state or health: the compositions still
hold it. What nothing holds is unavailable when the device is failed, in maintenance or
critical, else free.

- A whole device (GPU, NVMe, NIC, ...) counts one. It is held while reserved or bound (by a
  composition, or reported bound by its manager), and while it is still bound to a host
  (`bound_host`) when it has failed or is in maintenance.
- A partitionable device (a kind handed out in GiB slices, `fabric.kinds.is_sliced`: CXL
  memory) counts its `memory_gib`: held are the GiB its slices hold (`Device.allocated_gib`,
  kept by the allocation service under the device's row lock, in the same transaction as
  each claim and release).
- Absent devices count nowhere.

A device's `state` follows what holds it (`held_state`): RESERVED while only claimed, BOUND
once bound (a whole device to its host, a memory device as soon as one slice is), FREE when
nothing holds it. A failed held device goes back to its held state when it recovers, never
FREE. Unlike a whole device a partitionable one takes new slices in any of FREE, RESERVED
and BOUND, as long as GiB are free (`SLICEABLE_STATES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.choices import DeviceState, Health

__all__ = [
    "HELD_STATES",
    "OUT_OF_SERVICE_STATES",
    "SLICEABLE_STATES",
    "Split",
    "capacity_split",
    "held_state",
    "is_allocatable",
    "is_out_of_service",
]

# Held by a composition (or reported bound by the manager): allocated.
HELD_STATES = frozenset({DeviceState.RESERVED.value, DeviceState.BOUND.value})
# Out of service: what is not held is unavailable.
OUT_OF_SERVICE_STATES = frozenset({DeviceState.FAILED.value, DeviceState.MAINTENANCE.value})
# A partitionable device in one of these takes a new slice when it has GiB free.
SLICEABLE_STATES = frozenset({DeviceState.FREE.value, *HELD_STATES})


@dataclass(frozen=True, slots=True)
class Split:
    """How much of something is allocated, free and unavailable (devices or GiB)."""

    allocated: int = 0
    free: int = 0
    unavailable: int = 0

    @property
    def capacity(self) -> int:
        return self.allocated + self.free + self.unavailable

    def __add__(self, other: Split) -> Split:
        return Split(
            self.allocated + other.allocated,
            self.free + other.free,
            self.unavailable + other.unavailable,
        )


def is_out_of_service(state: str, health: str) -> bool:
    """Failed, in maintenance, or critical: nothing new can be placed on it."""
    return state in OUT_OF_SERVICE_STATES or health == Health.CRITICAL


def capacity_split(
    *,
    partitionable: bool,
    state: str,
    health: str,
    devices: int = 1,
    memory_gib: int = 0,
    allocated_gib: int = 0,
    bound: int = 0,
) -> Split:
    """The split of `devices` devices that share a state and health: in devices, or for
    partitionable ones in GiB, where `memory_gib`, `allocated_gib` and `bound` (how many of
    them have a bound host) are their sums (the definition is linear, so a GROUP BY's sums
    give the same answer as device by device).
    """
    if state == DeviceState.ABSENT:
        return Split()
    if partitionable:
        held = max(0, min(allocated_gib, memory_gib))
        rest = memory_gib - held
    else:
        # Reserved or bound; a failed one (or one in maintenance) while still bound to a host.
        held = devices if state in HELD_STATES else max(0, min(bound, devices))
        rest = devices - held
    if is_out_of_service(state, health):
        return Split(allocated=held, unavailable=rest)
    return Split(allocated=held, free=rest)


def held_state(*, claimed: str | None, bound: bool = False, allocated_gib: int = 0) -> str | None:
    """The state what holds a device gives it: BOUND, RESERVED, or None when nothing holds it.

    `claimed`: what the compositions' claims on it imply (`fabric.holders.held_states`:
    BOUND once one is bound, RESERVED while they are only claimed); `bound`: it is bound
    whole to a host (its `bound_host`); `allocated_gib`: the GiB its slices hold, which with
    no slice claimed any more are slices whose unbind is pending (still on the fabric).
    """
    if bound or claimed == DeviceState.BOUND:
        return DeviceState.BOUND
    if claimed == DeviceState.RESERVED:
        return DeviceState.RESERVED
    if allocated_gib > 0:
        return DeviceState.BOUND
    return None


def is_allocatable(*, partitionable: bool, state: str, health: str, free_gib: int = 0) -> bool:
    """May a new composition get it (a whole device) or a slice of it (`free_gib` GiB left)?

    A whole device: FREE and not critical. A partitionable one: not critical, in a state
    that takes slices, with GiB free.
    """
    if health == Health.CRITICAL:
        return False
    if partitionable:
        return state in SLICEABLE_STATES and free_gib > 0
    return state == DeviceState.FREE
