"""Blast radius: what is lost and what is degraded when failure domains fail.

Pure Python over a `FabricGraph`. This is the one definition every figure of a blast radius
comes from: the failure-domain list, an alert, the topology page, the what-if and the API.

- **Lost**: a device that fails or loses power with the domain, or that no host reaches any
  more (cut off); a host that fails or loses power, or that reaches nothing any more (its
  last uplink gone). What is lost stops working for everyone.
- **Degraded**: a device or host that still works and is still reached, but some surviving
  host no longer reaches it (the fabric split), or reaches it over fewer shortest paths
  (less redundancy or bandwidth, or a longer path; see routes.py); a host or enclosure that
  loses an uplink; and everything a fabric manager runs while it is unreachable (bindings
  frozen). Hosts that are lost do not make what they reached degraded: their loss is
  counted once, as theirs.
- **For whom**: a binding of a device to a host is lost when either is lost or the host no
  longer reaches the device (`Impact.binding_lost`), degraded when it keeps working over
  fewer paths (`Impact.binding_degraded`); the composition layer's contributor turns that
  into the compositions and tenants hurt (fabric.topology.impact).

`blast_radius(graph, specs)` fails the union of the specs' elements at once (one spec is a
single domain failing, several are a what-if). `domain_impact()` is what callers use: the
same, measured on the fabric with the domains' own links working, so a domain that is down
right now still shows what its failure takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fabric.topology.domains import FROZEN_KINDS, DomainSpec, with_parts
from fabric.topology.graph import LINK_DOWN, FabricGraph
from fabric.topology.impact import ImpactContributor, registered_contributors
from fabric.topology.reach import ReachIndex, lost_reach, reach_index
from fabric.topology.routes import degraded_routes

__all__ = [
    "DEFINITION",
    "RADIUS_VERSION",
    "Impact",
    "ImpactCounts",
    "blast_radius",
    "domain_impact",
    "healed",
    "radius_headline",
]

# Said next to the figures on every page that shows a blast radius (and in docs/topology.md).
DEFINITION = (
    "Lost: devices that fail or lose power with it, or that no host reaches any more, and "
    "hosts that fail, lose power or reach nothing any more. Degraded: still reached, but some "
    "host no longer reaches them or reaches them over fewer paths (less redundancy or "
    "bandwidth), or their fabric manager is unreachable. Compositions are hit when they lose "
    "their host or a device, and degraded when they keep every device but over fewer paths."
)

# Which definition stored figures follow. Raise it with any change to what a blast radius
# counts: failure domains stored under another one are recounted within a beat tick
# (fabric.services.domains.domains_refresh_outdated) rather than shown with the old rule's
# figures until the next inventory sync. 1: members (before lost and degraded were told
# apart); 2: lost and degraded, as DEFINITION says.
RADIUS_VERSION = 2

# How a host or device directly in a failing domain is said to fail, by domain kind.
_FAILS_WITH = {
    "rack": "fails with rack {name}",
    "power_feed": "loses power ({name})",
    "enclosure": "fails with enclosure {name}",
    "memory_box": "fails with memory box {name}",
    "switch": "fails with switch {name}",
    "link": "fails with link {name}",
}


@dataclass(frozen=True, slots=True)
class ImpactCounts:
    """The headline figures of a blast radius."""

    devices_lost: int = 0
    hosts_lost: int = 0
    devices_degraded: int = 0
    hosts_degraded: int = 0

    def headline(self) -> str:
        """The sentence for them: "40 devices and 8 hosts lost", "nothing lost; 64 devices
        degraded", …"""
        return radius_headline(
            devices_lost=self.devices_lost,
            hosts_lost=self.hosts_lost,
            devices_degraded=self.devices_degraded,
            hosts_degraded=self.hosts_degraded,
        )


def _things(devices: int, hosts: int) -> str:
    parts = [
        f"{n} {noun}{'s' if n != 1 else ''}"
        for n, noun in ((devices, "device"), (hosts, "host"))
        if n
    ]
    return " and ".join(parts)


