"""The blast radius stored on an alert when it opens: compact JSON from fabric.topology.

One `BlastRadius` per poll loads the manager's graph once (eight queries), on first use, so a
poll that opens nothing loads nothing. The shape stored in `Alert.blast_radius`:

    {
      "domain": "switch:12",          # the failure domain (or element) that fails
      "effect": "lost",               # lost (critical), at_risk (warning: what a failure
                                      # would take), frozen (manager unreachable)
      "devices": [41, 42], "device_count": 2,      # lost
      "hosts": [7], "host_count": 1,               # lost
      "devices_degraded": [43], "devices_degraded_count": 1,
      "hosts_degraded": [8, 9], "hosts_degraded_count": 2,
      "headline": "2 devices and 1 host lost; 1 device and 2 hosts degraded",
      "switches": [12], "enclosures": [5], "links": [30, 31],
      "compositions": [{"id": 3, "name": "train-a", "tenant_id": 1, "state": "ready"}],
      "composition_count": 1,                      # hit: lose their host or a device
      "compositions_degraded": [...], "compositions_degraded_count": 0,
      "tenants": [1], "tenant_count": 1            # of the compositions hit
    }

Lost and degraded are fabric.topology.radius's one definition, the one the failure-domain
list, the topology page, the what-if and the API use too. Ids are console primary keys.
`compositions`, `compositions_degraded` and `tenants` come from the impact contributors the
composer registers (fabric.topology.impact); they are empty until one is registered. A
contributor may return rows (mappings with id, name, tenant or tenant_id, state) or bare
ids; both are normalised to the shape above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fabric.models import FabricManager
from fabric.topology.domains import DomainSpec, domain_of
from fabric.topology.graph import FabricGraph
from fabric.topology.load import load_graph
from fabric.topology.radius import Impact, ImpactCounts, domain_impact

__all__ = ["BlastRadius", "radius_json", "stored_counts"]


class BlastRadius:
    """Blast radii of alert sources of one manager, over one graph loaded on first use."""

    def __init__(self, manager: FabricManager) -> None:
        self.manager = manager
        self._graph: FabricGraph | None = None

    @property
    def graph(self) -> FabricGraph:
        if self._graph is None:
            self._graph = load_graph(managers=[self.manager.pk])
        return self._graph

    def spec(self, source_type: str, source_id: int) -> DomainSpec | None:
        """The failure domain that fails with the source; None when it takes nothing
        (`fabric.topology.domains.domain_of`, the walk the health poll propagates along)."""
        return domain_of(self.graph, f"{source_type}:{source_id}")

    def impact(self, source_type: str, source_id: int) -> tuple[FabricGraph, Impact] | None:
        """What fails and what loses something when the source fails (contributors
        included), over the graph with the source's own links up; None when it takes
        nothing (or is not in the fabric)."""
        spec = self.spec(source_type, source_id)
        if spec is None:
            return None
        return domain_impact(self.graph, [spec])

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
        devices_degraded: list[int] = []
        hosts_degraded: list[int] = []
        switches: list[int] = []
        enclosures: list[int] = []
        links: list[int] = []
        extra: Mapping[str, Any] = {}
    else:
        devices = _pks(graph, impact.devices)
        hosts = _pks(graph, impact.hosts)
        devices_degraded = _pks(graph, impact.devices_degraded)
        hosts_degraded = _pks(graph, impact.hosts_degraded)
        switches = _pks(graph, impact.switches)
        enclosures = _pks(graph, impact.enclosures)
        links = _pks(graph, impact.links)
        extra = impact.extra
    compositions = _compositions(extra.get("compositions"))
    compositions_degraded = _compositions(extra.get("compositions_degraded"))
    tenants = _tenants(extra.get("tenants"), compositions)
    counts = ImpactCounts(len(devices), len(hosts), len(devices_degraded), len(hosts_degraded))
    return {
        "domain": key,
        "effect": effect,
        "devices": devices,
        "device_count": len(devices),
        "hosts": hosts,
        "host_count": len(hosts),
        "devices_degraded": devices_degraded,
        "devices_degraded_count": len(devices_degraded),
        "hosts_degraded": hosts_degraded,
        "hosts_degraded_count": len(hosts_degraded),
        "headline": counts.headline(),
        "switches": switches,
        "enclosures": enclosures,
        "links": links,
        "compositions": compositions,
        "composition_count": len(compositions),
        "compositions_degraded": compositions_degraded,
        "compositions_degraded_count": len(compositions_degraded),
        "tenants": tenants,
        "tenant_count": len(tenants),
    }


def stored_counts(radius: Mapping[str, Any]) -> ImpactCounts:
    """The headline figures of a blast radius stored on an alert (`radius_json`'s shape):
    each its stored count, else the length of its list (alerts stored before the counts
    were), else 0."""

    def count(items: str, stored: str) -> int:
        value = radius.get(stored)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        found = radius.get(items)
        return len(found) if isinstance(found, list) else 0

    return ImpactCounts(
        devices_lost=count("devices", "device_count"),
        hosts_lost=count("hosts", "host_count"),
        devices_degraded=count("devices_degraded", "devices_degraded_count"),
        hosts_degraded=count("hosts_degraded", "hosts_degraded_count"),
    )
