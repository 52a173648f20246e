"""The fabric as an immutable graph, and the path questions asked of it.

Pure Python: nothing here imports Django. `fabric.topology.load.load_graph()` builds a
`FabricGraph` from the database; tests build one by hand from `Node`s and `Edge`s.

Nodes are racks, hosts, switches, enclosures and devices, identified as "<kind>:<pk>".
Edges are links, joining the *owners* of their two ports (a switch, host or enclosure).
Devices hang off their enclosure (`Node.parent`) and carry no edges: a path to a device is
a path to its enclosure with the device appended.

Routing rules: only switches carry traffic through; hosts and enclosures are endpoints
(a path never enters a host or an enclosure and leaves it again). Links that are down are
never used.
"""

from __future__ import annotations

import heapq
from itertools import count

from fabric.latency import ESTIMATED_HOP_LATENCY_NS
from fabric.topology.elements import (
    LINK_DOWN,
    NODE_KINDS,
    Edge,
    FabricGraph,
    Node,
    Path,
    SinglePoints,
    paused_gc,
)

__all__ = [
    "ESTIMATED_HOP_LATENCY_NS",
    "LINK_DOWN",
    "NODE_KINDS",
    "Edge",
    "FabricGraph",
    "Node",
    "Path",
    "SinglePoints",
    "enclosure_distances",
    "paths_between",
    "paused_gc",
    "reachable_devices",
    "reachable_enclosures",
    "single_points_of_failure",
]


# --- routing --------------------------------------------------------------------------------

# node id -> [(neighbour, latency_ns, edge id)] over usable (not down) links.
Hops = dict[str, list[tuple[str, int, str]]]


def _hops(graph: FabricGraph) -> Hops:
    def build() -> Hops:
        hops: Hops = {node_id: [] for node_id in graph.nodes}
        for edge in graph.edges.values():
            if edge.state == LINK_DOWN or edge.a == edge.b:
                continue
            hops[edge.a].append((edge.b, edge.latency_ns, edge.id))
            hops[edge.b].append((edge.a, edge.latency_ns, edge.id))
        return hops

    return graph.memo("graph.hops", build)


def _switches(graph: FabricGraph) -> frozenset[str]:
    return graph.memo(
        "graph.switches",
        lambda: frozenset(n.id for n in graph.nodes.values() if n.kind == "switch"),
    )


def _endpoint(graph: FabricGraph, node_id: str) -> str:
    """A device is reached through its enclosure; anything else is its own endpoint."""
    node = graph.nodes.get(node_id)
    if node is None:
        raise ValueError(f"{node_id} is not a node of the graph")
    if node.kind == "device":
        if node.parent is None:
            return node_id  # a device outside any enclosure: unreachable
        return node.parent
    return node_id


Route = tuple[int, tuple[str, ...], tuple[str, ...]]  # latency, nodes, links


def _shortest(
    graph: FabricGraph,
    source: str,
    target: str,
    banned_nodes: frozenset[str] | set[str],
    banned_edges: frozenset[str] | set[str],
) -> Route | None:
    """Dijkstra on latency from `source` to `target`; only switches are passed through."""
    hops, switches = _hops(graph), _switches(graph)
    tie = count()
    best: dict[str, int] = {source: 0}
    previous: dict[str, tuple[str, str]] = {}
    heap: list[tuple[int, int, str]] = [(0, next(tie), source)]
    while heap:
        distance, _, node = heapq.heappop(heap)
        if node == target:
            nodes, links = [node], []
            while node != source:
                node, link = previous[node]
                nodes.append(node)
                links.append(link)
            return distance, tuple(reversed(nodes)), tuple(reversed(links))
        if distance > best.get(node, distance) or (node != source and node not in switches):
            continue
        for neighbour, latency, edge_id in hops[node]:
            if neighbour in banned_nodes or edge_id in banned_edges:
                continue
            candidate = distance + latency
            if candidate < best.get(neighbour, candidate + 1):
                best[neighbour] = candidate
                previous[neighbour] = (node, edge_id)
                heapq.heappush(heap, (candidate, next(tie), neighbour))
    return None


