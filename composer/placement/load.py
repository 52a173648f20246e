"""build_snapshot(): the free inventory, read from the console tables into a Snapshot.

The only database access of `composer.placement` (STYLE §5): `fabric.topology.load_graph()`
(eight queries) plus one query for the usable devices' JSON attributes, whatever the size.
Reachability (best latency and bottleneck from every host to every enclosure) is computed
here, once per snapshot, with `fabric.topology.graph.reachable_enclosures`, so `place()`
never searches the graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from composer.placement.snapshot import (
    DEFAULT_OVERSUBSCRIPTION,
    DeviceInfo,
    EnclosureInfo,
    HostInfo,
    Reach,
    Snapshot,
)
from fabric.choices import DeviceState, Health
from fabric.models import Device
from fabric.topology.graph import FabricGraph, reachable_enclosures
from fabric.topology.load import load_graph
from fabric.topology.maintenance import placeable

__all__ = ["build_snapshot", "snapshot_from_graph"]

ACTIVE = "active"  # fabric.choices.ComponentState.ACTIVE


def build_snapshot(
    *,
    pools: Iterable[int] | None = None,
    managers: Iterable[int] | None = None,
    oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
) -> Snapshot:
    """The usable inventory (of `managers`, or all; devices of `pools`, or all) as a
    Snapshot. Nine queries whatever the size.

    Usable: devices FREE with health not CRITICAL; hosts and enclosures ACTIVE; no path
    through a switch in maintenance (`fabric.topology.maintenance.placeable`). A CXL
    memory device's free GiB is `memory_gib - attributes["bound_gib"]`.

    Hook for allocations: once compositions exist, what they hold (devices reserved but not
    yet bound, GiB slices, host cores and memory) is subtracted here with
    `Snapshot.taking(...)`, and `holders` / `critical` are filled from their tenants.
    """
    graph = placeable(load_graph(managers=managers))
    rows = Device.objects.filter(state=DeviceState.FREE).exclude(health=Health.CRITICAL)
    if managers is not None:
        rows = rows.filter(manager_id__in=list(managers))
    if pools is not None:
        rows = rows.filter(pool_id__in=list(pools))
    attributes = {f"device:{pk}": attrs for pk, attrs in rows.values_list("pk", "attributes")}
    return snapshot_from_graph(graph, attributes, oversubscription=oversubscription)


def snapshot_from_graph(
    graph: FabricGraph,
    usable: dict[str, dict[str, Any]],
    *,
    oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
) -> Snapshot:
    """A Snapshot of `graph` where `usable` maps the usable devices' ids to their JSON
    attributes. Pure; `build_snapshot` feeds it from the database."""
    nodes = graph.nodes
    switches_of: dict[str, list[str]] = {}
    uplink: dict[str, float] = {}
    for edge in graph.edges.values():
        if edge.state == "down":
            continue
        for end, other in ((edge.a, edge.b), (edge.b, edge.a)):
            if nodes[end].kind in ("host", "enclosure") and nodes[other].kind == "switch":
                switches_of.setdefault(end, []).append(other)
                if nodes[end].kind == "host":
                    uplink[end] = uplink.get(end, 0.0) + edge.bandwidth_gbps
    enclosures = [
        EnclosureInfo(
            n.id,
            n.name,
            tuple(sorted(set(switches_of.get(n.id, ())))),
            n.rack,
            n.power_feed,
            len(graph.devices_in(n.id)),
        )
        for n in graph.of_kind("enclosure")
        if n.state == ACTIVE
    ]
    active = {e.id: e for e in enclosures}
    hosts = [n for n in graph.of_kind("host") if n.state == ACTIVE]
    reach: dict[str, dict[str, Reach]] = {}
    for host in hosts:
        reach[host.id] = {
            enclosure: Reach(path.latency_ns, path.bottleneck_gbps, path.hops)
            for enclosure, path in reachable_enclosures(graph, host.id).items()
            if enclosure in active
        }
    used: dict[str, float] = {}
    devices: list[DeviceInfo] = []
    for node in graph.of_kind("device"):
        attrs = node.attrs
        bound = attrs.get("bound_host")
        if bound and node.parent in reach.get(bound, {}):
            used[bound] = used.get(bound, 0.0) + reach[bound][node.parent].bottleneck_gbps
        if node.id not in usable or node.parent not in active:
            continue
        extra = usable[node.id] or {}
        numbers = {k: float(v) for k, v in extra.items() if isinstance(v, int | float)}
        numbers["memory_gib"] = attrs.get("memory_gib", 0)
        numbers["capacity_gb"] = attrs.get("capacity_gb", 0)
        enclosure = active[node.parent]  # type: ignore[index]
        kind = attrs.get("device_kind", "")
        devices.append(
            DeviceInfo(
                node.id,
                node.name,
                kind,
                attrs.get("model", ""),
                enclosure.id,
                numbers,
                free_gib=max(0, attrs.get("memory_gib", 0) - int(extra.get("bound_gib", 0)))
                if kind == "cxl_memory"
                else 0,
                capacity_gb=attrs.get("capacity_gb", 0),
                domains=tuple(
                    d
                    for d in (
                        enclosure.id,
                        *enclosure.switches,
                        enclosure.rack,
                        enclosure.power_feed,
                    )
                    if d
                ),
            )
        )
    host_infos = [
        HostInfo(
            h.id,
            h.name,
            cores_free=h.attrs.get("cores", 0),
            memory_gib_free=h.attrs.get("memory_gib", 0),
            cores_total=h.attrs.get("cores", 0),
            uplink_gbps=uplink.get(h.id, 0.0),
            uplink_used_gbps=used.get(h.id, 0.0),
            switches=tuple(sorted(set(switches_of.get(h.id, ())))),
            rack=h.rack,
            power_feed=h.power_feed,
        )
        for h in hosts
    ]
    return Snapshot.build(
        hosts=host_infos,
        enclosures=enclosures,
        devices=devices,
        reach=reach,
        switch_names={n.id: n.name for n in graph.of_kind("switch")},
        oversubscription=oversubscription,
    )
