"""Failure domains (what fails together) and the blast radius of their failure.

Pure Python over a `FabricGraph`. A domain is a set of graph elements (node and link ids)
lost when it fails:

| kind | key | elements |
|---|---|---|
| rack | rack:<pk> | the rack, its hosts, switches and enclosures, their devices and links |
| power_feed | power_feed:<pk> | the hosts, switches and enclosures on the feed, the
  enclosures' devices, and their links |
| enclosure | enclosure:<pk> | the enclosure (GPU chassis, JBOF, I/O chassis), its devices,
  its links |
| memory_box | memory_box:<pk> | the same, for a CXL memory box |
| switch | switch:<pk> | the switch and its links |
| link | link:<pk> | the link |
| fabric_manager | fabric_manager:<pk> | the manager's switches — *frozen*, not down |

A fabric manager going away does not stop the data path: bound devices keep working, but
nothing can be bound, unbound or re-routed through its switches until it is back. So its
domain is evaluated as frozen: its switches, hosts and devices are reported with the reason
"bindings frozen", nothing is counted as failed, and no reachability is lost.

`blast_radius(graph, specs)` fails the union of the specs' elements at once (one spec is a
single domain failing, several are a what-if) and reports what loses something. See
docs/topology.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fabric.topology.graph import FabricGraph, Node
from fabric.topology.impact import ImpactContributor, registered_contributors
from fabric.topology.reach import lost_reach, reach_index

__all__ = [
    "DOMAIN_KINDS",
    "DomainSpec",
    "Impact",
    "blast_radius",
    "derive_domains",
    "domain_counts",
    "domain_members",
]

DOMAIN_KINDS = (
    "rack",
    "power_feed",
    "enclosure",
    "memory_box",
    "switch",
    "link",
    "fabric_manager",
)
MEMORY_BOX = "cxl_memory_box"  # fabric.choices.EnclosureKind.CXL_MEMORY_BOX
FROZEN_KINDS = frozenset({"fabric_manager"})  # lose control, not the data path

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
class DomainSpec:
    """One failure domain: its key ("switch:12"), kind, name, and the elements it takes."""

    key: str
    kind: str
    name: str
    elements: frozenset[str]


@dataclass(frozen=True, slots=True)
class Impact:
    """What loses something when some domains fail together.

    `failed`: node and link ids lost directly. `devices` / `hosts`: id -> why it loses
    something. `switches`, `links`, `enclosures`: those that fail (and, for enclosures,
    those some host can no longer reach; for switches, those frozen with their manager).
    `unreachable`: host -> enclosures it reached before and no longer does. `frozen`: the
    switches of unreachable fabric managers. `extra`: what contributors added.
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

    def binding_lost(self, host_id: str, device_id: str, enclosure_id: str | None) -> bool:
        """Whether a binding of `device_id` (in `enclosure_id`) to `host_id` is lost: the
        host or device fails, or the host no longer reaches the enclosure."""
        if host_id in self.failed or device_id in self.failed:
            return True
        return enclosure_id is not None and enclosure_id in self.unreachable.get(host_id, ())


def _with_parts(graph: FabricGraph, ids: Iterable[str]) -> frozenset[str]:
    """`ids`, plus the devices of its enclosures and the links of its nodes."""
    elements = set(ids)
    for node_id in list(elements):
        node = graph.nodes.get(node_id)
        if node is None:
            continue
        if node.kind == "enclosure":
            elements.update(graph.devices_in(node_id))
        if node.kind in ("host", "switch", "enclosure"):
            elements.update(graph.adjacency[node_id])
    return frozenset(elements)


