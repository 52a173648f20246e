"""The fabric as placement may use it: nothing new goes through what is in maintenance.

Pure Python over a `FabricGraph`. An operator puts a device, an enclosure or a switch in
maintenance to work on it (fabric.services.maintenance): what runs there keeps running,
but no new placement may use it. Devices and enclosures carry that in their own state
(placement takes FREE devices and ACTIVE enclosures only); a switch's maintenance has to
reach the paths: `placeable(graph)` is the graph with every link of a switch in
maintenance taken as down, so no path runs through it. An enclosure that only that switch
connects becomes unreachable, and its devices unplaceable; a dual-homed one is still
reached through its other switch.
"""

from __future__ import annotations

from dataclasses import replace

from fabric.topology.graph import LINK_DOWN, FabricGraph

__all__ = ["MAINTENANCE", "links_down_at", "placeable"]

MAINTENANCE = "maintenance"  # fabric.choices.ComponentState.MAINTENANCE / DeviceState


def placeable(graph: FabricGraph) -> FabricGraph:
    """`graph` with the links of switches in maintenance down (the same graph when none)."""
    return links_down_at(graph, {n.id for n in graph.of_kind("switch") if n.state == MAINTENANCE})


def links_down_at(graph: FabricGraph, nodes: set[str]) -> FabricGraph:
    """`graph` with every link at one of `nodes` down, so no path runs through them (the
    same graph when there are none)."""
    if not nodes:
        return graph
    edges = [
        replace(edge, state=LINK_DOWN) if edge.a in nodes or edge.b in nodes else edge
        for edge in graph.edges.values()
    ]
    return FabricGraph(
        graph.nodes.values(), edges, power_feeds=graph.power_feeds, managers=graph.managers
    )