def radius_headline(
    *, devices_lost: int, hosts_lost: int, devices_degraded: int = 0, hosts_degraded: int = 0
) -> str:
    """The one sentence every page and the API use for a blast radius's figures."""
    lost = _things(devices_lost, hosts_lost)
    degraded = _things(devices_degraded, hosts_degraded)
    if not lost and not degraded:
        return "nothing lost or degraded"
    if not degraded:
        return f"{lost} lost"
    return f"{lost or 'nothing'} lost; {degraded} degraded"


@dataclass(frozen=True, slots=True)
class Impact:
    """What is lost and what is degraded when some domains fail together.

    `failed`: node and link ids lost directly. `devices` / `hosts`: lost ones, id -> why.
    `devices_degraded` / `hosts_degraded`: degraded ones, id -> why. `switches`, `links`:
    those that fail (and, for switches, those frozen with their manager). `enclosures`:
    those that fail, are cut off, or are degraded. `unreachable`: host -> enclosures it
    reached before and no longer does. `degraded`: host -> enclosures it still reaches over
    fewer shortest paths (or frozen). `frozen`: the switches of unreachable fabric managers.
    `extra`: what contributors added.
    """

    domains: tuple[str, ...]
    failed: frozenset[str]
    devices: Mapping[str, str]
    hosts: Mapping[str, str]
    switches: frozenset[str]
    links: frozenset[str]
    enclosures: frozenset[str]
    extra: Mapping[str, Any] = field(default_factory=dict)
    unreachable: Mapping[str, frozenset[str]] = field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    devices_degraded: Mapping[str, str] = field(default_factory=dict)
    hosts_degraded: Mapping[str, str] = field(default_factory=dict)
    degraded: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def binding_lost(self, host_id: str, device_id: str, enclosure_id: str | None) -> bool:
        """Whether a binding of `device_id` (in `enclosure_id`) to `host_id` is lost: the
        host or device is lost, or the host no longer reaches the enclosure."""
        if host_id in self.hosts or device_id in self.devices:
            return True
        if host_id in self.failed or device_id in self.failed:
            return True
        return enclosure_id is not None and enclosure_id in self.unreachable.get(host_id, ())

    def binding_degraded(self, host_id: str, device_id: str, enclosure_id: str | None) -> bool:
        """Whether a binding that is not lost keeps working over fewer paths (or frozen)."""
        if self.binding_lost(host_id, device_id, enclosure_id):
            return False
        return enclosure_id is not None and enclosure_id in self.degraded.get(host_id, ())

    def counts(self) -> ImpactCounts:
        """The headline figures (see ImpactCounts)."""
        return ImpactCounts(
            devices_lost=len(self.devices),
            hosts_lost=len(self.hosts),
            devices_degraded=len(self.devices_degraded),
            hosts_degraded=len(self.hosts_degraded),
        )


def _few(names: list[str], noun: str) -> str:
    names.sort()
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:3])
    return f"{len(names)} {noun} ({shown}{', …' if len(names) > 3 else ''})"


def _devices(n: int) -> str:
    return f"{n} device{'s' if n != 1 else ''}"


def healed(graph: FabricGraph, specs: Sequence[DomainSpec]) -> FabricGraph:
    """`graph` with the domains' own links up again (the same graph when none is down).

    When a domain has failed, its links are down in the tables, and reachability never uses
    a down link: its blast radius measured on that graph would be empty. It is measured
    instead against the fabric with these domains' links working; links down for other
    reasons stay down (what they cut off was lost before, not by this failure).
    """
    down = {
        element
        for spec in specs
        for element in with_parts(graph, spec.elements)
        if element in graph.edges and graph.edges[element].state == LINK_DOWN
    }
    if not down:
        return graph
    edges = [replace(e, state="up") if e.id in down else e for e in graph.edges.values()]
    return FabricGraph(
        graph.nodes.values(), edges, power_feeds=graph.power_feeds, managers=graph.managers
    )


