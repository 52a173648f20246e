"""build_snapshot(): the free inventory, read from the console tables into a Snapshot.

The only database access of `composer.placement`: `fabric.topology.load_graph()`
(five queries, lean: no racks, no names) plus one query for the usable devices' JSON
attributes, whatever the size.
Reachability (best latency and bottleneck from every host to every enclosure) is computed
here with `fabric.topology.graph.enclosure_distances`, so `place()` never searches the
graph. It depends on the links alone, which rarely change, and costs a Dijkstra per host
(about a second at 10,000 devices): it is memoised per process, keyed on the very link
rows and active host and enclosure ids it was computed from, read fresh for every snapshot
(`_structure`). Devices, their state and attributes, and host resources are never memoised.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from composer.placement.request import DevicePick
from composer.placement.shares import charged_gbps
from composer.placement.snapshot import (
    DEFAULT_OVERSUBSCRIPTION,
    DeviceInfo,
    EnclosureInfo,
    HostInfo,
    Reach,
    Snapshot,
)
from fabric.capacity import is_allocatable
from fabric.kinds import is_sliced, shares_per_device
from fabric.topology.graph import FabricGraph, Node, enclosure_distances, paused_gc
from fabric.topology.load import load_graph
from fabric.topology.maintenance import placeable

__all__ = ["build_snapshot", "snapshot_from_graph", "structure_memo_clear"]

ACTIVE = "active"  # fabric.choices.ComponentState.ACTIVE


def build_snapshot(
    *,
    pools: Iterable[int] | None = None,
    managers: Iterable[int] | None = None,
    oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
    memory_gib: Mapping[str, int] | None = None,
    cores: Mapping[str, int] | None = None,
    host_memory_gib: Mapping[str, int] | None = None,
    claimed: Mapping[str, Iterable[str]] | None = None,
) -> Snapshot:
    """The usable inventory (of `managers`, or all; devices of `pools`, or all) as a
    Snapshot. Five queries whatever the size.

    Usable (`fabric.capacity.is_allocatable`): whole devices FREE with health not
    CRITICAL, CXL memory devices with GiB free (`memory_gib - allocated_gib`, the slices
    held, as every capacity figure counts them), shared GPUs with shares free (partly
    shared on their `shared_host`, `DeviceInfo.shares_free`); hosts and enclosures ACTIVE; no path
    through a switch in maintenance (`fabric.topology.maintenance.placeable`).

    Hook for allocations: what compositions hold and the tables do not show as taken
    (host cores and memory) is subtracted with `cores` and `host_memory_gib`, and more
    GiB of memory devices with `memory_gib`, as `Snapshot.taking(...)` would, without
    building the snapshot twice; and with `claimed` (host id -> device ids its compositions
    claim, bound or not yet: held, placing, binding), what each host's uplink already
    carries beyond the devices bound to it.
    """
    graph = placeable(load_graph(managers=managers, lean=True, device_attributes=True))
    pool_ids = None if pools is None else set(pools)
    # The devices' own query read their attributes: those of the usable ones are kept.
    attributes = {
        node.id: node.attrs["attributes"]
        for node in graph.of_kind("device")
        if is_allocatable(
            partitionable=is_sliced(node.attrs["device_kind"]),
            state=node.state,
            health=node.health,
            free_gib=node.attrs.get("free_gib", 0),
            free_shares=_shares_free(node),
        )
        and (pool_ids is None or node.attrs["pool"] in pool_ids)
    }
    # Tens of thousands of acyclic objects (10,000 devices): no collector pass meanwhile.
    with paused_gc():
        return snapshot_from_graph(
            graph,
            attributes,
            oversubscription=oversubscription,
            memory_gib=memory_gib,
            cores=cores,
            host_memory_gib=host_memory_gib,
            claimed=claimed,
        )


def snapshot_from_graph(
    graph: FabricGraph,
    usable: dict[str, dict[str, Any]],
    *,
    oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
    memory_gib: Mapping[str, int] | None = None,
    cores: Mapping[str, int] | None = None,
    host_memory_gib: Mapping[str, int] | None = None,
    claimed: Mapping[str, Iterable[str]] | None = None,
) -> Snapshot:
    """A Snapshot of `graph` where `usable` maps the usable devices' ids to their JSON
    attributes, less what `memory_gib`, `cores` and `host_memory_gib` take (as
    `Snapshot.taking`), each host's uplink charged for what is bound to it and what
    `claimed` says its compositions claim (`_uplink_used`). Pure but for the process-wide
    memo of what depends on links alone (`_structure`); `build_snapshot` feeds it from the
    database."""
    memory_gib, cores, host_memory_gib = memory_gib or {}, cores or {}, host_memory_gib or {}
    enclosure_nodes = [n for n in graph.of_kind("enclosure") if n.state == ACTIVE]
    hosts = [n for n in graph.of_kind("host") if n.state == ACTIVE]
    structure = _structure(graph, hosts, enclosure_nodes)
    switches_of, uplink, reach = structure.switches_of, structure.uplink, structure.reach
    enclosures = [
        EnclosureInfo(
            n.id,
            n.name,
            switches_of.get(n.id, ()),
            n.rack,
            n.power_feed,
            len(graph.devices_in(n.id)),
        )
        for n in enclosure_nodes
    ]
    active = {e.id: e for e in enclosures}
    used = _uplink_used(graph, reach, claimed or {})
    devices: list[DeviceInfo] = []
    for node in graph.of_kind("device"):
        attrs = node.attrs
        if node.id not in usable or node.parent not in active:
            continue
        extra = usable[node.id] or {}
        numbers = {k: float(v) for k, v in extra.items() if isinstance(v, int | float)}
        numbers["memory_gib"] = attrs.get("memory_gib", 0)
        numbers["capacity_gb"] = attrs.get("capacity_gb", 0)
        enclosure = active[node.parent]
        kind = attrs.get("device_kind", "")
        devices.append(
            DeviceInfo(
                node.id,
                node.name,
                kind,
                attrs.get("model", ""),
                enclosure.id,
                numbers,
                free_gib=_less(attrs.get("free_gib", 0), memory_gib.get(node.id)),
                capacity_gb=attrs.get("capacity_gb", 0),
                shares_free=_shares_free(node),
                shared_host=attrs.get("shared_host"),
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
            cores_free=_less(h.attrs.get("cores", 0), cores.get(h.id)),
            memory_gib_free=_less(h.attrs.get("memory_gib", 0), host_memory_gib.get(h.id)),
            cores_total=h.attrs.get("cores", 0),
            uplink_gbps=uplink.get(h.id, 0.0),
            uplink_used_gbps=used.get(h.id, 0.0),
            switches=switches_of.get(h.id, ()),
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


def _uplink_used(
    graph: FabricGraph,
    reach: Mapping[str, Mapping[str, Reach]],
    claimed: Mapping[str, Iterable[str]],
) -> dict[str, float]:
    """Each host's uplink use: every device bound to it or claimed by a composition on it
    (a hold, or a compose not bound yet: its devices are only RESERVED, but the host's
    uplink must still carry them once bound) charged its path's bottleneck, once per host
    and device (a memory device sliced, whatever its slices). A shared GPU is charged on
    its shared host for the shares held, as the engine charges a share
    (`shares.charged_gbps`: that fraction of the bottleneck), not as a whole device."""
    pairs = {
        (node.attrs["bound_host"], node.id)
        for node in graph.of_kind("device")
        if node.attrs.get("bound_host")
    }
    pairs.update((host, device) for host, ids in claimed.items() for device in ids)
    pairs.update(
        (node.attrs["shared_host"], node.id)
        for node in graph.of_kind("device")
        if node.attrs.get("shared_host")
    )
    used: dict[str, float] = {}
    for host, device in pairs:
        node = graph.nodes.get(device)
        parent = node.parent if node is not None else None
        path = reach.get(host, {}).get(parent) if parent is not None else None
        if path is None or node is None:
            continue
        held = node.attrs.get("allocated_shares", 0)
        if held:
            kind = node.attrs.get("device_kind", "")
            pick = DevicePick(node.id, node.name, kind, "", 0, path.bottleneck_gbps, share=held)
            used[host] = used.get(host, 0.0) + charged_gbps(pick)
        else:
            used[host] = used.get(host, 0.0) + path.bottleneck_gbps
    return used


def _shares_free(node: Node) -> int:
    """The shares a partly shared GPU has free (0 for any other device: a whole free one
    reads as all of its shares, `shareable.free_shares`)."""
    held: int = node.attrs.get("allocated_shares", 0)
    if not held:
        return 0
    return max(0, shares_per_device(node.attrs.get("device_kind", "")) - held)


def _less(free: int, taken: int | None) -> int:
    """What is left of `free` once `taken` is (never below zero), as `Snapshot.taking`."""
    return free if taken is None else max(0, free - taken)


# --- what depends on the links alone, memoised per process --------------------------------


@dataclass(frozen=True, slots=True)
class _Structure:
    """What a snapshot derives from the links and the active hosts and enclosures alone:
    each host's and enclosure's switches (sorted), each host's uplink bandwidth, and the
    best reach from every active host to every active enclosure. Shared: never mutate."""

    switches_of: Mapping[str, tuple[str, ...]]
    uplink: Mapping[str, float]
    reach: Mapping[str, Mapping[str, Reach]]


# A few entries: one per graph scope in use (all managers, or a subset); least recently
# used first out. A hit costs building and comparing the key, O(links); a miss, one
# Dijkstra per host (about a second at 10,000 devices).
STRUCTURE_MEMO_SIZE = 4
_structures: OrderedDict[Hashable, _Structure] = OrderedDict()
_structures_lock = threading.Lock()


def _structure(graph: FabricGraph, hosts: list[Node], enclosures: list[Node]) -> _Structure:
    """The `_Structure` of `graph`, reused from an earlier snapshot when everything it is
    computed from is the same, compared by value, never by age: every link (ends and
    their kinds, state, latency and whether it is estimated, bandwidth, in the order the
    search visits them), and the
    ids of the active hosts and enclosures. Any change there is a new key, so a memoised
    value can never be stale; device and host state, health and attributes are not in it
    and are read fresh by every snapshot."""
    nodes = graph.nodes
    key = (
        tuple(
            (e.id, e.a, nodes[e.a].kind, e.b, nodes[e.b].kind, e.state, e.latency_ns,
             e.bandwidth_gbps, e.latency_estimated)
            for e in graph.edges.values()
        ),
        tuple(h.id for h in hosts),
        tuple(n.id for n in enclosures),
    )  # fmt: skip
    with _structures_lock:
        known = _structures.get(key)
        if known is not None:
            _structures.move_to_end(key)
            return known
    # Computed outside the lock: two threads missing at once both compute the same value.
    value = _derive(graph, hosts, {n.id for n in enclosures})
    with _structures_lock:
        _structures[key] = value
        while len(_structures) > STRUCTURE_MEMO_SIZE:
            _structures.popitem(last=False)
    return value


def _derive(graph: FabricGraph, hosts: list[Node], active: set[str]) -> _Structure:
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
    # Equal figures share one Reach: thousands of host-enclosure pairs have the same few.
    interned: dict[tuple[int, float, int, int], Reach] = {}
    reach: dict[str, dict[str, Reach]] = {}
    for host in hosts:
        mine = reach[host.id] = {}
        for enclosure, figures in enclosure_distances(graph, host.id).items():
            if enclosure in active:
                value = interned.get(figures)
                if value is None:
                    value = interned[figures] = Reach(*figures)
                mine[enclosure] = value
    return _Structure(
        switches_of={k: tuple(sorted(set(v))) for k, v in switches_of.items()},
        uplink=uplink,
        reach=reach,
    )


def structure_memo_clear() -> None:
    """Forget every memoised structure (tests; never needed for correctness)."""
    with _structures_lock:
        _structures.clear()