def derive_domains(graph: FabricGraph) -> list[DomainSpec]:
    """Every failure domain of the graph, in the order of DOMAIN_KINDS, then by name.

    Power feeds and managers that supply or run nothing in the graph have no domain.
    """
    racks: dict[str, list[str]] = {}
    feeds: dict[str, list[str]] = {}
    manager_switches: dict[str, list[str]] = {}
    managers_seen: set[str] = set()
    specs: list[DomainSpec] = []
    enclosures: list[Node] = []
    switches: list[Node] = []
    for node in graph.nodes.values():
        managers_seen.add(node.manager)
        if node.kind == "rack":
            racks.setdefault(node.id, []).append(node.id)
            continue
        if node.kind == "device":
            continue  # goes with its enclosure
        if node.rack is not None:
            racks.setdefault(node.rack, []).append(node.id)
        if node.power_feed is not None:
            feeds.setdefault(node.power_feed, []).append(node.id)
        if node.kind == "enclosure":
            enclosures.append(node)
        elif node.kind == "switch":
            switches.append(node)
            manager_switches.setdefault(node.manager, []).append(node.id)

    def spec(key: str, kind: str, name: str, ids: Iterable[str]) -> DomainSpec:
        return DomainSpec(key, kind, name, _with_parts(graph, ids))

    by_name: list[DomainSpec] = []
    for rack, ids in racks.items():
        if rack in graph.nodes:
            by_name.append(spec(rack, "rack", graph.nodes[rack].name, ids))
    specs += sorted(by_name, key=lambda s: s.name)
    by_name = [
        spec(feed, "power_feed", graph.power_feeds.get(feed, feed), ids)
        for feed, ids in feeds.items()
    ]
    specs += sorted(by_name, key=lambda s: s.name)
    for kind in ("enclosure", "memory_box"):
        by_name = [
            spec(f"{kind}:{n.pk}", kind, n.name, [n.id])
            for n in enclosures
            if (n.attrs.get("enclosure_kind") == MEMORY_BOX) == (kind == "memory_box")
        ]
        specs += sorted(by_name, key=lambda s: s.name)
    specs += sorted((spec(n.id, "switch", n.name, [n.id]) for n in switches), key=lambda s: s.name)
    specs += [
        DomainSpec(edge.id, "link", _link_name(graph, edge.id), frozenset({edge.id}))
        for edge in graph.edges.values()
    ]
    for manager in sorted(m for m in managers_seen if m):
        name = graph.managers.get(manager, manager)
        switch_ids = frozenset(manager_switches.get(manager, ()))
        specs.append(DomainSpec(f"fabric_{manager}", "fabric_manager", name, switch_ids))
    return specs


def _link_name(graph: FabricGraph, link_id: str) -> str:
    edge = graph.edges[link_id]
    return f"{graph.nodes[edge.a].name} <-> {graph.nodes[edge.b].name}"


def domain_members(graph: FabricGraph, spec: DomainSpec) -> tuple[list[str], list[str]]:
    """(devices, hosts) that belong to a domain: what fails with it; for a switch or link,
    the hosts and enclosures cabled through it (and the enclosures' devices); for a fabric
    manager, everything it runs."""
    nodes = graph.nodes
    if spec.kind in FROZEN_KINDS:
        manager = spec.key.removeprefix("fabric_")
        owned = [n for n in nodes.values() if n.manager == manager]
        return (
            [n.id for n in owned if n.kind == "device"],
            [n.id for n in owned if n.kind == "host"],
        )
    if spec.kind in ("switch", "link"):
        ends: set[str] = set()
        for element in spec.elements:
            edge = graph.edges.get(element)
            if edge is not None:
                ends.update(e for e in (edge.a, edge.b) if nodes[e].kind in ("host", "enclosure"))
        devices = [d for e in ends if nodes[e].kind == "enclosure" for d in graph.devices_in(e)]
        return devices, [e for e in ends if nodes[e].kind == "host"]
    members = [nodes[e] for e in spec.elements if e in nodes]
    return (
        [n.id for n in members if n.kind == "device"],
        [n.id for n in members if n.kind == "host"],
    )


def domain_counts(graph: FabricGraph, spec: DomainSpec) -> tuple[int, int]:
    """(devices, hosts) that belong to a domain (see `domain_members`)."""
    devices, hosts = domain_members(graph, spec)
    return len(devices), len(hosts)


