"""The topology as JSON: the one document the topology page draws and the API serves.

Cytoscape.js elements form (`cy.add(doc.nodes)`, `cy.add(doc.edges)`): racks contain hosts,
switches and enclosures, enclosures contain devices (compound nodes, through
`data.parent`). Above AUTO_COLLAPSE_NODES graph nodes the devices are left out and each
enclosure carries counts of its devices instead (`collapsed: true`), so the page stays
drawable at 10,000 devices.

Each node the page positions itself carries a `position` (fabric.topology.layout: computed
from the structure, the same on every load); compound parents (racks, enclosures drawn with
their devices) take theirs from their children.

Pure: console URLs are plain strings (`/fabric/devices/<pk>/`), not `reverse()`, so this
module needs no Django; tests/fabric/topology/test_render.py checks that they match the
URL configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fabric.topology.graph import FabricGraph, Node, Path, paused_gc
from fabric.topology.layout import layout_positions
from fabric.topology.radius import Impact

__all__ = [
    "AUTO_COLLAPSE_NODES",
    "LEGEND",
    "impact_json",
    "node_url",
    "path_json",
    "topology_json",
]

AUTO_COLLAPSE_NODES = 2_000

LEGEND: dict[str, Any] = {
    "kinds": {
        "rack": "Rack",
        "switch": "Switch",
        "host": "Host",
        "enclosure": "Enclosure",
        "device": "Device",
    },
    "health": {
        "ok": {"label": "OK", "colour": "#198754"},
        "warning": {"label": "Warning", "colour": "#ffc107"},
        "critical": {"label": "Critical", "colour": "#dc3545"},
        "unknown": {"label": "Unknown", "colour": "#6c757d"},
    },
    "link_states": {
        "up": {"label": "Up", "style": "solid"},
        "degraded": {"label": "Degraded", "style": "dashed"},
        "down": {"label": "Down", "style": "dotted"},
    },
}

_URLS = {
    "device": "/fabric/devices/{pk}/",
    "host": "/fabric/hosts/{pk}/",
    "enclosure": "/fabric/enclosures/{pk}/",
    "switch": "/fabric/switches/{pk}/",
    "rack": "/fabric/racks/{pk}/",
}


def node_url(node: Node) -> str:
    """The console page of a node (a rack: its elevation)."""
    return _URLS[node.kind].format(pk=node.pk)


def topology_json(graph: FabricGraph, *, collapse: bool | None = None) -> dict[str, Any]:
    """The graph as Cytoscape.js elements, with counts and a legend.

    `collapse=None` collapses devices into their enclosures when the graph has more than
    AUTO_COLLAPSE_NODES nodes.
    """
    if collapse is None:
        collapse = len(graph.nodes) > AUTO_COLLAPSE_NODES
    with paused_gc():
        return _elements(graph, collapse)


def _elements(graph: FabricGraph, collapse: bool) -> dict[str, Any]:
    tallies: dict[str, list[int]] = {}  # enclosure -> [devices, free, failed, bound]
    memory: dict[str, list[int]] = {}  # enclosure -> [GiB, allocated GiB] of its CXL memory
    for node in graph.nodes.values():
        if node.kind == "device" and node.parent is not None:
            tally = tallies.setdefault(node.parent, [0, 0, 0, 0])
            tally[0] += 1
            if node.state == "free":
                tally[1] += 1
            elif node.state == "failed":
                tally[2] += 1
            elif node.state == "bound":
                tally[3] += 1
            if "allocated_gib" in node.attrs:  # partitionable (fabric.topology.load)
                gib = memory.setdefault(node.parent, [0, 0])
                gib[0] += node.attrs.get("memory_gib") or 0
                gib[1] += node.attrs["allocated_gib"]

    present = graph.nodes
    drawn = [n.id for n in graph.nodes.values() if not (collapse and n.kind == "device")]
    positions = layout_positions(graph, drawn=drawn)
    nodes: list[dict[str, Any]] = []
    for node in graph.nodes.values():
        if collapse and node.kind == "device":
            continue
        data = dict(node.attrs)
        data.update(
            id=node.id,
            kind=node.kind,
            label=node.name,
            parent=node.parent if node.parent in present else None,
            health=node.health,
            state=node.state,
            url=_URLS[node.kind].format(pk=node.pk),
        )
        if node.kind == "enclosure":
            count, free, failed, bound = tallies.get(node.id, (0, 0, 0, 0))
            data.update(
                device_count=count, devices_free=free, devices_failed=failed, devices_bound=bound
            )
            if node.id in memory:
                data.update(memory_gib=memory[node.id][0], allocated_gib=memory[node.id][1])
        element: dict[str, Any] = {"data": data}
        position = positions.get(node.id)
        if position is not None:
            element["position"] = {"x": position[0], "y": position[1]}
        nodes.append(element)
    edges = [
        {
            "data": {
                "id": edge.id,
                "source": edge.a,
                "target": edge.b,
                "latency_ns": edge.latency_ns,
                "latency_estimated": edge.latency_estimated,
                "bandwidth_gbps": edge.bandwidth_gbps,
                "state": edge.state,
                "health": edge.health,
            }
        }
        for edge in graph.edges.values()
    ]
    counts = graph.counts()
    counts.update(nodes=len(nodes), edges=len(edges))
    return {
        "nodes": nodes,
        "edges": edges,
        "collapsed": collapse,
        "counts": counts,
        "legend": LEGEND,
    }


def path_json(path: Path) -> dict[str, Any]:
    """One path as JSON (ids are those of topology_json's nodes and edges)."""
    return {
        "nodes": list(path.nodes),
        "links": list(path.links),
        "hops": path.hops,
        "latency_ns": path.latency_ns,
        "bottleneck_gbps": path.bottleneck_gbps,
    }


def _sorted(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=lambda i: (i.split(":", 1)[0], int(i.rsplit(":", 1)[1])))


def impact_json(impact: Impact) -> dict[str, Any]:
    """A blast radius as JSON: ids are those of topology_json's nodes and edges.

    `devices` / `hosts` are the lost ones, `devices_degraded` / `hosts_degraded` the
    degraded ones (fabric.topology.radius). `unreachable` and `degraded` are left out (they
    can be hosts x enclosures); `counts` and `headline` sum them up.
    """
    counts = impact.counts()
    return {
        "domains": list(impact.domains),
        "headline": counts.headline(),
        "failed": _sorted(impact.failed),
        "devices": dict(impact.devices),
        "hosts": dict(impact.hosts),
        "devices_degraded": dict(impact.devices_degraded),
        "hosts_degraded": dict(impact.hosts_degraded),
        "switches": _sorted(impact.switches),
        "links": _sorted(impact.links),
        "enclosures": _sorted(impact.enclosures),
        "frozen": _sorted(impact.frozen),
        "extra": dict(impact.extra),
        "counts": {
            "devices": counts.devices_lost,
            "hosts": counts.hosts_lost,
            "devices_degraded": counts.devices_degraded,
            "hosts_degraded": counts.hosts_degraded,
            "switches": len(impact.switches),
            "links": len(impact.links),
            "enclosures": len(impact.enclosures),
        },
    }