def _path(graph: FabricGraph, route: Route, device: str | None) -> Path:
    latency, nodes, links = route
    bandwidth = min((graph.edges[link].bandwidth_gbps for link in links), default=0.0)
    if device is not None and device != nodes[-1]:
        nodes = (*nodes, device)
    return Path(nodes, links, len(links), latency, bandwidth)


def paths_between(
    graph: FabricGraph,
    host_id: str,
    device_id: str,
    *,
    limit: int = 8,
    exclude: frozenset[str] = frozenset(),
) -> list[Path]:
    """Up to `limit` simple paths from a host to a device (or enclosure), lowest latency first.

    Yen's k-shortest simple paths over links: the best path, then each next best that
    differs from those found. Hosts and enclosures are endpoints only; down links and the
    node and link ids in `exclude` are not used. Ties are broken by hop count, then link ids,
    so the order is stable. Raises ValueError for an id that is not a node of the graph.
    """
    source, target = _endpoint(graph, host_id), _endpoint(graph, device_id)
    device = device_id if device_id != target else None
    if limit < 1 or source == target or {source, target, device_id} & exclude:
        return []
    banned_nodes = {n for n in exclude if n in graph.nodes}
    banned_edges = {e for e in exclude if e in graph.edges}
    first = _shortest(graph, source, target, banned_nodes, banned_edges)
    if first is None:
        return []
    found: list[Route] = [first]
    seen = {first[2]}
    candidates: list[tuple[int, int, tuple[str, ...], Route]] = []
    while len(found) < limit:
        _, last_nodes, last_links = found[-1]
        for i in range(len(last_nodes) - 1):
            spur, root_nodes, root_links = last_nodes[i], last_nodes[: i + 1], last_links[:i]
            cut_edges = set(banned_edges)
            for _, nodes, links in found:
                if nodes[: i + 1] == root_nodes and links[:i] == root_links and len(links) > i:
                    cut_edges.add(links[i])
            cut_nodes = banned_nodes | set(root_nodes[:-1])
            spur_route = _shortest(graph, spur, target, cut_nodes, cut_edges)
            if spur_route is None:
                continue
            root_latency = sum(graph.edges[link].latency_ns for link in root_links)
            route: Route = (
                root_latency + spur_route[0],
                root_nodes[:-1] + spur_route[1],
                root_links + spur_route[2],
            )
            if route[2] not in seen:
                seen.add(route[2])
                heapq.heappush(candidates, (route[0], len(route[2]), route[2], route))
        if not candidates:
            break
        found.append(heapq.heappop(candidates)[3])
    return [_path(graph, route, device) for route in found]


def _search(
    graph: FabricGraph, host_id: str, max_latency_ns: int | None, exclude: frozenset[str]
) -> tuple[list[str], dict[str, int], dict[str, tuple[str, str]]]:
    """One Dijkstra from a host through switches: the enclosures reached (nearest first),
    the best latency to every node reached, and each node's predecessor (node, link)."""
    if host_id not in graph.nodes:
        raise ValueError(f"{host_id} is not a node of the graph")
    best: dict[str, int] = {host_id: 0}
    previous: dict[str, tuple[str, str]] = {}
    reached: list[str] = []
    if host_id in exclude:
        return reached, best, previous
    hops, switches = _forward(graph), _switches(graph)
    ceiling = max_latency_ns if max_latency_ns is not None else float("inf")
    tie = count()
    heap: list[tuple[int, int, str]] = [(0, next(tie), host_id)]
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        distance, _, node = pop(heap)
        if distance > best[node]:
            continue
        if node != host_id and node not in switches:
            reached.append(node)  # an enclosure: an endpoint, never passed through
            continue
        for neighbour, latency, edge_id in hops[node]:
            if exclude and (neighbour in exclude or edge_id in exclude):
                continue
            candidate = distance + latency
            if candidate <= ceiling and candidate < best.get(neighbour, candidate + 1):
                best[neighbour] = candidate
                previous[neighbour] = (node, edge_id)
                push(heap, (candidate, next(tie), neighbour))
    return reached, best, previous


