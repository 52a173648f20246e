"""A link has one name wherever it is shown: the failure-domain list (derived from the
graph), the health poll's rows (alerts, health changes) and the fault page's targets."""

from __future__ import annotations

import pytest

from fabric.health.rows import inventory_rows
from fabric.services.fault_targets import fault_target_name, fault_target_resolve
from fabric.topology.domains import derive_domains
from fabric.topology.load import load_graph
from fabric.topology.names import link_names
from tests.factories.fabric import LinkFactory, PortFactory, fabric_small


def test_a_link_is_named_by_its_ends_and_by_its_ports_beside_a_parallel_one() -> None:
    names = link_names(
        {
            1: (("sw-a", "p1"), ("gpu-a", "up0")),
            2: (("sw-a", "p2"), ("sw-b", "isl")),
            3: (("sw-b", "isl2"), ("sw-a", "p3")),  # the same two, either way round
        }
    )
    assert names == {
        1: "sw-a <-> gpu-a",
        2: "sw-a:p2 <-> sw-b:isl",
        3: "sw-b:isl2 <-> sw-a:p3",
    }


@pytest.mark.django_db
def test_the_domain_list_the_health_poll_and_the_fault_page_name_a_link_alike() -> None:
    small = fabric_small()
    a, b = small.switches
    manager = small.manager
    twin = LinkFactory.create(
        manager=manager,
        a_port=PortFactory.create(manager=manager, switch=a, name="isl2"),
        b_port=PortFactory.create(manager=manager, switch=b, name="isl2"),
    )
    graph = load_graph(managers=[manager.pk])
    domains = {s.key: s.name for s in derive_domains(graph) if s.kind == "link"}
    rows = {row.pk: row.name for row in inventory_rows(manager).values() if row.kind == "link"}

    for link in [*small.links, twin]:
        name = fault_target_name(link)
        assert domains[f"link:{link.pk}"] == rows[link.pk] == name
        assert fault_target_resolve(manager=manager, target_type="link", target_id=name) == link
    assert fault_target_name(small.links[0]) == "sw-a <-> host-a"
    (isl,) = [link for link in small.links if link.a_port.name == "isl"]
    assert {fault_target_name(isl), fault_target_name(twin)} == {
        "sw-a:isl <-> sw-b:isl",
        "sw-a:isl2 <-> sw-b:isl2",
    }
