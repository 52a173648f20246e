"""`Snapshot.taking` patches the snapshot (`replacing`) rather than building it again: the
result equals what a rebuild of the inventory less what was taken gives (every field, every
mapping in the same order), `departed` included, on random takes of random fabrics."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import cast

import pytest

from composer.placement.constraints import item_candidates
from composer.placement.engine import place
from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.shareable import shared_out
from composer.placement.snapshot import LINEAGE, DeviceInfo, Snapshot
from fabric.kinds import is_sliced
from tests.composer.placement.test_incremental import fabric, same


def rebuilt(
    snapshot: Snapshot,
    devices: set[str],
    memory_gib: dict[str, int],
    cores: dict[str, int],
    host_memory_gib: dict[str, int],
    shares: dict[str, tuple[str, int]],
) -> Snapshot:
    """What `taking` gave when it rebuilt the snapshot: every device and host visited."""
    kept: list[DeviceInfo] = []
    departed = dict(snapshot.departed)
    for device in snapshot.devices.values():
        if device.id in devices:
            departed[device.id] = device
            continue
        if device.id in memory_gib:
            device = replace(device, free_gib=max(0, device.free_gib - memory_gib[device.id]))
            if is_sliced(device.kind) and not device.free_gib:
                departed[device.id] = device
                continue
        if device.id in shares:
            device = shared_out(device, *shares[device.id])
            if not device.shares_free:
                departed[device.id] = device
                continue
        kept.append(device)
    hosts = [
        replace(
            h,
            cores_free=max(0, h.cores_free - cores.get(h.id, 0)),
            memory_gib_free=max(0, h.memory_gib_free - host_memory_gib.get(h.id, 0)),
        )
        for h in snapshot.hosts.values()
    ]
    return Snapshot.build(
        hosts=hosts,
        enclosures=snapshot.enclosures.values(),
        devices=kept,
        reach=snapshot.reach,
        switch_names=snapshot.switch_names,
        holders=snapshot.holders,
        critical=snapshot.critical,
        sliced=snapshot.sliced,
        oversubscription=snapshot.oversubscription,
        departed=departed,
        workload=snapshot.workload,
    )


@pytest.mark.parametrize("seed", range(40))
def test_taking_equals_a_rebuild_on_random_takes(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = fabric(rng)
    request = PlacementRequest(items=(DeviceItem("gpu", 1),), cores=2)
    for _ in range(10):
        free = list(snapshot.devices.values())
        whole = [d for d in free if d.shared_host is None]
        devices = {d.id for d in rng.sample(whole, min(len(whole), rng.randint(0, 3)))}
        memory = {
            d.id: rng.choice((16, 64, 512))
            for d in free
            if d.kind == "cxl_memory" and d.id not in devices and rng.random() < 0.4
        }
        shares = {
            d.id: (d.shared_host or rng.choice(list(snapshot.hosts)), rng.choice((100, 500)))
            for d in free
            if d.kind == "gpu" and d.id not in devices and rng.random() < 0.2
        }
        shares = {
            k: (h, min(n, (d.shares_free or 1000) if (d := snapshot.devices[k]) else n))
            for k, (h, n) in shares.items()
        }
        hosts = rng.sample(list(snapshot.hosts), rng.randint(0, 3))
        cores = {h: rng.randint(0, 80) for h in hosts}
        host_memory = {h: rng.randint(0, 300) for h in hosts[:1]}
        taken = snapshot.taking(
            devices=devices,
            memory_gib=memory,
            cores=cores,
            host_memory_gib=host_memory,
            shares=shares,
        )
        expected = rebuilt(snapshot, devices, memory, cores, host_memory, shares)
        same(taken, expected)
        assert set(taken.memo) <= {LINEAGE}
        assert place(request, taken) == place(request, expected)
        snapshot = taken


def test_taking_nothing_is_a_fresh_snapshot_of_the_same_inventory() -> None:
    snapshot = fabric(random.Random(3))
    taken = snapshot.taking()
    same(taken, snapshot)
    assert taken is not snapshot and not taken.memo


@pytest.mark.parametrize("seed", range(30))
def test_candidates_inherited_from_the_base_equal_those_of_a_rebuild(seed: int) -> None:
    """Each snapshot taken from one shared base (as a booking's occurrences are) filters
    only the enclosures its takes touch; its candidates and funnel equal a rebuild's."""
    rng = random.Random(seed)
    base = fabric(rng)
    keys = [
        ("gpu", None, {}, frozenset()),
        ("gpu", "A", {}, frozenset()),
        ("gpu", None, {"memory_gib": 80.0}, frozenset()),
        ("gpu", None, {}, frozenset({"e1", "sw0"})),
        ("cxl_memory", None, {}, frozenset({"e2"})),
    ]
    every = list(base.devices.values())
    for device in every:  # some devices meet the minimum
        if device.kind == "gpu" and rng.random() < 0.5:
            every[every.index(device)] = replace(device, attributes={"memory_gib": 80.0})
    base = base.replacing(devices=every)
    base = Snapshot.build(
        hosts=base.hosts.values(), enclosures=base.enclosures.values(),
        devices=base.devices.values(), reach=base.reach,
    )  # fmt: skip
    for kind, model, minima, blocked in rng.sample(keys, 2):  # some worked out on the base
        item_candidates(base, kind, model, minima, blocked, [], "x")
    for _ in range(8):
        whole = [d for d in base.devices.values() if d.shared_host is None]
        taken = base.taking(devices={d.id for d in rng.sample(whole, min(3, len(whole)))})
        assert cast(tuple[Snapshot, frozenset[str]], taken.memo[LINEAGE])[0] is base
        expected = rebuilt(taken, set(), {}, {}, {}, {})
        for kind, model, minima, blocked in keys:
            steps: list[tuple[str, int, int]] = []
            fresh: list[tuple[str, int, int]] = []
            got = item_candidates(taken, kind, model, minima, blocked, steps, "x")
            want = item_candidates(expected, kind, model, minima, blocked, fresh, "x")
            assert list(got.items()) == list(want.items())  # in the same order too
            assert steps == fresh
