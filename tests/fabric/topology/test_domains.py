"""Failure domains and blast radius on hand-built fabrics (no database)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from fabric.topology.domains import (
    DomainSpec,
    Impact,
    blast_radius,
    derive_domains,
    domain_counts,
)
from fabric.topology.graph import FabricGraph, reachable_enclosures
from fabric.topology.impact import (
    register_contributor,
    registered_contributors,
    unregister_contributor,
)
from tests.fabric.topology.fabrics import device, link, node, two_racks

ALL = {f"device:{i}" for i in range(1, 6)}


def specs_of(graph: FabricGraph) -> dict[str, DomainSpec]:
    return {spec.key: spec for spec in derive_domains(graph)}


def impact_of(*keys: str, graph: FabricGraph | None = None) -> Impact:
    graph = graph or two_racks()
    specs = specs_of(graph)
    return blast_radius(graph, [specs[k] for k in keys], contributors=())


def test_every_domain_of_the_small_fabric_is_derived() -> None:
    specs = derive_domains(two_racks())
    assert [(s.kind, s.key, s.name) for s in specs if s.kind != "link"] == [
        ("rack", "rack:1", "rack-a"),
        ("rack", "rack:2", "rack-b"),
        ("power_feed", "power_feed:1", "pdu-a-1"),
        ("power_feed", "power_feed:2", "pdu-a-2"),
        ("power_feed", "power_feed:3", "pdu-b-1"),
        ("enclosure", "enclosure:1", "gpu-a"),
        ("enclosure", "enclosure:3", "gpu-b"),
        ("memory_box", "memory_box:2", "mem-a"),
        ("switch", "switch:3", "leaf-a"),
        ("switch", "switch:4", "leaf-b"),
        ("switch", "switch:1", "spine-1"),
        ("switch", "switch:2", "spine-2"),
        ("fabric_manager", "fabric_manager:1", "fm-1"),
    ]
    assert [s.key for s in specs if s.kind == "link"] == [f"link:{i}" for i in range(1, 13)]


@pytest.mark.parametrize(
    ("key", "elements"),
    [
        ("enclosure:1", {"enclosure:1", "device:1", "device:2", "link:4"}),
        ("memory_box:2", {"enclosure:2", "device:3", "device:4", "link:6", "link:7"}),
        ("switch:4", {"switch:4", "link:3", "link:8", "link:11", "link:12"}),
        ("link:5", {"link:5"}),
        ("power_feed:3", {"switch:4", "host:3", "enclosure:3", "device:5", "link:3", "link:8",
                          "link:11", "link:12"}),
        ("rack:2", {"rack:2", "switch:4", "host:3", "enclosure:3", "device:5", "link:3",
                    "link:8", "link:11", "link:12"}),
        ("fabric_manager:1", {"switch:1", "switch:2", "switch:3", "switch:4"}),
    ],
)  # fmt: skip
def test_each_domain_takes_what_fails_with_it(key: str, elements: set[str]) -> None:
    assert specs_of(two_racks())[key].elements == elements


def test_a_power_feed_takes_the_gear_on_it_and_not_the_rest_of_the_rack() -> None:
    feed = specs_of(two_racks())["power_feed:1"].elements
    assert {"switch:1", "switch:3", "host:1", "enclosure:1", "device:1", "device:2"} <= feed
    assert not {"switch:2", "host:2", "enclosure:2", "device:3"} & feed


@pytest.mark.parametrize(
    ("key", "counts"),
    [
        ("rack:1", (4, 2)),
        ("power_feed:2", (2, 1)),
        ("enclosure:1", (2, 0)),
        ("switch:3", (2, 2)),  # what is cabled through it: gpu-a, host-a-1, host-a-2
        ("link:4", (2, 0)),
        ("link:5", (0, 1)),
        ("fabric_manager:1", (5, 3)),
    ],
)
def test_domain_counts_are_what_belongs_to_the_domain(key: str, counts: tuple[int, int]) -> None:
    graph = two_racks()
    assert domain_counts(graph, specs_of(graph)[key]) == counts


BLAST: list[tuple[tuple[str, ...], dict[str, str], dict[str, str]]] = [
    (
        ("enclosure:1",),
        dict.fromkeys(["device:1", "device:2"], "fails with enclosure gpu-a"),
        dict.fromkeys(["host:1", "host:2", "host:3"], "loses paths to 2 devices"),
    ),
    (
        ("memory_box:2",),
        dict.fromkeys(["device:3", "device:4"], "fails with memory box mem-a"),
        dict.fromkeys(["host:1", "host:2", "host:3"], "loses paths to 2 devices"),
    ),
    (
        ("switch:3",),
        {
            "device:1": "cut off: no path to any host",
            "device:2": "cut off: no path to any host",
            "device:3": "unreachable from host-a-1",
            "device:4": "unreachable from host-a-1",
            "device:5": "unreachable from host-a-1",
        },
        {
            "host:1": "loses its last uplink and paths to 5 devices",
            "host:2": "loses paths to 2 devices",
            "host:3": "loses paths to 2 devices",
        },
    ),
    (("switch:1",), {}, {"host:2": "loses an uplink (still reaches every device)"}),
    (("link:5",), {}, {"host:2": "loses an uplink (still reaches every device)"}),
    (
        ("link:4",),
        dict.fromkeys(["device:1", "device:2"], "cut off: no path to any host"),
        dict.fromkeys(["host:1", "host:2", "host:3"], "loses paths to 2 devices"),
    ),
    (
        ("power_feed:1",),
        {
            "device:1": "loses power (pdu-a-1)",
            "device:2": "loses power (pdu-a-1)",
            "device:3": "unreachable from 2 hosts (host-a-1, host-a-2)",
            "device:4": "unreachable from 2 hosts (host-a-1, host-a-2)",
            "device:5": "unreachable from 2 hosts (host-a-1, host-a-2)",
        },
        {
            "host:1": "loses power (pdu-a-1)",
            "host:2": "loses its last uplink and paths to 5 devices",
            "host:3": "loses paths to 2 devices",
        },
    ),
    (
        ("rack:2",),
        {
            "device:1": "unreachable from host-b-1",
            "device:2": "unreachable from host-b-1",
            "device:3": "unreachable from host-b-1",
            "device:4": "unreachable from host-b-1",
            "device:5": "fails with rack rack-b",
        },
        {
            "host:1": "loses paths to 1 device",
            "host:2": "loses paths to 1 device",
            "host:3": "fails with rack rack-b",
        },
    ),
    (
        # What if both spines fail: each alone costs only host-a-2 an uplink.
        ("switch:1", "switch:2"),
        {
            "device:1": "unreachable from host-b-1",
            "device:2": "unreachable from host-b-1",
            "device:3": "cut off: no path to any host",
            "device:4": "cut off: no path to any host",
            "device:5": "unreachable from 2 hosts (host-a-1, host-a-2)",
        },
        {
            "host:1": "loses paths to 3 devices",
            "host:2": "loses paths to 3 devices",
            "host:3": "loses paths to 4 devices",
        },
    ),
]


@pytest.mark.parametrize(("keys", "devices", "hosts"), BLAST, ids=lambda v: str(v)[:40])
def test_blast_radius_names_what_loses_something_and_why(
    keys: tuple[str, ...], devices: dict[str, str], hosts: dict[str, str]
) -> None:
    impact = impact_of(*keys)
    assert impact.domains == keys
    assert dict(impact.devices) == devices
    assert dict(impact.hosts) == hosts


def test_blast_radius_lists_the_failed_switches_links_and_enclosures() -> None:
    impact = impact_of("switch:3")
    assert impact.switches == {"switch:3"}
    assert impact.links == {"link:1", "link:2", "link:4", "link:9", "link:10"}
    assert impact.failed == {"switch:3"} | impact.links
    assert impact.enclosures == {"enclosure:1", "enclosure:2", "enclosure:3"}
    assert impact.unreachable["host:1"] == {"enclosure:1", "enclosure:2", "enclosure:3"}
    assert impact.unreachable["host:3"] == {"enclosure:1"}


def test_a_lost_binding_is_told_from_a_kept_one() -> None:
    impact = impact_of("switch:3")
    assert impact.binding_lost("host:1", "device:5", "enclosure:3")
    assert impact.binding_lost("host:3", "device:1", "enclosure:1")
    assert not impact.binding_lost("host:3", "device:5", "enclosure:3")
    assert not impact.binding_lost("host:2", "device:3", "enclosure:2")


def test_a_fabric_manager_freezes_bindings_without_failing_anything() -> None:
    impact = impact_of("fabric_manager:1")
    assert impact.failed == frozenset()
    assert impact.frozen == {"switch:1", "switch:2", "switch:3", "switch:4"}
    assert set(impact.devices) == ALL
    assert set(impact.devices.values()) == {"bindings frozen: fabric manager fm-1 unreachable"}
    assert set(impact.hosts) == {"host:1", "host:2", "host:3"}
    assert impact.unreachable == {}


def test_a_what_if_is_the_union_failing_together() -> None:
    alone = [impact_of("switch:1"), impact_of("switch:2")]
    both = impact_of("switch:1", "switch:2")
    assert all(not i.devices for i in alone)
    assert both.failed == alone[0].failed | alone[1].failed
    assert set(both.devices) == ALL


def test_a_failure_of_nothing_loses_nothing() -> None:
    impact = blast_radius(two_racks(), [], contributors=())
    assert (impact.devices, impact.hosts, impact.failed) == ({}, {}, frozenset())


# --- contributors -----------------------------------------------------------------------------


def _compositions(impact: Impact) -> Mapping[str, Any]:
    return {"compositions": sorted(impact.devices), "tenants": ["acme"]}


@pytest.fixture
def registered() -> Iterator[None]:
    """Only `_compositions` registered (the composer's own contributor reads the database,
    which these pure tests do not have); the registry is restored afterwards."""
    before = registered_contributors()
    for fn in before:
        unregister_contributor(fn)
    register_contributor(_compositions)
    yield
    unregister_contributor(_compositions)
    for fn in before:
        register_contributor(fn)


def test_registered_contributors_add_to_the_impact(registered: None) -> None:
    graph = two_racks()
    impact = blast_radius(graph, [specs_of(graph)["enclosure:1"]])
    assert impact.extra == {"compositions": ["device:1", "device:2"], "tenants": ["acme"]}


def test_registering_twice_registers_once(registered: None) -> None:
    register_contributor(_compositions)
    assert registered_contributors().count(_compositions) == 1


def test_contributors_passed_in_replace_the_registered_ones(registered: None) -> None:
    graph = two_racks()
    spec = specs_of(graph)["enclosure:1"]
    assert blast_radius(graph, [spec], contributors=[]).extra == {}
    impact = blast_radius(graph, [spec], contributors=[lambda i: {"n": len(i.devices)}])
    assert impact.extra == {"n": 2}


def test_an_unregistered_contributor_is_no_longer_called() -> None:
    register_contributor(_compositions)
    unregister_contributor(_compositions)
    assert _compositions not in registered_contributors()


# --- the fast reachability against brute force ------------------------------------------------


def random_fabric(rng: random.Random) -> FabricGraph:
    switches = rng.randint(1, 6)
    hosts, enclosures = rng.randint(1, 5), rng.randint(1, 5)
    nodes = [node("rack", 1)]
    nodes += [node("switch", i, rack=1) for i in range(1, switches + 1)]
    nodes += [node("host", i, rack=1) for i in range(1, hosts + 1)]
    nodes += [node("enclosure", i, rack=1) for i in range(1, enclosures + 1)]
    nodes += [device(i, i, rack=1, feed=1) for i in range(1, enclosures + 1)]
    edges = []
    ends = [f"host:{i}" for i in range(1, hosts + 1)]
    ends += [f"enclosure:{i}" for i in range(1, enclosures + 1)]
    for end in ends:
        for s in rng.sample(range(1, switches + 1), rng.randint(0, min(2, switches))):
            edges.append((end, f"switch:{s}"))
    for a in range(1, switches + 1):
        for b in range(a + 1, switches + 1):
            if rng.random() < 0.4:
                edges.append((f"switch:{a}", f"switch:{b}"))
    if rng.random() < 0.3:
        edges.append(("host:1", "enclosure:1"))  # cabled straight
    links = [
        link(pk, a, b, rng.randint(1, 9), state="down" if rng.random() < 0.1 else "up")
        for pk, (a, b) in enumerate(edges, start=1)
    ]
    return FabricGraph(nodes, links)


def brute_force_unreachable(graph: FabricGraph, failed: frozenset[str]) -> dict[str, set[str]]:
    lost: dict[str, set[str]] = {}
    for host in (n.id for n in graph.of_kind("host")):
        before = set(reachable_enclosures(graph, host))
        after = set() if host in failed else set(reachable_enclosures(graph, host, exclude=failed))
        if before - after:
            lost[host] = before - after
    return lost


@pytest.mark.parametrize("seed", range(150))
def test_blast_radius_reachability_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    graph = random_fabric(rng)
    specs = derive_domains(graph)
    chosen = rng.sample(specs, rng.randint(1, min(3, len(specs))))
    impact = blast_radius(graph, chosen, contributors=())
    failed = impact.failed | {
        link_id for n in impact.failed if n in graph.nodes for link_id in graph.adjacency[n]
    }
    expected = brute_force_unreachable(graph, frozenset(failed))
    assert {h: set(e) for h, e in impact.unreachable.items()} == expected
