"""Failure domains: what fails together.

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
domain is evaluated as frozen: its hosts and devices are degraded ("bindings frozen"),
nothing is counted as failed, and no reachability is lost.

What a domain's failure takes (what is lost, what is degraded, for whom) is its blast
radius: fabric.topology.radius. `domain_of(graph, element)` is what one failed element takes
with it: the health poll propagates a reported fault along it (fabric.health.propagation)
and an alert's blast radius is measured on it (fabric.health.blast), so both walk the
topology the same way. See docs/topology.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fabric.topology.graph import FabricGraph, Node
from fabric.topology.names import link_names

__all__ = [
    "DOMAIN_KINDS",
    "FROZEN_KINDS",
    "DomainSpec",
    "derive_domains",
    "domain_members",
    "domain_of",
    "with_parts",
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


@dataclass(frozen=True, slots=True)
class DomainSpec:
    """One failure domain: its key ("switch:12"), kind, name, and the elements it takes."""

    key: str
    kind: str
    name: str
    elements: frozenset[str]


def with_parts(graph: FabricGraph, ids: Iterable[str]) -> frozenset[str]:
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
        return DomainSpec(key, kind, name, with_parts(graph, ids))

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
    nodes = graph.nodes
    names = link_names(
        {
            edge.id: ((nodes[edge.a].name, edge.a_port), (nodes[edge.b].name, edge.b_port))
            for edge in graph.edges.values()
        }
    )
    specs += [
        DomainSpec(edge.id, "link", names[edge.id], frozenset({edge.id}))
        for edge in graph.edges.values()
    ]
    for manager in sorted(m for m in managers_seen if m):
        name = graph.managers.get(manager, manager)
        switch_ids = frozenset(manager_switches.get(manager, ()))
        specs.append(DomainSpec(f"fabric_{manager}", "fabric_manager", name, switch_ids))
    return specs


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


# Alert sources and reported faults by element kind -> the domain keys they may be.
_DOMAIN_PREFIXES = {
    "rack": ("rack",),
    "power_feed": ("power_feed",),
    "switch": ("switch",),
    "enclosure": ("enclosure", "memory_box"),
    "link": ("link",),
    "fabric_manager": ("fabric_manager",),
}


def domain_of(graph: FabricGraph, element: str) -> DomainSpec | None:
    """What `element` ("<kind>:<pk>": a rack, power feed, switch, enclosure, link, fabric
    manager, host or device) takes with it when it fails; None when it is not in the graph
    (or, a power feed or manager, supplies or runs nothing in it).

    A failure domain's own spec for the kinds that are domains (`derive_domains`, derived
    once per graph); a host takes itself and its links; a device only itself.
    """
    kind, _, pk = element.partition(":")
    if kind == "device":
        node = graph.nodes.get(element)
        return (
            None if node is None else DomainSpec(element, "device", node.name, frozenset({element}))
        )
    if kind == "host":
        node = graph.nodes.get(element)
        if node is None:
            return None
        return DomainSpec(
            element, "host", node.name, frozenset({element, *graph.adjacency[element]})
        )
    specs = graph.memo("domains.by_key", lambda: {s.key: s for s in derive_domains(graph)})
    for prefix in _DOMAIN_PREFIXES.get(kind, ()):
        spec = specs.get(f"{prefix}:{pk}")
        if spec is not None:
            return spec
    return None
