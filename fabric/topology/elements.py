"""The graph's building blocks: nodes, edges, paths, and the immutable FabricGraph.

Pure Python. Import them from `fabric.topology.graph`, which re-exports them beside the
path functions.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

NODE_KINDS = ("rack", "host", "switch", "enclosure", "device")
LINK_DOWN = "down"  # fabric.choices.LinkState.DOWN, spelt out so this module stays pure

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Node:
    """A rack, host, switch, enclosure or device. `id` is "<kind>:<pk>"."""

    id: str
    kind: str
    pk: int
    name: str
    health: str
    state: str
    rack: str | None = None  # "rack:<pk>"
    parent: str | None = None  # device: its enclosure; host/switch/enclosure: its rack
    power_feed: str | None = None  # "power_feed:<pk>"
    manager: str = ""  # "manager:<pk>"
    attrs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Edge:
    """A link, between the owners of its two ports. `id` is "link:<pk>"; `a_port` and
    `b_port` are the ports' names (a link's name needs them: `fabric.topology.names`).
    `latency_estimated`: the manager gives no latency for it, and `latency_ns` is
    ESTIMATED_HOP_LATENCY_NS (`fabric.topology.load` sets both)."""

    id: str
    pk: int
    a: str
    b: str
    latency_ns: int
    bandwidth_gbps: float
    state: str
    health: str
    a_port: str = ""
    b_port: str = ""
    latency_estimated: bool = False

    def other(self, node_id: str) -> str:
        """The far end of the link, seen from `node_id`."""
        return self.b if node_id == self.a else self.a


@dataclass(frozen=True, slots=True)
class Path:
    """A route from a host to a device: host, switches..., enclosure, device."""

    nodes: tuple[str, ...]
    links: tuple[str, ...]
    hops: int  # number of links
    latency_ns: int  # sum of the links' latencies
    bottleneck_gbps: float  # the lowest bandwidth along it


@dataclass(frozen=True, slots=True)
class SinglePoints:
    """The links and switches whose loss alone disconnects two nodes."""

    links: frozenset[str]
    switches: frozenset[str]


class FabricGraph:
    """Nodes, edges and adjacency of one or more fabrics; immutable once built.

    Pure functions over a graph may memoise on it (`memo`), since it never changes:
    load a new graph to see a new state of the fabric.
    """

    def __init__(
        self,
        nodes: Iterable[Node],
        edges: Iterable[Edge],
        *,
        power_feeds: Mapping[str, str] | None = None,
        managers: Mapping[str, str] | None = None,
    ) -> None:
        """Raise ValueError when an edge names a node that is not in `nodes`."""
        self.nodes: dict[str, Node] = {node.id: node for node in nodes}
        self.edges: dict[str, Edge] = {}
        self.adjacency: dict[str, list[str]] = {node_id: [] for node_id in self.nodes}
        for edge in edges:
            for end in (edge.a, edge.b):
                if end not in self.nodes:
                    raise ValueError(f"{edge.id} joins {end}, which is not a node of the graph")
            self.edges[edge.id] = edge
            self.adjacency[edge.a].append(edge.id)
            if edge.b != edge.a:
                self.adjacency[edge.b].append(edge.id)
        self._children: dict[str, list[str]] = {}
        for node in self.nodes.values():
            if node.parent is not None and node.parent in self.nodes:
                self._children.setdefault(node.parent, []).append(node.id)
        # Names of things that are not nodes but that domains are made of.
        self.power_feeds: dict[str, str] = dict(power_feeds or {})
        self.managers: dict[str, str] = dict(managers or {})
        self._memo: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<FabricGraph {len(self.nodes)} nodes, {len(self.edges)} edges>"

    def neighbours(self, node_id: str) -> list[str]:
        """The nodes at the far end of `node_id`'s links, each once, in link order."""
        seen: dict[str, None] = {}
        for edge_id in self.adjacency.get(node_id, ()):
            seen[self.edges[edge_id].other(node_id)] = None
        return list(seen)

    def edges_of(self, node_id: str) -> list[Edge]:
        """The links of `node_id`."""
        return [self.edges[edge_id] for edge_id in self.adjacency.get(node_id, ())]

    def children(self, node_id: str) -> list[str]:
        """Nodes whose parent is `node_id`: a rack's gear, an enclosure's devices."""
        return list(self._children.get(node_id, ()))

    def devices_in(self, enclosure_id: str) -> list[str]:
        """The devices of an enclosure."""
        return [c for c in self._children.get(enclosure_id, ()) if self.nodes[c].kind == "device"]

    def of_kind(self, kind: str) -> list[Node]:
        """Every node of one kind, in insertion order."""
        return [node for node in self.nodes.values() if node.kind == kind]

    def counts(self) -> dict[str, int]:
        """How many racks, hosts, switches, enclosures, devices and links the graph holds."""
        totals = dict.fromkeys(("racks", "hosts", "switches", "enclosures", "devices"), 0)
        for node in self.nodes.values():
            totals[f"{node.kind}s" if node.kind != "switch" else "switches"] += 1
        totals["links"] = len(self.edges)
        return totals

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """The value cached under `key`, built once by `build()` (the graph never changes)."""
        try:
            return cast(T, self._memo[key])  # each key is built by one `build` only
        except KeyError:
            value = self._memo[key] = build()
            return value


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while tens of thousands of acyclic objects are
    built (a graph, its JSON): each collection would scan the whole heap for nothing, and
    at 10,000 devices those scans cost more than the building. Reference counting still
    frees everything; the collector resumes (if it was on) when the block ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
