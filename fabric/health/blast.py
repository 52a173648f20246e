"""The blast radius stored on an alert when it opens: compact JSON from fabric.topology.

One `BlastRadius` per poll loads the manager's graph once (eight queries), on first use, so a
poll that opens nothing loads nothing. The shape stored in `Alert.blast_radius`:

    {
      "domain": "switch:12",          # the failure domain (or element) that fails
      "effect": "lost",               # lost (critical), at_risk (warning: what a failure
                                      # would take), frozen (manager unreachable)
      "devices": [41, 42], "device_count": 2,
      "hosts": [7], "host_count": 1,
      "switches": [12], "enclosures": [5], "links": [30, 31],
      "compositions": [{"id": 3, "name": "train-a", "tenant_id": 1, "state": "ready"}],
      "composition_count": 1,
      "tenants": [1], "tenant_count": 1
    }

Ids are console primary keys. `compositions` and `tenants` come from the impact contributors
the composer registers (fabric.topology.impact); they are empty until one is registered.
A contributor may return rows (mappings with id, name, tenant or tenant_id, state) or bare
ids; both are normalised to the shape above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from fabric.models import FabricManager
from fabric.topology.domains import DomainSpec, Impact, blast_radius, derive_domains
from fabric.topology.graph import LINK_DOWN, FabricGraph
from fabric.topology.load import load_graph

__all__ = ["BlastRadius", "radius_json"]

_DOMAIN_KEYS = {
    "switch": ("switch",),
    "enclosure": ("enclosure", "memory_box"),
    "power_feed": ("power_feed",),
    "link": ("link",),
    "fabric_manager": ("fabric_manager",),
}


class BlastRadius:
    """Blast radii of alert sources of one manager, over one graph loaded on first use."""

    def __init__(self, manager: FabricManager) -> None:
        self.manager = manager
        self._graph: FabricGraph | None = None
        self._specs: dict[str, DomainSpec] | None = None

    @property
    def graph(self) -> FabricGraph:
        if self._graph is None:
            self._graph = load_graph(managers=[self.manager.pk])
        return self._graph

    def spec(self, source_type: str, source_id: int) -> DomainSpec | None:
        """The failure domain that fails with the source; None when it takes nothing."""
        graph = self.graph
        node = f"{source_type}:{source_id}"
        if source_type == "device":
            if node not in graph.nodes:
                return None
            return DomainSpec(node, "device", graph.nodes[node].name, frozenset({node}))
        if source_type == "host":
            if node not in graph.nodes:
                return None
            parts = frozenset({node, *graph.adjacency.get(node, ())})
            return DomainSpec(node, "host", graph.nodes[node].name, parts)
        if self._specs is None:
            self._specs = {spec.key: spec for spec in derive_domains(graph)}
        for prefix in _DOMAIN_KEYS.get(source_type, ()):
            spec = self._specs.get(f"{prefix}:{source_id}")
            if spec is not None:
                return spec
        return None

    def impact(self, source_type: str, source_id: int) -> tuple[FabricGraph, Impact] | None:
        """What fails and what loses something when the source fails (contributors
        included), over the graph with the source's own links up; None when it takes
        nothing (or is not in the fabric)."""
        spec = self.spec(source_type, source_id)
        if spec is None:
            return None
        graph = _healed(self.graph, spec)
        return graph, blast_radius(graph, [spec])

    def of(self, source_type: str, source_id: int, *, severity: str) -> dict[str, Any]:
        """The blast radius JSON of the source failing (see the module docstring)."""
        if source_type == "fabric_manager":
            effect = "frozen"
        else:
            effect = "lost" if severity == "critical" else "at_risk"
        found = self.impact(source_type, source_id)
        if found is None:
            return radius_json(None, None, key=f"{source_type}:{source_id}", effect=effect)
        graph, impact = found
        return radius_json(graph, impact, key=impact.domains[0], effect=effect)


def _healed(graph: FabricGraph, spec: DomainSpec) -> FabricGraph:
    """`graph` with the domain's own links up again.

    When the alert opens, the failure is already in the tables (this poll, or an inventory
    sync before it, marked its links down), and reachability never uses a down link: the
    blast radius measured on that graph would be empty. It is measured instead against the
    fabric as it was with this failure's own links working; links down for other reasons
    stay down (what they cut off was lost before, not by this failure).
    """
    down = {e for e in spec.elements if e in graph.edges and graph.edges[e].state == LINK_DOWN}
    if not down:
        return graph
    edges = [replace(e, state="up") if e.id in down else e for e in graph.edges.values()]
    return FabricGraph(
        graph.nodes.values(), edges, power_feeds=graph.power_feeds, managers=graph.managers
    )


def _pks(graph: FabricGraph, ids: Iterable[str]) -> list[int]:
    pks = []
    for element in ids:
        node = graph.nodes.get(element)
        if node is not None:
            pks.append(node.pk)
        elif element in graph.edges:
            pks.append(graph.edges[element].pk)
    return sorted(pks)


def _compositions(items: Any) -> list[dict[str, Any]]:
    rows = []
    for item in items or ():
        if isinstance(item, Mapping):
            tenant = item.get("tenant_id", item.get("tenant"))
            if isinstance(tenant, Mapping):
                tenant = tenant.get("id")
            rows.append(
                {
                    "id": item.get("id"),
                    "name": str(item.get("name", "")),
                    "tenant_id": tenant,
                    "state": str(item.get("state", "")),
                }
            )
        else:
            rows.append({"id": item, "name": str(item), "tenant_id": None, "state": ""})
    return rows


def _tenants(items: Any, compositions: list[dict[str, Any]]) -> list[Any]:
    ids: list[Any] = []
    for item in items or ():
        value = item.get("id") if isinstance(item, Mapping) else item
        if value is not None and value not in ids:
            ids.append(value)
    for row in compositions:
        if row["tenant_id"] is not None and row["tenant_id"] not in ids:
            ids.append(row["tenant_id"])
    return ids


def radius_json(
    graph: FabricGraph | None, impact: Impact | None, *, key: str, effect: str
) -> dict[str, Any]:
    """`impact` (of `graph`) as the compact JSON stored on an alert; empty lists when None."""
    if graph is None or impact is None:
        devices: list[int] = []
        hosts: list[int] = []
        switches: list[int] = []
        enclosures: list[int] = []
        links: list[int] = []
        extra: Mapping[str, Any] = {}
    else:
        devices = _pks(graph, impact.devices)
        hosts = _pks(graph, impact.hosts)
        switches = _pks(graph, impact.switches)
        enclosures = _pks(graph, impact.enclosures)
        links = _pks(graph, impact.links)
        extra = impact.extra
    compositions = _compositions(extra.get("compositions"))
    tenants = _tenants(extra.get("tenants"), compositions)
    return {
        "domain": key,
        "effect": effect,
        "devices": devices,
        "device_count": len(devices),
        "hosts": hosts,
        "host_count": len(hosts),
        "switches": switches,
        "enclosures": enclosures,
        "links": links,
        "compositions": compositions,
        "composition_count": len(compositions),
        "tenants": tenants,
        "tenant_count": len(tenants),
    }
