"""load_graph() against the database: a fixed number of queries, absent rows left out."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fabric.choices import ComponentState, DeviceState
from fabric.models import Device, Host, Link
from fabric.topology.graph import Node
from fabric.topology.load import NODE_FIELDS, _device_node, load_graph
from fabric.topology.render import node_url, topology_json
from tests.factories.fabric import DeviceFactory, SmallFabric, fabric_small

pytestmark = pytest.mark.django_db

LOAD_QUERIES = 8


@pytest.fixture
def small() -> SmallFabric:
    return fabric_small()


def test_the_small_fabric_loads_whole(small: SmallFabric) -> None:
    graph = load_graph()
    assert graph.counts() == {
        "racks": 2,
        "hosts": 2,
        "switches": 2,
        "enclosures": 3,
        "devices": 10,
        "links": 5,
    }
    host = graph.nodes[f"host:{small.hosts[0].pk}"]
    assert (host.rack, host.parent) == (f"rack:{small.racks[0].pk}",) * 2
    assert host.power_feed == f"power_feed:{small.feeds[0].pk}"
    assert host.manager == f"manager:{small.manager.pk}"
    gpu = graph.nodes[f"device:{small.gpus[0].pk}"]
    assert gpu.parent == f"enclosure:{small.enclosures[0].pk}"
    assert gpu.attrs["pool_name"] == "H100 GPUs"
    assert graph.power_feeds[f"power_feed:{small.feeds[1].pk}"] == "pdu-b"
    isl = graph.edges[f"link:{small.links[-1].pk}"]
    assert {isl.a, isl.b} == {f"switch:{s.pk}" for s in small.switches}


def test_the_number_of_queries_does_not_grow_with_the_fabric(
    small: SmallFabric, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(LOAD_QUERIES):
        load_graph()
    DeviceFactory.create_batch(60, manager=small.manager, enclosure=small.enclosures[1])
    with django_assert_num_queries(LOAD_QUERIES):
        graph = load_graph()
    assert graph.counts()["devices"] == 70


def test_absent_rows_are_left_out(small: SmallFabric) -> None:
    Device.objects.filter(pk=small.gpus[0].pk).update(state=DeviceState.ABSENT)
    Host.objects.filter(pk=small.hosts[1].pk).update(state=ComponentState.ABSENT)
    Link.objects.filter(pk=small.links[-1].pk).update(is_present=False)
    graph = load_graph()
    assert f"device:{small.gpus[0].pk}" not in graph.nodes
    assert f"host:{small.hosts[1].pk}" not in graph.nodes
    assert f"link:{small.links[-1].pk}" not in graph.edges
    assert f"link:{small.links[2].pk}" not in graph.edges  # host-b's uplink went with it
    assert graph.counts()["links"] == 3


def test_a_rack_keeps_its_own_gear_and_the_switches_it_is_cabled_to(small: SmallFabric) -> None:
    rack_a = small.racks[0]
    graph = load_graph(racks=[rack_a.pk])
    kinds = {n.id for n in graph.nodes.values() if n.kind != "device"}
    assert kinds == {
        f"rack:{rack_a.pk}",
        f"switch:{small.switches[0].pk}",
        f"switch:{small.switches[1].pk}",  # rack B's switch, at the far end of the ISL
        f"host:{small.hosts[0].pk}",
        f"enclosure:{small.enclosures[0].pk}",
        f"enclosure:{small.enclosures[2].pk}",
    }
    assert graph.counts()["devices"] == 6
    assert set(graph.edges) == {f"link:{link.pk}" for link in (*small.links[:2], small.links[-1])}
    outside = graph.nodes[f"switch:{small.switches[1].pk}"]
    assert outside.parent is None  # its rack is not drawn
    assert all(
        d["data"]["parent"] is None or d["data"]["parent"] in graph.nodes
        for d in topology_json(graph)["nodes"]
    )


def test_a_manager_filter_keeps_only_its_fabric(small: SmallFabric) -> None:
    assert load_graph(managers=[small.manager.pk]).counts()["devices"] == 10
    assert load_graph(managers=[small.manager.pk + 1]).nodes == {}


def test_render_urls_are_the_console_pages(small: SmallFabric) -> None:
    graph = load_graph()
    for view, kind in (
        ("device_detail", "device"),
        ("host_detail", "host"),
        ("enclosure_detail", "enclosure"),
        ("switch_detail", "switch"),
        ("rack_detail", "rack"),
    ):
        node = graph.of_kind(kind)[0]
        assert node_url(node) == reverse(f"fabric:{view}", args=[node.pk])


def test_device_nodes_built_through_the_slots_equal_nodes_built_by_init() -> None:
    assert tuple(f.name for f in fields(Node)) == NODE_FIELDS
    attrs = {"device_kind": "gpu"}
    fast = _device_node("device:1", 1, "gpu-0", "ok", "free", "rack:1", "enclosure:2", None,
                        "manager:3", attrs)  # fmt: skip
    assert fast == Node("device:1", "device", 1, "gpu-0", "ok", "free", rack="rack:1",
                        parent="enclosure:2", manager="manager:3", attrs=attrs)  # fmt: skip


def test_a_lean_load_leaves_out_racks_and_names_and_may_carry_device_attributes(
    small: SmallFabric,
) -> None:
    Device.objects.filter(pk=small.gpus[0].pk).update(attributes={"tflops": 60})
    full = load_graph()
    with CaptureQueriesContext(connection) as captured:
        lean = load_graph(lean=True, device_attributes=True)
    assert len(captured) == LOAD_QUERIES - 3
    assert lean.counts() == {**full.counts(), "racks": 0}
    assert (lean.managers, lean.power_feeds) == ({}, {})
    gpu = f"device:{small.gpus[0].pk}"
    assert lean.nodes[gpu].attrs["attributes"] == {"tflops": 60}
    assert "attributes" not in full.nodes[gpu].attrs
    assert {k: v for k, v in lean.nodes[gpu].attrs.items() if k != "attributes"} == dict(
        full.nodes[gpu].attrs
    )
    host = f"host:{small.hosts[0].pk}"
    assert lean.nodes[host].rack == full.nodes[host].rack and lean.nodes[host].parent is None
    assert lean.edges == full.edges