def _reach(
    graph: FabricGraph, host_id: str, max_latency_ns: int | None, exclude: frozenset[str]
) -> list[tuple[str, tuple[str, ...], tuple[str, ...], int, float]]:
    """One Dijkstra from a host through switches: (enclosure, nodes, links, latency,
    bottleneck) for every enclosure reached, nearest first."""
    reached, best, previous = _search(graph, host_id, max_latency_ns, exclude)

    # Routes to switches are shared prefixes: build each once.
    edges = graph.edges
    prefix: dict[str, tuple[tuple[str, ...], tuple[str, ...], float]] = {
        host_id: ((host_id,), (), float("inf"))
    }

    def route_to(node: str) -> tuple[tuple[str, ...], tuple[str, ...], float]:
        known = prefix.get(node)
        if known is None:
            before, link = previous[node]
            nodes, links, bottleneck = route_to(before)
            known = prefix[node] = (
                (*nodes, node),
                (*links, link),
                min(bottleneck, edges[link].bandwidth_gbps),
            )
        return known

    return [(e, *route_to(e)[:2], best[e], route_to(e)[2]) for e in reached]


def enclosure_distances(
    graph: FabricGraph,
    host_id: str,
    *,
    max_latency_ns: int | None = None,
    exclude: frozenset[str] = frozenset(),
) -> dict[str, tuple[int, float, int, int]]:
    """(latency_ns, bottleneck_gbps, hops, estimated hops) of the best path from a host to
    every enclosure it reaches, nearest first: the figures of `reachable_enclosures` without
    building each path's node and link tuples (placement asks this of every host, and needs
    no more). The estimated hops are the path's links whose latency the manager does not
    give (`Edge.latency_estimated`): each counts ESTIMATED_HOP_LATENCY_NS in the latency."""
    reached, best, previous = _search(graph, host_id, max_latency_ns, exclude)
    edges = graph.edges
    # node -> (bottleneck, hops, estimated hops) along its best route; routes share prefixes.
    known: dict[str, tuple[float, int, int]] = {host_id: (float("inf"), 0, 0)}

    def summary(node: str) -> tuple[float, int, int]:
        value = known.get(node)
        if value is None:
            before, link = previous[node]
            bottleneck, hop_count, estimated = summary(before)
            edge = edges[link]
            value = known[node] = (
                min(bottleneck, edge.bandwidth_gbps),
                hop_count + 1,
                estimated + edge.latency_estimated,
            )
        return value

    result: dict[str, tuple[int, float, int, int]] = {}
    for enclosure in reached:
        bottleneck, hop_count, estimated = summary(enclosure)
        result[enclosure] = (best[enclosure], bottleneck, hop_count, estimated)
    return result


def reachable_enclosures(
    graph: FabricGraph,
    host_id: str,
    *,
    max_latency_ns: int | None = None,
    exclude: frozenset[str] = frozenset(),
) -> dict[str, Path]:
    """The best path from a host to every enclosure it can reach (nodes end at the
    enclosure): what `reachable_devices` computes, one path per enclosure instead of per
    device, for callers that group devices by enclosure anyway."""
    return {
        enclosure: Path(nodes, links, len(links), latency, bottleneck)
        for enclosure, nodes, links, latency, bottleneck in _reach(
            graph, host_id, max_latency_ns, exclude
        )
    }


