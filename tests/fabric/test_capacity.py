"""fabric.capacity: the one definition of what is partitionable, what is held, and how a
device counts in its pool (allocated, free, unavailable)."""

from __future__ import annotations

import pytest

from fabric import kinds
from fabric.capacity import Split, capacity_split, held_state
from fabric.choices import DeviceKind, DeviceState, Health
from fabric.models import Device
from tests.support.kinds import HBM, TPU, declared


@pytest.mark.parametrize(
    ("state", "health", "bound", "split"),
    [
        (DeviceState.BOUND, Health.OK, 3, Split(allocated=3)),
        (DeviceState.RESERVED, Health.CRITICAL, 0, Split(allocated=3)),
        # Failed or in maintenance: what is still bound to a host is held, the rest is not.
        (DeviceState.FAILED, Health.CRITICAL, 2, Split(allocated=2, unavailable=1)),
        (DeviceState.MAINTENANCE, Health.OK, 1, Split(allocated=1, unavailable=2)),
        (DeviceState.FREE, Health.CRITICAL, 0, Split(unavailable=3)),
        (DeviceState.FREE, Health.OK, 0, Split(free=3)),
        (DeviceState.ABSENT, Health.UNKNOWN, 3, Split()),
    ],
)
def test_a_whole_device_held_counts_allocated_whatever_its_state(
    state: str, health: str, bound: int, split: Split
) -> None:
    assert (
        capacity_split(partitionable=False, state=state, health=health, devices=3, bound=bound)
        == split
    )


@pytest.mark.parametrize("state", [DeviceState.FAILED, DeviceState.MAINTENANCE])
def test_a_memory_device_out_of_service_counts_its_held_gib_allocated(state: str) -> None:
    split = capacity_split(
        partitionable=True, state=state, health=Health.CRITICAL, memory_gib=1024, allocated_gib=256
    )
    assert split == Split(allocated=256, unavailable=768)


@pytest.mark.parametrize(
    ("claimed", "bound", "allocated_gib", "state"),
    [
        (None, False, 0, None),  # nothing holds it
        (DeviceState.RESERVED, False, 0, DeviceState.RESERVED),  # claimed, not bound yet
        (DeviceState.BOUND, False, 0, DeviceState.BOUND),
        (DeviceState.RESERVED, True, 0, DeviceState.BOUND),  # the manager has it bound
        (None, True, 0, DeviceState.BOUND),  # bound on the fabric, whoever holds it
        (DeviceState.RESERVED, False, 512, DeviceState.RESERVED),  # slices claimed only
        (None, False, 256, DeviceState.BOUND),  # a released slice whose unbind is pending
    ],
)
def test_a_device_s_state_follows_what_holds_it(
    claimed: str | None, bound: bool, allocated_gib: int, state: str | None
) -> None:
    assert held_state(claimed=claimed, bound=bound, allocated_gib=allocated_gib) == state


def test_the_partitionable_kind_is_a_device_kind() -> None:
    assert {DeviceKind.CXL_MEMORY} == kinds.partitioned("slices")


def test_what_is_partitionable_is_read_from_the_one_definition() -> None:
    with declared(HBM):
        assert Device(kind="hbm_pool").is_partitionable
        assert not Device(kind="gpu").is_partitionable
    assert not Device(kind="hbm_pool").is_partitionable


def test_a_declared_kind_counts_in_its_pool_by_its_declaration() -> None:
    """A sliced kind counts its GiB, a whole one counts one, whatever its name."""
    with declared(HBM, TPU):
        memory = Device(kind="hbm_pool", state=DeviceState.BOUND, memory_gib=512, allocated_gib=128)
        tpu = Device(kind="tpu", state=DeviceState.BOUND, memory_gib=32)
        assert memory.capacity == Split(allocated=128, free=384)
        assert memory.free_gib == 384
        assert tpu.capacity == Split(allocated=1)
        assert tpu.free_gib is None


@pytest.mark.parametrize(
    ("state", "health", "bound", "split"),
    [
        # Three GPUs, one of them shared with 250/1000 held: a quarter of it is allocated.
        (DeviceState.BOUND, Health.OK, 0, Split(allocated=2.25, free=0.75)),
        # Failed: the whole ones still bound and the shares are held, the rest unavailable.
        (DeviceState.FAILED, Health.CRITICAL, 1, Split(allocated=1.25, unavailable=1.75)),
        (DeviceState.ABSENT, Health.UNKNOWN, 0, Split()),
    ],
)
def test_a_shared_gpu_counts_allocated_by_the_fraction_its_shares_hold(
    state: str, health: str, bound: int, split: Split
) -> None:
    got = capacity_split(
        partitionable=False,
        state=state,
        health=health,
        devices=3,
        bound=bound,
        shares=1000,
        shared=1,
        allocated_shares=250,
    )
    assert got == split
