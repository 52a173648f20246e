"""The engine's host walk and counts (composer.placement.hosts): the ways written out for
speed (the group's index as the walk, `ok` written out over a group's hosts) give exactly
the hosts of the general way, the group's candidates filtered by `Hosts.ok`."""

from __future__ import annotations

import random

from composer.placement.hosts import Hosts
from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.snapshot import DeviceInfo, EnclosureInfo, HostInfo, Reach, Snapshot


def fabric(rng: random.Random) -> Snapshot:
    """Hosts of random free cores, memory and switches, in reach groups of one to four
    hosts, each group reaching a chassis of its own."""
    hosts, enclosures, devices, reach = [], [], [], {}
    for g in range(rng.randint(1, 5)):
        chassis = EnclosureInfo(f"enc:{g}", f"c{g}", (f"sw{g}",), device_total=4)
        enclosures.append(chassis)
        devices += [
            DeviceInfo(f"gpu:{g}-{i}", f"g{g}-{i}", "gpu", "H100", chassis.id) for i in range(4)
        ]
        for i in range(rng.randint(1, 4)):
            host = HostInfo(
                f"host:{g}-{i}",
                f"h{g}-{i}",
                rng.choice((0, 8, 16, 32)),
                rng.choice((0, 64, 256)),
                32,
                100.0,
                0.0,
                (rng.choice((f"sw{g}", "spine")),),
            )
            hosts.append(host)
            reach[host.id] = {chassis.id: Reach(500, 32.0, 1)}
    return Snapshot.build(hosts=hosts, enclosures=enclosures, devices=devices, reach=reach)


def test_the_written_out_walk_and_counts_are_the_general_ones() -> None:
    rng = random.Random(11)
    for _ in range(300):
        snapshot = fabric(rng)
        request = PlacementRequest(
            items=(DeviceItem("gpu", 1),),
            cores=rng.choice((0, 8, 16)),
            host_memory_gib=rng.choice((0, 0, 64, 128)),
        )
        blocked = frozenset(rng.choice(((), ("spine",), ("sw0",))))
        hosts = Hosts(request, snapshot, blocked)
        every = set(range(len(snapshot.groups)))
        for isolate in (True, False):
            general = [
                h
                for g in sorted(every)
                for h in hosts._candidates(g)
                if hosts.ok(snapshot.hosts[h], isolate=isolate)
            ]
            assert hosts.count(every, isolate=isolate) == len(general)
        for group in every:
            general = [h for h in hosts._candidates(group) if hosts.ok(snapshot.hosts[h])]
            assert list(hosts._walk(group)) == general