def domain_impact(
    graph: FabricGraph,
    specs: Sequence[DomainSpec],
    *,
    contributors: Sequence[ImpactContributor] | None = None,
) -> tuple[FabricGraph, Impact]:
    """The blast radius of `specs` failing together, on the fabric with their own links
    working (`healed`), and the graph it was measured on. Every caller that shows a blast
    radius goes through here, so all of them agree."""
    graph = healed(graph, specs)
    return graph, blast_radius(graph, specs, contributors=contributors)


def blast_radius(
    graph: FabricGraph,
    specs: Sequence[DomainSpec],
    *,
    contributors: Sequence[ImpactContributor] | None = None,
) -> Impact:
    """What is lost and what is degraded when every domain of `specs` fails at once, on
    `graph` as it is (see the module docstring; callers want `domain_impact`). The
    contributors (the registered ones when None) add to `extra`."""
    nodes = graph.nodes
    cause: dict[str, str] = {}  # failed host or device -> why (the first domain wins)
    failed_nodes: set[str] = set()
    failed_links: set[str] = set()
    frozen: set[str] = set()
    frozen_managers: list[tuple[str, str]] = []
    for spec in specs:
        if spec.kind in FROZEN_KINDS:
            frozen.update(spec.elements)
            frozen_managers.append((spec.key.removeprefix("fabric_"), spec.name))
            continue
        reason = _FAILS_WITH.get(spec.kind, "fails with {name}").format(name=spec.name)
        for element in with_parts(graph, spec.elements):
            node = nodes.get(element)
            if node is not None:
                failed_nodes.add(element)
                if node.kind in ("host", "device"):
                    cause.setdefault(element, reason)
            elif element in graph.edges:
                failed_links.add(element)

    index = reach_index(graph)
    lost = lost_reach(index, failed_nodes, failed_links)
    routes = degraded_routes(graph, failed_nodes, failed_links, lost)

    # Lost hosts: they fail, or reach nothing any more.
    hosts: dict[str, str] = {}
    for host, (before, after) in lost.uplinks.items():
        if host not in failed_nodes and before and not after:
            hosts[host] = "cut off: loses its last uplink"
    for host, gone in lost.unreachable.items():
        reached = index.partners(host)
        if host not in failed_nodes and host not in hosts and reached and gone >= reached:
            hosts[host] = "cut off: reaches no device any more"
    hosts.update((e, reason) for e, reason in cause.items() if nodes[e].kind == "host")
    lost_hosts = frozenset(hosts)

    # Lost devices: they fail, or no host reaches them any more.
    devices: dict[str, str] = {}
    lost_enclosures = {n for n in failed_nodes if nodes[n].kind == "enclosure"}
    for enclosure, by in lost.lost_by.items():
        if enclosure not in failed_nodes and len(by) >= len(index.partners(enclosure)):
            lost_enclosures.add(enclosure)
            devices.update(
                dict.fromkeys(graph.devices_in(enclosure), "cut off: no path to any host")
            )
    devices.update((e, reason) for e, reason in cause.items() if nodes[e].kind == "device")

    # Degraded devices: some surviving host no longer reaches them, or over fewer paths.
    devices_degraded: dict[str, str] = {}
    reasons: dict[tuple[str, frozenset[str]], str] = {}

    def say(verb: str, who: frozenset[str]) -> str:
        found = reasons.get((verb, who))
        if found is None:
            names = [nodes[h].name for h in who]
            found = reasons[(verb, who)] = f"{verb} {_few(names, 'hosts')}"
        return found

    degraded_enclosures: set[str] = set()
    fewer_by_enclosure = routes.by_enclosure()
    for enclosure in {*lost.lost_by, *fewer_by_enclosure} - lost_enclosures:
        lost_from = lost.lost_by.get(enclosure)
        cut = (
            frozenset(lost_from - lost_hosts if lost_hosts else lost_from)
            if lost_from
            else frozenset()
        )
        if cut:
            reason = say("unreachable from", cut)
        else:
            fewer = fewer_by_enclosure.get(enclosure, frozenset())
            if lost_hosts:  # else the set shared by its block, hashed once
                fewer = fewer - lost_hosts
            if not fewer:
                continue
            reason = say("fewer paths from", fewer)
        degraded_enclosures.add(enclosure)
        devices_degraded.update(dict.fromkeys(graph.devices_in(enclosure), reason))

    # Degraded hosts: they no longer reach, or reach over fewer paths, devices that others
    # still reach; or they lose an uplink.
    hosts_degraded: dict[str, str] = {}
    fewer_by_host = routes.by_host()
    said: dict[tuple[int, int], str] = {}
    tallied: dict[tuple[int, int], tuple[int, int]] = {}  # hosts share their sets: count once
    empty: frozenset[str] = frozenset()
    for host in ({*lost.unreachable, *fewer_by_host, *lost.uplinks}) - lost_hosts - failed_nodes:
        gone = lost.unreachable.get(host, empty)
        reached_fewer = fewer_by_host.get(host, empty)
        key = (id(gone), id(reached_fewer))
        counted = tallied.get(key)
        if counted is None:
            counted = tallied[key] = (
                sum(index.device_count[e] for e in gone - lost_enclosures),
                sum(index.device_count[e] for e in reached_fewer - gone - lost_enclosures),
            )
        cut_off_count, fewer_count = counted
        before, after = lost.uplinks.get(host, (0, 0))
        if cut_off_count or fewer_count:
            host_reason = said.get(counted)
            if host_reason is None:
                parts = []
                if cut_off_count:
                    parts.append(f"no longer reaches {_devices(cut_off_count)}")
                if fewer_count:
                    parts.append(f"fewer paths to {_devices(fewer_count)}")
                host_reason = said[counted] = "; ".join(parts)
            hosts_degraded[host] = host_reason
        elif after < before:
            hosts_degraded[host] = "loses an uplink (still reaches every device)"
    for enclosure in _enclosures_losing_an_uplink(index, failed_nodes, failed_links):
        if enclosure in lost_enclosures:
            continue
        degraded_enclosures.add(enclosure)
        for device in graph.devices_in(enclosure):
            devices_degraded.setdefault(device, "loses an uplink (still reached)")

    degraded: dict[str, frozenset[str]] = dict(fewer_by_host)
    frozen_switches: set[str] = set()
    for manager, name in frozen_managers:
        reason = f"bindings frozen: fabric manager {name} unreachable"
        for node in nodes.values():
            if node.manager != manager:
                continue
            if node.kind == "device" and node.id not in devices:
                devices_degraded.setdefault(node.id, reason)
            elif node.kind == "host" and node.id not in hosts:
                hosts_degraded.setdefault(node.id, reason)
                degraded[node.id] = index.partners(node.id)
            elif node.kind == "switch":
                frozen_switches.add(node.id)

    impact = Impact(
        domains=tuple(spec.key for spec in specs),
        failed=frozenset(failed_nodes | failed_links),
        devices=devices,
        hosts=hosts,
        switches=frozenset(failed_nodes & index.switches) | frozen_switches,
        links=frozenset(failed_links),
        enclosures=frozenset(lost_enclosures | degraded_enclosures),
        unreachable=lost.unreachable,
        frozen=frozenset(frozen | frozen_switches),
        devices_degraded=devices_degraded,
        hosts_degraded=hosts_degraded,
        degraded=degraded,
    )
    chosen = registered_contributors() if contributors is None else contributors
    if not chosen:
        return impact
    extra: dict[str, Any] = {}
    for contributor in chosen:
        extra.update(contributor(impact))
    return replace(impact, extra=extra)


def _enclosures_losing_an_uplink(
    index: ReachIndex, failed_nodes: set[str], failed_links: set[str]
) -> set[str]:
    """Surviving enclosures with a failed uplink (the link, or the switch it leads to)."""
    found: set[str] = set()
    switches = failed_nodes & index.switches
    for end in {e for link in failed_links for e in index.link_ends.get(link, ())}:
        if end not in failed_nodes and index.kinds[end] == "enclosure":
            found.add(end)
    for switch in switches:
        for end in index.switch_ends.get(switch, ()):
            if end not in failed_nodes and index.kinds[end] == "enclosure":
                found.add(end)
    return found