def _few(names: list[str], noun: str) -> str:
    names.sort()
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:3])
    return f"{len(names)} {noun} ({shown}{', …' if len(names) > 3 else ''})"


def blast_radius(
    graph: FabricGraph,
    specs: Sequence[DomainSpec],
    *,
    contributors: Sequence[ImpactContributor] | None = None,
) -> Impact:
    """What loses something when every domain of `specs` fails at once.

    A device loses something when it fails with a domain, or when a host that reached it
    before no longer does ("cut off: no path to any host" when none does). A host loses
    something when it fails, loses an uplink, or no longer reaches devices it reached.
    Fabric manager domains freeze bindings instead (see the module docstring). The
    contributors (the registered ones when None) add to `extra`.
    """
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
        for element in _with_parts(graph, spec.elements):
            node = nodes.get(element)
            if node is not None:
                failed_nodes.add(element)
                if node.kind in ("host", "device"):
                    cause.setdefault(element, reason)
            elif element in graph.edges:
                failed_links.add(element)

    index = reach_index(graph)
    lost = lost_reach(index, failed_nodes, failed_links)

    devices: dict[str, str] = {}
    reasons: dict[frozenset[str], str] = {}
    for enclosure, hosts in lost.lost_by.items():
        if enclosure in failed_nodes:
            continue
        if len(hosts) >= len(index.partners(enclosure)):
            reason = "cut off: no path to any host"
        else:
            key = frozenset(hosts)
            reason = reasons.get(key, "")
            if not reason:
                names = [nodes[h].name for h in hosts]
                reason = reasons[key] = f"unreachable from {_few(names, 'hosts')}"
        devices.update(dict.fromkeys(graph.devices_in(enclosure), reason))
    for element, reason in cause.items():
        if nodes[element].kind == "device":
            devices[element] = reason

    hosts_out: dict[str, str] = {}
    counted: dict[int, int] = {}
    for host, enclosures in lost.unreachable.items():
        if host in failed_nodes:
            continue
        n = counted.get(id(enclosures))
        if n is None:
            n = counted[id(enclosures)] = sum(index.device_count[e] for e in enclosures)
        hosts_out[host] = f"loses paths to {n} device{'s' if n != 1 else ''}"
    for host, (before, after) in lost.uplinks.items():
        if host in failed_nodes or after == before:
            continue
        if after == 0:
            paths = hosts_out.get(host, "").replace("loses paths", "and paths")
            hosts_out[host] = f"loses its last uplink{' ' + paths if paths else ''}"
        elif host not in hosts_out:
            hosts_out[host] = "loses an uplink (still reaches every device)"
    for element, reason in cause.items():
        if nodes[element].kind == "host":
            hosts_out[element] = reason

    frozen_switches: set[str] = set()
    if frozen_managers:
        for manager, name in frozen_managers:
            reason = f"bindings frozen: fabric manager {name} unreachable"
            for node in graph.nodes.values():
                if node.manager != manager:
                    continue
                if node.kind == "device":
                    devices.setdefault(node.id, reason)
                elif node.kind == "host":
                    hosts_out.setdefault(node.id, reason)
                elif node.kind == "switch":
                    frozen_switches.add(node.id)

    impact = Impact(
        domains=tuple(spec.key for spec in specs),
        failed=frozenset(failed_nodes | failed_links),
        devices=devices,
        hosts=hosts_out,
        switches=frozenset(failed_nodes & index.switches) | frozen_switches,
        links=frozenset(failed_links),
        enclosures=frozenset(n for n in failed_nodes if nodes[n].kind == "enclosure").union(
            lost.lost_by
        ),
        unreachable=lost.unreachable,
        frozen=frozenset(frozen | frozen_switches),
    )
    chosen = registered_contributors() if contributors is None else contributors
    if not chosen:
        return impact
    extra: dict[str, Any] = {}
    for contributor in chosen:
        extra.update(contributor(impact))
    return replace(impact, extra=extra)
