"""Failure domains and blast radius on hand-built fabrics (no database)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from fabric.topology.domains import DomainSpec, derive_domains, domain_members
from fabric.topology.graph import FabricGraph, reachable_enclosures
from fabric.topology.impact import (
    register_contributor,
    registered_contributors,
    unregister_contributor,
)
from fabric.topology.radius import Impact, blast_radius, domain_impact
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
def test_domain_members_are_what_belongs_to_the_domain(key: str, counts: tuple[int, int]) -> None:
    graph = two_racks()
    devices, hosts = domain_members(graph, specs_of(graph)[key])
    assert (len(devices), len(hosts)) == counts


FROZEN = "bindings frozen: fabric manager fm-1 unreachable"

# (domains, lost devices, lost hosts, degraded devices, degraded hosts)
BLAST: list[
    tuple[tuple[str, ...], dict[str, str], dict[str, str], dict[str, str], dict[str, str]]
] = [
    (
        # A GPU chassis takes its GPUs, and no host: a host that can no longer reach a dead
        # device has lost nothing that others still have.
        ("enclosure:1",),
        dict.fromkeys(["device:1", "device:2"], "fails with enclosure gpu-a"),
        {},
        {},
        {},
    ),
    (
        ("memory_box:2",),
        dict.fromkeys(["device:3", "device:4"], "fails with memory box mem-a"),
        {},
        {},
        {},
    ),
    (
        # leaf-a: gpu-a and host-a-1 hang off it alone; host-a-2 keeps its spine uplink,
        # whose routes to mem-a and gpu-b were the shortest anyway.
        ("switch:3",),
        dict.fromkeys(["device:1", "device:2"], "cut off: no path to any host"),
        {"host:1": "cut off: loses its last uplink"},
        {},
        {"host:2": "loses an uplink (still reaches every device)"},
    ),
    (
        # spine-1: nothing is lost; every route across the spines loses one of two.
        ("switch:1",),
        {},
        {},
        {
            "device:1": "fewer paths from host-b-1",
            "device:2": "fewer paths from host-b-1",
            "device:3": "fewer paths from 3 hosts (host-a-1, host-a-2, host-b-1)",
            "device:4": "fewer paths from 3 hosts (host-a-1, host-a-2, host-b-1)",
            "device:5": "fewer paths from 2 hosts (host-a-1, host-a-2)",
        },
        {
            "host:1": "fewer paths to 3 devices",
            "host:2": "fewer paths to 3 devices",
            "host:3": "fewer paths to 4 devices",
        },
    ),
    (
        # host-a-2's spine uplink: its shortest routes to mem-a and gpu-b, not to gpu-a.
        ("link:5",),
        {},
        {},
        dict.fromkeys(["device:3", "device:4", "device:5"], "fewer paths from host-a-2"),
        {"host:2": "fewer paths to 3 devices"},
    ),
    (
        ("link:4",),
        dict.fromkeys(["device:1", "device:2"], "cut off: no path to any host"),
        {},
        {},
        {},
    ),
    (
        ("power_feed:1",),
        dict.fromkeys(["device:1", "device:2"], "loses power (pdu-a-1)"),
        {"host:1": "loses power (pdu-a-1)", "host:2": "cut off: loses its last uplink"},
        dict.fromkeys(["device:3", "device:4"], "fewer paths from host-b-1"),
        {"host:3": "fewer paths to 2 devices"},
    ),
    (
        ("rack:2",),
        {"device:5": "fails with rack rack-b"},
        {"host:3": "fails with rack rack-b"},
        {},
        {},
    ),
    (
        # What if both spines fail: mem-a is cut off, and the racks split.
        ("switch:1", "switch:2"),
        dict.fromkeys(["device:3", "device:4"], "cut off: no path to any host"),
        {},
        {
            "device:1": "unreachable from host-b-1",
            "device:2": "unreachable from host-b-1",
            "device:5": "unreachable from 2 hosts (host-a-1, host-a-2)",
        },
        {
            "host:1": "no longer reaches 1 device",
            "host:2": "no longer reaches 1 device",
            "host:3": "no longer reaches 2 devices",
        },
    ),
    (
        ("fabric_manager:1",),
        {},
        {},
        dict.fromkeys(ALL, FROZEN),
        dict.fromkeys(["host:1", "host:2", "host:3"], FROZEN),
    ),
]


@pytest.mark.parametrize(
    ("keys", "devices", "hosts", "devices_degraded", "hosts_degraded"),
    BLAST,
    ids=[",".join(case[0]) for case in BLAST],
)
def test_blast_radius_tells_what_is_lost_from_what_is_degraded(
    keys: tuple[str, ...],
    devices: dict[str, str],
    hosts: dict[str, str],
    devices_degraded: dict[str, str],
    hosts_degraded: dict[str, str],
) -> None:
    impact = impact_of(*keys)
    assert impact.domains == keys
    assert dict(impact.devices) == devices
    assert dict(impact.hosts) == hosts
    assert dict(impact.devices_degraded) == devices_degraded
    assert dict(impact.hosts_degraded) == hosts_degraded


@pytest.mark.parametrize(
    ("keys", "headline"),
    [
        (("enclosure:1",), "2 devices lost"),
        (("switch:3",), "2 devices and 1 host lost; 1 host degraded"),
        (("switch:1",), "nothing lost; 5 devices and 3 hosts degraded"),
        (("rack:2",), "1 device and 1 host lost"),
        ((), "nothing lost or degraded"),
    ],
)
def test_the_headline_says_what_is_lost_and_what_is_degraded(
    keys: tuple[str, ...], headline: str
) -> None:
    assert impact_of(*keys).counts().headline() == headline


def test_blast_radius_lists_the_failed_switches_links_and_enclosures() -> None:
    impact = impact_of("switch:3")
    assert impact.switches == {"switch:3"}
    assert impact.links == {"link:1", "link:2", "link:4", "link:9", "link:10"}
    assert impact.failed == {"switch:3"} | impact.links
    # gpu-a is cut off; mem-a and gpu-b are lost to host-a-1 only, which is lost itself.
    assert impact.enclosures == {"enclosure:1"}
    assert impact.unreachable["host:1"] == {"enclosure:1", "enclosure:2", "enclosure:3"}
    assert impact.unreachable["host:3"] == {"enclosure:1"}


def test_a_lost_binding_is_told_from_a_kept_one() -> None:
    impact = impact_of("switch:3")
    assert impact.binding_lost("host:1", "device:5", "enclosure:3")
    assert impact.binding_lost("host:3", "device:1", "enclosure:1")
    assert not impact.binding_lost("host:3", "device:5", "enclosure:3")
    assert not impact.binding_lost("host:2", "device:3", "enclosure:2")


def test_a_degraded_binding_is_one_whose_shortest_paths_cross_the_failure() -> None:
    impact = impact_of("switch:1")  # spine-1
    # host-b-1 reaches gpu-a through leaf-b, a spine and leaf-a: one spine of two is gone.
    assert impact.binding_degraded("host:3", "device:1", "enclosure:1")
    # host-a-1 reaches gpu-a through leaf-a alone: the spines are not on its way.
    assert not impact.binding_degraded("host:1", "device:1", "enclosure:1")
    assert not impact.binding_lost("host:1", "device:1", "enclosure:1")
    # A lost binding is not also degraded.
    both = impact_of("switch:1", "switch:2")
    assert both.binding_lost("host:1", "device:3", "enclosure:2")
    assert not both.binding_degraded("host:1", "device:3", "enclosure:2")


def test_a_fabric_manager_freezes_bindings_without_failing_anything() -> None:
    impact = impact_of("fabric_manager:1")
    assert impact.failed == frozenset()
    assert impact.frozen == {"switch:1", "switch:2", "switch:3", "switch:4"}
    assert (impact.devices, impact.hosts) == ({}, {})
    assert set(impact.devices_degraded) == ALL
    assert impact.unreachable == {}
    assert impact.binding_degraded("host:3", "device:5", "enclosure:3")


def test_a_what_if_is_the_union_failing_together() -> None:
    alone = [impact_of("switch:1"), impact_of("switch:2")]
    both = impact_of("switch:1", "switch:2")
    assert all(not i.devices for i in alone)
    assert both.failed == alone[0].failed | alone[1].failed
    assert set(both.devices) == {"device:3", "device:4"}
    assert set(both.devices) | set(both.devices_degraded) == ALL


def test_a_failure_of_nothing_loses_nothing() -> None:
    impact = blast_radius(two_racks(), [], contributors=())
    assert (impact.devices, impact.hosts, impact.failed) == ({}, {}, frozenset())
    assert (impact.devices_degraded, impact.hosts_degraded) == ({}, {})


def test_a_domain_that_is_down_still_shows_what_its_failure_takes() -> None:
    # leaf-a failed: its links are down in the tables. Measured as it is, nothing more
    # would be lost; measured with its own links working, it is what leaf-a takes.
    down = two_racks(down=(1, 2, 4, 9, 10))
    spec = specs_of(down)["switch:3"]
    assert not blast_radius(down, [spec], contributors=()).devices
    graph, impact = domain_impact(down, [spec], contributors=())
    assert graph.edges["link:4"].state == "up"
    assert dict(impact.devices) == dict(impact_of("switch:3").devices)
    assert dict(impact.hosts) == {"host:1": "cut off: loses its last uplink"}


def test_links_down_for_another_reason_stay_down_when_measuring() -> None:
    # link:5 (host-a-2's spine uplink) is down on its own: leaf-a now takes host-a-2 too.
    graph = two_racks(down=(5,))
    _, impact = domain_impact(graph, [specs_of(graph)["switch:3"]], contributors=())
    assert set(impact.hosts) == {"host:1", "host:2"}


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


def random_failure(
    seed: int, *, managers: bool = True
) -> tuple[FabricGraph, Impact, frozenset[str]]:
    """A random fabric, the blast radius of up to three of its domains failing together, and
    every node and link that fails (the links of failed nodes included). Without
    `managers`, no fabric manager is among them (it freezes rather than fails)."""
    rng = random.Random(seed)
    graph = random_fabric(rng)
    specs = [s for s in derive_domains(graph) if managers or s.kind != "fabric_manager"]
    chosen = rng.sample(specs, rng.randint(1, min(3, len(specs))))
    impact = blast_radius(graph, chosen, contributors=())
    failed = impact.failed | {
        link_id for n in impact.failed if n in graph.nodes for link_id in graph.adjacency[n]
    }
    return graph, impact, frozenset(failed)


@pytest.mark.parametrize("seed", range(150))
def test_blast_radius_reachability_matches_brute_force(seed: int) -> None:
    graph, impact, failed = random_failure(seed)
    expected = brute_force_unreachable(graph, failed)
    assert {h: set(e) for h, e in impact.unreachable.items()} == expected


def _hops_from(graph: FabricGraph, start: str) -> dict[str, int]:
    """Links from `start` to every node a route reaches (only switches pass traffic on)."""
    hops = {start: 0}
    frontier = [start]
    while frontier:
        following = []
        for here in frontier:
            if here != start and graph.nodes[here].kind != "switch":
                continue
            for edge in graph.edges_of(here):
                there = edge.other(here)
                if edge.state != "down" and there not in hops:
                    hops[there] = hops[here] + 1
                    following.append(there)
        frontier = following
    return hops


def brute_force_degraded(graph: FabricGraph, failed: frozenset[str]) -> dict[str, set[str]]:
    """host -> enclosures it still reaches although a failed node or link lay on one of
    their fewest-hop routes, by walking every pair."""
    found: dict[str, set[str]] = {}
    for host in (n.id for n in graph.of_kind("host") if n.id not in failed):
        from_host = _hops_from(graph, host)
        after = set(reachable_enclosures(graph, host, exclude=failed))
        for enclosure in (n.id for n in graph.of_kind("enclosure")):
            if enclosure in failed or enclosure not in after:
                continue
            from_end = _hops_from(graph, enclosure)
            best = from_host[enclosure]
            on_route = {
                n
                for n in graph.nodes
                if from_host.get(n, 99) + from_end.get(n, 99) == best
                and (graph.nodes[n].kind == "switch" or n in (host, enclosure))
            }
            on_route |= {
                e.id
                for e in graph.edges.values()
                if e.state != "down"
                and (e.a in on_route and e.b in on_route)
                and abs(from_host.get(e.a, 99) - from_host.get(e.b, 99)) == 1
            }
            if on_route & failed:
                found.setdefault(host, set()).add(enclosure)
    return found


@pytest.mark.parametrize("seed", range(150))
def test_degraded_routes_match_brute_force(seed: int) -> None:
    graph, impact, failed = random_failure(seed, managers=False)
    got = {
        host: set(enclosures) - set(impact.unreachable.get(host, ()))
        for host, enclosures in impact.degraded.items()
        if host not in impact.failed
    }
    assert {h: e for h, e in got.items() if e} == brute_force_degraded(graph, failed)