def reachable_devices(
    graph: FabricGraph,
    host_id: str,
    *,
    max_latency_ns: int | None = None,
    exclude: frozenset[str] = frozenset(),
) -> dict[str, Path]:
    """The best (lowest latency) path from a host to every device it can reach.

    One Dijkstra from the host through switches; every device of an enclosure shares the
    enclosure's path, with the device appended. With `max_latency_ns`, devices farther than
    that are left out. Node and link ids in `exclude` are not used (an excluded device is
    left out). Raises ValueError for an id that is not a node of the graph.
    """
    contents = _enclosure_devices(graph)
    result: dict[str, Path] = {}
    new_path = object.__new__
    set_nodes, set_links, set_hops, set_latency, set_bottleneck = _PATH_SLOTS
    with paused_gc():  # 10,000 paths: no collector passes over the heap meanwhile
        for enclosure, nodes, links, latency, bottleneck in _reach(
            graph, host_id, max_latency_ns, exclude
        ):
            hop_count = len(links)
            for device in contents.get(enclosure, ()):
                if exclude and device in exclude:
                    continue
                # Built without the frozen dataclass's __init__ (one object.__setattr__ per
                # field, twice the time): the same immutable Path, written through its slots.
                path = new_path(Path)
                set_nodes(path, (*nodes, device))
                set_links(path, links)
                set_hops(path, hop_count)
                set_latency(path, latency)
                set_bottleneck(path, bottleneck)
                result[device] = path
    return result


def _forward(graph: FabricGraph) -> Hops:
    """Usable hops without hosts as destinations: a search from a host never needs to
    reach another host."""

    def build() -> Hops:
        nodes = graph.nodes
        return {
            node: [hop for hop in hops if nodes[hop[0]].kind != "host"]
            for node, hops in _hops(graph).items()
        }

    return graph.memo("graph.forward", build)


def _enclosure_devices(graph: FabricGraph) -> dict[str, tuple[str, ...]]:
    return graph.memo(
        "graph.enclosure_devices",
        lambda: {
            n.id: tuple(graph.devices_in(n.id))
            for n in graph.nodes.values()
            if n.kind == "enclosure"
        },
    )


# The slot descriptors of Path: writing through them is what the frozen __init__ does.
# Read from the class's namespace, where they are the descriptors (`Path.nodes` is the
# same object, but typed as the field's value).
_PATH_SLOTS = (
    vars(Path)["nodes"].__set__,
    vars(Path)["links"].__set__,
    vars(Path)["hops"].__set__,
    vars(Path)["latency_ns"].__set__,
    vars(Path)["bottleneck_gbps"].__set__,
)


def _connected(graph: FabricGraph, a: str, b: str, cut: str) -> bool:
    """Whether `b` can be reached from `a` without `cut` (a node or link id)."""
    hops, switches = _hops(graph), _switches(graph)
    seen, stack = {a}, [a]
    while stack:
        node = stack.pop()
        if node == b:
            return True
        if node != a and node not in switches:
            continue
        for neighbour, _, edge_id in hops[node]:
            if neighbour not in seen and neighbour != cut and edge_id != cut:
                seen.add(neighbour)
                stack.append(neighbour)
    return False


def single_points_of_failure(graph: FabricGraph, a: str, b: str) -> SinglePoints:
    """The links and switches whose loss alone disconnects `a` from `b`.

    A device stands for its enclosure (the enclosure itself and its own power are domains of
    their own, not single points of the fabric). Only links and switches on a path can be
    single points, so each one of the best path is taken out in turn and connectivity
    re-checked. Two nodes with no path between them have none (nothing is left to lose).
    """
    source, target = _endpoint(graph, a), _endpoint(graph, b)
    if source == target:
        return SinglePoints(frozenset(), frozenset())
    route = _shortest(graph, source, target, frozenset(), frozenset())
    if route is None:
        return SinglePoints(frozenset(), frozenset())
    _, nodes, links = route
    switches = _switches(graph)
    return SinglePoints(
        links=frozenset(link for link in links if not _connected(graph, source, target, link)),
        switches=frozenset(
            node
            for node in nodes[1:-1]
            if node in switches and not _connected(graph, source, target, node)
        ),
    )
