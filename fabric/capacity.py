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
- A shared device (a kind handed out in shares, `fabric.kinds.Kind.shares` of them per
  device: a GPU in thousandths) that compositions hold shares of (`Device.allocated_shares`,
  kept under the device's row lock like `allocated_gib`) counts as allocated by the
  fraction its shares hold, the rest free (or unavailable when it is out of service): a
  GPU with 250/1000 held gives its pool 0.25 allocated and 0.75 free. Pool figures of such
  a kind are in devices still, with thousandths where a device is shared.
- Absent devices count nowhere.

A device's `state` follows what holds it (`held_state`): RESERVED while only claimed, BOUND
once bound (a whole device to its host, a memory device as soon as one slice is), FREE when
nothing holds it. A failed held device goes back to its held state when it recovers, never
FREE. Unlike a whole device a partitionable one takes new slices in any of FREE, RESERVED
and BOUND, as long as GiB are free (`SLICEABLE_STATES`); a shared device takes new shares
in RESERVED and BOUND while some are free, for compositions on the host it is shared on,
and is never claimed whole again until its last share is given back (FREE).
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

    allocated: float = 0
    free: float = 0
    unavailable: float = 0

    @property
    def capacity(self) -> float:
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
    shares: int = 0,
    shared: int = 0,
    allocated_shares: int = 0,
) -> Split:
    """The split of `devices` devices that share a state and health: in devices, or for
    partitionable ones in GiB, where `memory_gib`, `allocated_gib` and `bound` (how many of
    them have a bound host, shared ones left out) are their sums (the definition is linear,
    so a GROUP BY's sums give the same answer as device by device). For a kind handed out
    in `shares` parts per device, `shared` of the devices hold `allocated_shares` shares in
    all: they count allocated by that fraction of a device (rounded to a thousandth).
    """
    if state == DeviceState.ABSENT:
        return Split()
    held: float
    rest: float
    if partitionable:
        held = max(0, min(allocated_gib, memory_gib))
        rest = memory_gib - held
    else:
        whole = devices - shared if shares else devices
        # Reserved or bound; a failed one (or one in maintenance) while still bound to a host.
        held = whole if state in HELD_STATES else max(0, min(bound, whole))
        if shares and shared:
            held += round(min(allocated_shares, shared * shares) / shares, 3)
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


def is_allocatable(
    *, partitionable: bool, state: str, health: str, free_gib: int = 0, free_shares: int = 0
) -> bool:
    """May a new composition get it (a whole device), a slice of it (`free_gib` GiB left)
    or a share of it (`free_shares` left of a device already shared)?

    A whole device: FREE and not critical. A partitionable one: not critical, in a state
    that takes slices, with GiB free. A shared one (`free_shares` given): held (RESERVED or
    BOUND), not critical, with shares free, for compositions on its host.
    """
    if health == Health.CRITICAL:
        return False
    if partitionable:
        return state in SLICEABLE_STATES and free_gib > 0
    if free_shares > 0:
        return state in HELD_STATES
    return state == DeviceState.FREE
