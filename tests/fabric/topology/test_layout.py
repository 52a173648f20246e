"""Topology layout: positions computed from the structure, the same on every load, with room
for every label."""

from __future__ import annotations

import random
from itertools import combinations

from fabric.topology.elements import Edge, FabricGraph, Node
from fabric.topology.layout import DEVICE_PITCH, layout_positions
from fabric.topology.render import topology_json
from tests.fabric.topology.fabrics import link, node, two_racks


def demo_like(racks: int = 2) -> FabricGraph:
    """A demo-shaped fabric: per rack a spine and a leaf, 8 hosts, 4 GPU chassis of 8 GPUs,
    4 memory boxes of 4 devices, all cabled to the leaf."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    pk = {"switch": 0, "host": 0, "enclosure": 0, "device": 0, "link": 0}

    def new(kind: str) -> int:
        pk[kind] += 1
        return pk[kind]

    for r in range(1, racks + 1):
        letter = "ab"[r - 1] if r <= 2 else str(r)
        nodes.append(node("rack", r, f"rack-{letter}"))
        leaf = new("switch")
        nodes.append(node("switch", leaf, f"leaf-{letter}", rack=r, tier="leaf"))
        spine = new("switch")
        nodes.append(node("switch", spine, f"spine-{letter}", rack=r, tier="spine"))
        edges.append(link(new("link"), f"switch:{leaf}", f"switch:{spine}", 300))
        for h in range(1, 9):
            host = new("host")
            nodes.append(node("host", host, f"host-{letter}-{h:02d}", rack=r))
            edges.append(link(new("link"), f"host:{host}", f"switch:{leaf}", 100))
        for kind, count, per in (("gpu_chassis", 4, 8), ("cxl_memory_box", 4, 4)):
            for e in range(1, count + 1):
                enclosure = new("enclosure")
                name = f"{'gpu' if kind == 'gpu_chassis' else 'mem'}-{letter}-{e:02d}"
                nodes.append(node("enclosure", enclosure, name, rack=r, enclosure_kind=kind))
                edges.append(link(new("link"), f"enclosure:{enclosure}", f"switch:{leaf}", 200))
                for d in range(1, per + 1):
                    parent = f"enclosure:{enclosure}"
                    nodes.append(
                        node("device", new("device"), f"{name}-{d}", rack=r, parent=parent)
                    )
    return FabricGraph(nodes, edges)


def positions(graph: FabricGraph, *, collapse: bool = False) -> dict[str, tuple[float, float]]:
    drawn = [n.id for n in graph.nodes.values() if not (collapse and n.kind == "device")]
    return layout_positions(graph, drawn=drawn)


def test_the_same_fabric_is_laid_out_the_same_whatever_the_order_it_was_read_in() -> None:
    graph = demo_like()
    first = positions(graph)
    nodes = list(graph.nodes.values())
    random.Random(3).shuffle(nodes)
    shuffled = FabricGraph(nodes, list(graph.edges.values()))
    assert positions(shuffled) == first == positions(demo_like())


def test_leaf_nodes_have_positions_and_compound_parents_none() -> None:
    graph = demo_like()
    placed = positions(graph)
    for n in graph.nodes.values():
        has_children = any(c for c in graph.children(n.id) if c in graph.nodes)
        if n.kind == "rack" or (n.kind == "enclosure" and has_children):
            assert n.id not in placed, n.id
        else:
            assert n.id in placed, n.id


def test_switches_sit_above_hosts_above_enclosures_and_racks_side_by_side() -> None:
    graph = demo_like()
    placed = positions(graph)

    def ys(kind: str, rack: str) -> list[float]:
        ids = [n.id for n in graph.nodes.values() if n.kind == kind and n.rack == rack]
        return [placed[i][1] for i in ids]

    for rack in ("rack:1", "rack:2"):
        assert max(ys("switch", rack)) < min(ys("host", rack))
        gpus = [placed[d][1] for d in graph.devices_in("enclosure:1")]
        assert max(ys("host", rack)) < min(gpus)
    # The spine comes first in its row; rack-b is to the right of rack-a, level with it.
    assert placed["switch:2"][0] < placed["switch:1"][0]
    assert placed["host:9"][0] > max(placed[f"host:{h}"][0] for h in range(1, 9))
    assert placed["host:9"][1] == placed["host:1"][1]


def test_no_two_nodes_are_closer_than_their_sizes_allow() -> None:
    graph = demo_like()
    placed = positions(graph)
    pitch_x, pitch_y = DEVICE_PITCH
    for a, b in combinations(placed, 2):
        (ax, ay), (bx, by) = placed[a], placed[b]
        devices = graph.nodes[a].kind == "device" and graph.nodes[b].kind == "device"
        room_x, room_y = (pitch_x, pitch_y) if devices else (60.0, 40.0)
        assert abs(ax - bx) >= room_x - 0.1 or abs(ay - by) >= room_y - 0.1, (a, b)


def test_names_sort_naturally() -> None:
    nodes = [node("rack", 1, "rack-a")]
    nodes += [node("host", i, f"host-{n}", rack=1) for i, n in enumerate([10, 2, 1], start=1)]
    placed = layout_positions(FabricGraph(nodes, []), drawn=[n.id for n in nodes])
    order = sorted(["host:1", "host:2", "host:3"], key=lambda h: placed[h])
    assert order == ["host:3", "host:2", "host:1"]  # host-1, host-2, host-10


def test_a_collapsed_fabric_places_enclosures_and_no_device() -> None:
    graph = demo_like(racks=12)
    placed = positions(graph, collapse=True)
    assert all(n.kind != "device" for n in (graph.nodes[i] for i in placed))
    assert {n.id for n in graph.of_kind("enclosure")} <= set(placed)
    # Twelve racks make a grid wider than tall, for a wide screen.
    xs = [x for x, _ in placed.values()]
    ys = [y for _, y in placed.values()]
    assert max(xs) - min(xs) > max(ys) - min(ys)


def test_the_topology_json_carries_the_positions() -> None:
    graph = two_racks()
    doc = topology_json(graph, collapse=False)
    by_id = {element["data"]["id"]: element for element in doc["nodes"]}
    assert by_id["host:1"]["position"] == {
        "x": positions(graph)["host:1"][0],
        "y": positions(graph)["host:1"][1],
    }
    assert "position" not in by_id["rack:1"]  # a compound parent: drawn around its children
    assert "position" not in by_id["enclosure:1"]
    collapsed = {e["data"]["id"]: e for e in topology_json(graph, collapse=True)["nodes"]}
    assert "position" in collapsed["enclosure:1"]
