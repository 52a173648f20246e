"""The topology JSON: Cytoscape.js elements, compound parents, counts and auto-collapse."""

from __future__ import annotations

import json

import pytest

from fabric.topology.domains import derive_domains
from fabric.topology.graph import Edge, FabricGraph, paths_between
from fabric.topology.radius import blast_radius
from fabric.topology.render import AUTO_COLLAPSE_NODES, impact_json, path_json, topology_json
from tests.fabric.topology.fabrics import device, link, node, two_racks


def by_id(doc: dict) -> dict[str, dict]:
    return {element["data"]["id"]: element["data"] for element in doc["nodes"] + doc["edges"]}


def test_racks_contain_their_gear_and_enclosures_their_devices() -> None:
    data = by_id(topology_json(two_racks(), collapse=False))
    assert data["rack:1"]["parent"] is None
    assert data["switch:4"]["parent"] == "rack:2"
    assert data["host:1"]["parent"] == "rack:1"
    assert data["enclosure:2"]["parent"] == "rack:1"
    assert data["device:3"]["parent"] == "enclosure:2"


def test_nodes_carry_label_health_state_url_and_kind_attributes() -> None:
    data = by_id(topology_json(two_racks(), collapse=False))
    assert data["device:2"] == {
        "id": "device:2",
        "kind": "device",
        "label": "device-2",
        "parent": "enclosure:1",
        "health": "ok",
        "state": "bound",
        "url": "/fabric/devices/2/",
        "device_kind": "gpu",
        "model": "H100",
    }
    assert data["rack:2"]["url"] == "/fabric/racks/2/"
    assert data["host:3"]["url"] == "/fabric/hosts/3/"
    assert data["switch:1"]["url"] == "/fabric/switches/1/"
    assert data["enclosure:1"]["url"] == "/fabric/enclosures/1/"
    assert data["switch:1"]["tier"] == "spine"


def test_edges_join_port_owners_with_latency_bandwidth_and_state() -> None:
    data = by_id(topology_json(two_racks(down=(5,))))
    assert data["link:5"] == {
        "id": "link:5",
        "source": "host:2",
        "target": "switch:1",
        "latency_ns": 100,
        "latency_estimated": False,
        "bandwidth_gbps": 32.0,
        "state": "down",
        "health": "ok",
    }


def test_a_link_whose_latency_is_estimated_says_so() -> None:
    estimated = Edge(
        "link:99", 99, "host:1", "switch:4", 200, 64.0, "up", "ok", latency_estimated=True
    )
    data = by_id(topology_json(two_racks(extra_links=(estimated,))))
    assert (data["link:99"]["latency_ns"], data["link:99"]["latency_estimated"]) == (200, True)
    assert data["link:1"]["latency_estimated"] is False


def test_counts_cover_the_graph_and_what_is_drawn() -> None:
    doc = topology_json(two_racks(), collapse=False)
    assert doc["counts"] == {
        "racks": 2,
        "hosts": 3,
        "switches": 4,
        "enclosures": 3,
        "devices": 5,
        "links": 12,
        "nodes": 17,
        "edges": 12,
    }
    assert doc["collapsed"] is False
    assert set(doc["legend"]) == {"kinds", "health", "link_states"}


def test_collapsed_enclosures_count_their_devices_instead() -> None:
    doc = topology_json(two_racks(), collapse=True)
    data = by_id(doc)
    assert not any(d["kind"] == "device" for d in data.values() if "kind" in d)
    assert doc["counts"]["nodes"] == 12 and doc["counts"]["devices"] == 5
    assert {
        k: data["enclosure:1"][k] for k in ("device_count", "devices_free", "devices_bound")
    } == {
        "device_count": 2,
        "devices_free": 1,
        "devices_bound": 1,
    }
    assert data["enclosure:2"]["devices_failed"] == 1


def big_fabric(devices: int) -> FabricGraph:
    nodes = [node("rack", 1), node("switch", 1, rack=1), node("host", 1, rack=1)]
    enclosures = devices // 8
    nodes += [node("enclosure", e, rack=1) for e in range(1, enclosures + 1)]
    nodes += [device(d, (d - 1) // 8 + 1, rack=1, feed=1) for d in range(1, devices + 1)]
    links = [link(1, "host:1", "switch:1", 100)]
    links += [link(e + 1, f"enclosure:{e}", "switch:1", 200) for e in range(1, enclosures + 1)]
    return FabricGraph(nodes, links)


@pytest.mark.parametrize(("devices", "collapsed"), [(1_600, False), (1_800, True)])
def test_the_graph_collapses_by_itself_above_the_threshold(devices: int, collapsed: bool) -> None:
    graph = big_fabric(devices)
    assert (len(graph.nodes) > AUTO_COLLAPSE_NODES) is collapsed
    doc = topology_json(graph)
    assert doc["collapsed"] is collapsed
    assert doc["counts"]["devices"] == devices
    assert doc["counts"]["nodes"] == len(graph.nodes) - (devices if collapsed else 0)


def test_collapse_can_be_forced_either_way() -> None:
    assert topology_json(big_fabric(1_800), collapse=False)["counts"]["nodes"] == 2_028
    assert topology_json(two_racks(), collapse=True)["collapsed"] is True


def test_the_document_is_plain_json() -> None:
    doc = topology_json(two_racks(), collapse=False)
    assert json.loads(json.dumps(doc)) == doc


def test_paths_and_impacts_render_with_the_same_ids() -> None:
    graph = two_racks()
    path = path_json(paths_between(graph, "host:1", "device:1")[0])
    assert path == {
        "nodes": ["host:1", "switch:3", "enclosure:1", "device:1"],
        "links": ["link:1", "link:4"],
        "hops": 2,
        "latency_ns": 300,
        "bottleneck_gbps": 64.0,
    }
    spec = next(s for s in derive_domains(graph) if s.key == "enclosure:1")
    report = impact_json(blast_radius(graph, [spec], contributors=()))
    assert report["failed"] == ["device:1", "device:2", "enclosure:1", "link:4"]
    assert report["counts"] == {
        "devices": 2,
        "hosts": 0,
        "devices_degraded": 0,
        "hosts_degraded": 0,
        "switches": 0,
        "links": 1,
        "enclosures": 1,
    }
    assert report["headline"] == "2 devices lost"
    assert json.loads(json.dumps(report)) == report
