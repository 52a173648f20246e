"""Paths, reachability and single points of failure on hand-built fabrics (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.topology.graph import (
    FabricGraph,
    enclosure_distances,
    paths_between,
    reachable_devices,
    reachable_enclosures,
    single_points_of_failure,
)
from tests.fabric.topology.fabrics import link, node, two_racks


def test_the_graph_indexes_neighbours_children_and_devices() -> None:
    graph = two_racks()
    assert graph.neighbours("host:2") == ["switch:3", "switch:1"]
    assert graph.devices_in("enclosure:1") == ["device:1", "device:2"]
    assert set(graph.children("rack:2")) == {"switch:4", "host:3", "enclosure:3"}
    assert graph.counts() == {
        "racks": 2,
        "hosts": 3,
        "switches": 4,
        "enclosures": 3,
        "devices": 5,
        "links": 12,
    }


def test_a_link_to_an_unknown_node_is_refused() -> None:
    with pytest.raises(ValueError, match="switch:9"):
        FabricGraph([node("host", 1)], [link(1, "host:1", "switch:9", 100)])


@pytest.mark.parametrize(
    ("host", "device", "nodes", "links", "latency_ns", "bottleneck_gbps"),
    [
        ("host:1", "device:1", ("host:1", "switch:3", "enclosure:1", "device:1"),
         ("link:1", "link:4"), 300, 64.0),
        ("host:2", "device:3", ("host:2", "switch:1", "enclosure:2", "device:3"),
         ("link:5", "link:6"), 300, 32.0),
        ("host:1", "device:5", ("host:1", "switch:3", "switch:1", "switch:4", "enclosure:3",
         "device:5"), ("link:1", "link:9", "link:11", "link:8"), 900, 64.0),
    ],
)  # fmt: skip
def test_the_best_path_has_its_hops_total_latency_and_bottleneck(
    host: str,
    device: str,
    nodes: tuple[str, ...],
    links: tuple[str, ...],
    latency_ns: int,
    bottleneck_gbps: float,
) -> None:
    best = paths_between(two_racks(), host, device)[0]
    assert (best.nodes, best.links) == (nodes, links)
    assert (best.hops, best.latency_ns, best.bottleneck_gbps) == (
        len(links),
        latency_ns,
        bottleneck_gbps,
    )


def test_paths_come_best_first_and_are_all_simple() -> None:
    paths = paths_between(two_racks(), "host:1", "device:3")
    assert [p.latency_ns for p in paths] == [600, 600, 1200, 1200]
    for path in paths:
        assert len(set(path.nodes)) == len(path.nodes)
        assert path.hops == len(path.links) == len(path.nodes) - 2  # the device adds no link
        assert path.nodes[-2:] == ("enclosure:2", "device:3")


def test_the_limit_caps_the_number_of_paths() -> None:
    assert len(paths_between(two_racks(), "host:2", "device:3", limit=3)) == 3
    assert len(paths_between(two_racks(), "host:2", "device:3")) == 7


def test_a_host_is_never_passed_through() -> None:
    # host:2 is cabled to leaf-a and spine-1: through it, host:1 would reach the memory
    # box in 500 ns instead of 600.
    paths = paths_between(two_racks(), "host:1", "device:3")
    assert paths[0].latency_ns == 600
    assert all("host:2" not in p.nodes for p in paths)


def test_an_enclosure_is_never_passed_through() -> None:
    shortcut = link(99, "enclosure:1", "switch:1", 10)
    paths = paths_between(two_racks(extra_links=(shortcut,)), "host:1", "device:3")
    assert paths[0].latency_ns == 600
    assert all("enclosure:1" not in p.nodes for p in paths)


def test_a_down_link_is_not_used() -> None:
    paths = paths_between(two_racks(down=(9,)), "host:1", "device:3")
    assert paths[0].links == ("link:1", "link:10", "link:7")
    assert all("link:9" not in p.links for p in paths)


def test_excluded_switches_and_links_are_not_used() -> None:
    graph = two_racks()
    assert paths_between(graph, "host:1", "device:1", exclude=frozenset({"link:4"})) == []
    paths = paths_between(graph, "host:2", "device:3", exclude=frozenset({"switch:1"}))
    assert [p.nodes for p in paths] == [
        ("host:2", "switch:3", "switch:2", "enclosure:2", "device:3")
    ]


def test_an_unreachable_device_has_no_path() -> None:
    assert paths_between(two_racks(down=(4,)), "host:1", "device:1") == []


def test_an_unknown_node_is_an_error() -> None:
    with pytest.raises(ValueError, match="host:99"):
        paths_between(two_racks(), "host:99", "device:1")
    with pytest.raises(ValueError, match="host:99"):
        reachable_devices(two_racks(), "host:99")


def test_a_host_reaches_every_device_by_its_best_path() -> None:
    reach = reachable_devices(two_racks(), "host:1")
    assert {d: p.latency_ns for d, p in reach.items()} == {
        "device:1": 300,
        "device:2": 300,
        "device:3": 600,
        "device:4": 600,
        "device:5": 900,
    }
    assert reach["device:2"].nodes == ("host:1", "switch:3", "enclosure:1", "device:2")
    assert reach["device:5"] == paths_between(two_racks(), "host:1", "device:5")[0]


@pytest.mark.parametrize(
    ("ceiling", "devices"),
    [
        (None, {"device:1", "device:2", "device:3", "device:4", "device:5"}),
        (900, {"device:1", "device:2", "device:3", "device:4", "device:5"}),
        (899, {"device:1", "device:2", "device:3", "device:4"}),
        (600, {"device:1", "device:2", "device:3", "device:4"}),
        (300, {"device:1", "device:2"}),
        (299, set()),
    ],
)
def test_a_latency_ceiling_leaves_farther_devices_out(
    ceiling: int | None, devices: set[str]
) -> None:
    assert set(reachable_devices(two_racks(), "host:1", max_latency_ns=ceiling)) == devices


def test_reachability_avoids_excluded_and_down_elements() -> None:
    graph = two_racks(down=(8,))
    assert "device:5" not in reachable_devices(graph, "host:1")
    reach = reachable_devices(two_racks(), "host:1", exclude=frozenset({"switch:1", "device:4"}))
    assert set(reach) == {"device:1", "device:2", "device:3", "device:5"}
    assert "switch:1" not in reach["device:5"].nodes
    assert reachable_devices(two_racks(), "host:1", exclude=frozenset({"link:1"})) == {}


def test_reachable_enclosures_gives_one_path_per_enclosure() -> None:
    reach = reachable_enclosures(two_racks(), "host:3")
    assert set(reach) == {"enclosure:1", "enclosure:2", "enclosure:3"}
    assert reach["enclosure:3"].nodes == ("host:3", "switch:4", "enclosure:3")


@pytest.mark.parametrize("down", [(), (8,), (1, 8)])
@pytest.mark.parametrize("host", ["host:1", "host:2", "host:3"])
def test_enclosure_distances_are_the_figures_of_reachable_enclosures(
    host: str, down: tuple[int, ...]
) -> None:
    graph = two_racks(down=down)
    paths = reachable_enclosures(graph, host)

    def figures(p: Any) -> tuple[int, float, int, int]:
        estimated = sum(graph.edges[link].latency_estimated for link in p.links)
        return (p.latency_ns, p.bottleneck_gbps, p.hops, estimated)

    assert enclosure_distances(graph, host) == {e: figures(p) for e, p in paths.items()}
    assert list(enclosure_distances(graph, host)) == list(paths)  # nearest first, alike
    ceiling = frozenset({"switch:1"})
    assert enclosure_distances(graph, host, max_latency_ns=300, exclude=ceiling) == {
        e: figures(p)
        for e, p in reachable_enclosures(graph, host, max_latency_ns=300, exclude=ceiling).items()
    }


def test_a_dual_homed_enclosure_has_no_single_point_at_the_switch_level() -> None:
    points = single_points_of_failure(two_racks(), "host:2", "device:3")
    assert points.links == frozenset() and points.switches == frozenset()


def test_a_single_homed_enclosure_hangs_on_its_switch_and_link() -> None:
    points = single_points_of_failure(two_racks(), "host:2", "device:1")
    assert points.links == {"link:4"}
    assert points.switches == {"switch:3"}


def test_a_single_homed_host_hangs_on_its_uplink_too() -> None:
    points = single_points_of_failure(two_racks(), "host:1", "enclosure:2")
    assert points.links == {"link:1"}
    assert points.switches == {"switch:3"}


def test_nodes_with_no_path_have_no_single_points() -> None:
    points = single_points_of_failure(two_racks(down=(4,)), "host:1", "device:1")
    assert points.links == frozenset() and points.switches == frozenset()
