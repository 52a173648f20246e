"""Blast radius and paths shaped as JSON for the API and the pages (pure: names come from
the graph, so a report costs no query beyond the graph's own load).

Every element is reported with its console id, its name and its graph id (`node`), the id
the topology page uses for its Cytoscape elements, so a client can both link and highlight.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fabric.topology.graph import FabricGraph, Path, SinglePoints
from fabric.topology.radius import DEFINITION, Impact
from fabric.topology.render import path_json


def node_ref(graph: FabricGraph, node_id: str) -> dict[str, Any]:
    """`{"id", "name", "kind", "node"}` of a graph node."""
    node = graph.nodes[node_id]
    return {"id": node.pk, "name": node.name, "kind": node.kind, "node": node_id}


def link_ref(graph: FabricGraph, edge_id: str) -> dict[str, Any]:
    """`{"id", "node", "between", "state"}` of a graph edge (a link between two owners)."""
    edge = graph.edges[edge_id]
    ends = [graph.nodes[end].name if end in graph.nodes else end for end in (edge.a, edge.b)]
    return {"id": edge.pk, "node": edge_id, "between": ends, "state": edge.state}


def _sorted_nodes(graph: FabricGraph, ids: Iterable[str]) -> list[str]:
    present = [i for i in ids if i in graph.nodes]
    return sorted(present, key=lambda i: (graph.nodes[i].name, i))


def _enclosure_reason(graph: FabricGraph, impact: Impact, enclosure_id: str) -> str:
    """Why an enclosure is in a blast radius: it fails, or what its devices are said to lose."""
    if enclosure_id in impact.failed:
        return "fails"
    for device in graph.devices_in(enclosure_id):
        reason = impact.devices.get(device) or impact.devices_degraded.get(device)
        if reason:
            return reason
    return "loses a path"  # an enclosure without devices


def impact_report(
    graph: FabricGraph, impact: Impact, *, domains: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """What fails, what is lost and what is degraded when `domains` fail together.

    `domains` are the console's rows (id, key, kind, name) the impact was computed for.
    `devices` / `hosts` are the lost ones, `devices_degraded` / `hosts_degraded` the
    degraded ones (fabric.topology.radius: the one definition), each with its reason;
    `headline` says it in one sentence and `definition` says what the words mean.
    Contributors' additions (`impact.extra`, e.g. compositions and tenants) are merged in;
    `compositions`, `compositions_degraded`, `tenants` and `tenants_degraded` are always
    present, empty until a contributor fills them.
    """

    def rows(reasons: Mapping[str, str]) -> list[dict[str, Any]]:
        return [{**node_ref(graph, i), "reason": reasons[i]} for i in _sorted_nodes(graph, reasons)]

    switches = [node_ref(graph, i) for i in _sorted_nodes(graph, impact.switches)]
    enclosures = [
        {
            **node_ref(graph, i),
            "failed": i in impact.failed,
            "reason": _enclosure_reason(graph, impact, i),
        }
        for i in _sorted_nodes(graph, impact.enclosures)
    ]
    links = [link_ref(graph, i) for i in sorted(impact.links) if i in graph.edges]
    lost = set(impact.failed) | set(impact.devices) | set(impact.hosts)
    lost.update(  # an enclosure whose every device is lost (cut off) is drawn as lost too
        e
        for e in impact.enclosures
        if graph.devices_in(e) and all(d in impact.devices for d in graph.devices_in(e))
    )
    highlighted = (
        lost
        | set(impact.devices_degraded)
        | set(impact.hosts_degraded)
        | set(impact.switches)
        | set(impact.enclosures)
        | set(impact.links)
    )
    report: dict[str, Any] = {
        "domains": [dict(d) for d in domains],
        "headline": impact.counts().headline(),
        "definition": DEFINITION,
        "devices": rows(impact.devices),
        "hosts": rows(impact.hosts),
        "devices_degraded": rows(impact.devices_degraded),
        "hosts_degraded": rows(impact.hosts_degraded),
        "switches": switches,
        "enclosures": enclosures,
        "links": links,
        "compositions": [],
        "compositions_degraded": [],
        "tenants": [],
        "tenants_degraded": [],
        "failed": sorted(impact.failed),
        "lost_ids": sorted(lost),  # what the page draws as lost; node_ids: everything hit
        "node_ids": sorted(highlighted),
    }
    report.update({key: value for key, value in impact.extra.items()})
    counted = (
        "devices",
        "hosts",
        "devices_degraded",
        "hosts_degraded",
        "switches",
        "enclosures",
        "links",
        "compositions",
        "compositions_degraded",
        "tenants",
        "tenants_degraded",
    )
    report["counts"] = {key: len(report[key]) for key in counted}
    report["counts"]["enclosures_failed"] = sum(1 for row in enclosures if row["failed"])
    return report


def paths_report(
    graph: FabricGraph,
    host_id: str,
    device_id: str,
    paths: Sequence[Path],
    single_points: SinglePoints,
) -> dict[str, Any]:
    """Every usable path from a host to a device, best first, and what one failure cuts."""
    return {
        "host": node_ref(graph, host_id),
        "device": node_ref(graph, device_id),
        "reachable": bool(paths),
        "paths": [path_json(p) for p in paths],
        "single_points_of_failure": {
            "links": [link_ref(graph, i) for i in sorted(single_points.links) if i in graph.edges],
            "switches": [node_ref(graph, i) for i in _sorted_nodes(graph, single_points.switches)],
        },
    }


def reachable_report(
    graph: FabricGraph, host_id: str, reach: Mapping[str, Path], *, max_latency_ns: int | None
) -> dict[str, Any]:
    """The devices a host reaches (within the ceiling), nearest first."""
    rows = sorted(reach.items(), key=lambda item: (item[1].latency_ns, graph.nodes[item[0]].name))
    return {
        "host": node_ref(graph, host_id),
        "max_latency_ns": max_latency_ns,
        "count": len(rows),
        "devices": [
            {
                **node_ref(graph, device_id),
                "hops": path.hops,
                "latency_ns": path.latency_ns,
                "bottleneck_gbps": path.bottleneck_gbps,
            }
            for device_id, path in rows
        ],
    }
