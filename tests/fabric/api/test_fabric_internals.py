"""Operator-only endpoints: hosts, enclosures, switches, links, fabric managers, racks, feeds.

Operators read them; tenant members get 404 as if nothing were there; anonymous
callers get 401.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories.fabric import FabricManagerFactory, fabric_small
from tests.support.api import assert_error, results

pytestmark = pytest.mark.django_db

ENDPOINTS = ["hosts", "enclosures", "switches", "links", "fabric-managers", "racks", "power-feeds"]


@pytest.fixture
def fabric() -> Any:
    return fabric_small()


def _some_id(fabric: Any, endpoint: str) -> int:
    return {
        "hosts": fabric.hosts[0],
        "enclosures": fabric.enclosures[0],
        "switches": fabric.switches[0],
        "links": fabric.links[0],
        "fabric-managers": fabric.manager,
        "racks": fabric.racks[0],
        "power-feeds": fabric.feeds[0],
    }[endpoint].pk


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_operators_list_and_read_fabric_internals(
    endpoint: str, fabric: Any, api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    rows = results(client.get(f"/api/v1/{endpoint}/"))
    assert rows
    pk = _some_id(fabric, endpoint)
    detail = client.get(f"/api/v1/{endpoint}/{pk}/")
    assert detail.status_code == 200
    assert detail.json()["id"] == pk
    assert detail.json()["url"].endswith(f"/api/v1/{endpoint}/{pk}/")


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_tenant_members_get_404_on_fabric_internals(
    endpoint: str, persona: str, fabric: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    assert_error(client.get(f"/api/v1/{endpoint}/"), 404, "not_found")
    assert_error(client.get(f"/api/v1/{endpoint}/{_some_id(fabric, endpoint)}/"), 404, "not_found")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_anonymous_callers_get_401_on_fabric_internals(
    endpoint: str, fabric: Any, api: Any
) -> None:
    response = api.get(f"/api/v1/{endpoint}/")
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("pk", ["999999", "abc"])
def test_unknown_or_non_numeric_ids_are_404(
    endpoint: str, pk: str, fabric: Any, api_as: Any, admin_user: Any
) -> None:
    assert_error(api_as(admin_user).get(f"/api/v1/{endpoint}/{pk}/"), 404, "not_found")


def test_a_host_lists_its_ports(fabric: Any, api_as: Any, admin_user: Any) -> None:
    row = api_as(admin_user).get(f"/api/v1/hosts/{fabric.hosts[0].pk}/").json()
    assert row["rack"] == {"id": fabric.racks[0].pk, "name": "rack-a"}
    assert row["power_feed"] == {"id": fabric.feeds[0].pk, "name": "pdu-a"}
    assert [port["name"] for port in row["ports"]] == ["up0"]
    assert row["serial"] == fabric.hosts[0].serial


def test_a_link_names_what_each_end_belongs_to(fabric: Any, api_as: Any, admin_user: Any) -> None:
    link = fabric.links[0]  # switch sw-a port p00 <-> host-a uplink
    row = api_as(admin_user).get(f"/api/v1/links/{link.pk}/").json()
    assert row["a_port"]["owner"] == {"type": "switch", "id": fabric.switches[0].pk, "name": "sw-a"}
    assert row["b_port"]["owner"] == {"type": "host", "id": fabric.hosts[0].pk, "name": "host-a"}
    assert row["latency_ns"] == 120


def test_links_filter_by_the_switch_at_either_end(
    fabric: Any, api_as: Any, admin_user: Any
) -> None:
    rows = results(api_as(admin_user).get(f"/api/v1/links/?switch={fabric.switches[1].pk}"))
    # host-b, gpu-b and the inter-switch link.
    assert len(rows) == 3


def test_links_filter_by_the_rack_at_either_end_and_by_what_the_ends_belong_to(
    fabric: Any, api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    in_rack_b = results(client.get(f"/api/v1/links/?rack={fabric.racks[1].pk}"))
    # host-b's and gpu-b's links, and the inter-switch link to sw-b.
    assert {row["id"] for row in in_rack_b} == {link.pk for link in fabric.links[2:]}
    by_name = results(client.get("/api/v1/links/?q=gpu-b"))
    assert [row["id"] for row in by_name] == [fabric.links[3].pk]
    assert client.get("/api/v1/links/?rack=banana").status_code == 400


@pytest.mark.parametrize(
    ("endpoint", "query", "expected"),
    [
        ("hosts", "q=host-b", ["host-b"]),
        ("enclosures", "kind=cxl_memory_box", ["mem-a"]),
        ("switches", "ordering=-name", ["sw-b", "sw-a"]),
        ("racks", "q=rack-b", ["rack-b"]),
        ("power-feeds", "rack={rack_b}", ["pdu-b"]),
        ("fabric-managers", "is_enabled=false", []),
        ("fabric-managers", "is_enabled=true", ["fm-small"]),
    ],
)
def test_fabric_internals_filter(
    endpoint: str, query: str, expected: list[str], fabric: Any, api_as: Any, admin_user: Any
) -> None:
    query = query.format(rack_b=fabric.racks[1].pk)
    rows = results(api_as(admin_user).get(f"/api/v1/{endpoint}/?{query}"))
    assert [row["name"] for row in rows] == expected


@pytest.mark.parametrize(
    ("endpoint", "query", "field"),
    [
        ("hosts", "rack=abc", "rack"),
        ("hosts", "state=melted", "state"),
        ("enclosures", "kind=banana", "kind"),
        ("switches", "tier=banana", "tier"),
        ("links", "switch=abc", "switch"),
        ("links", "is_present=maybe", "is_present"),
        ("fabric-managers", "is_enabled=banana", "is_enabled"),
        ("racks", "ordering=bogus", "ordering"),
        ("power-feeds", "health=meh", "health"),
    ],
)
def test_bad_filters_on_fabric_internals_are_400_naming_the_field(
    endpoint: str, query: str, field: str, fabric: Any, api_as: Any, admin_user: Any
) -> None:
    response = api_as(admin_user).get(f"/api/v1/{endpoint}/?{query}")
    assert_error(response, 400, "invalid", field=field)


def test_fabric_manager_secrets_are_masked(api_as: Any, admin_user: Any) -> None:
    manager = FabricManagerFactory.create(
        name="fm-secret",
        endpoint="https://ops:s3cr3t@fm.example:8443/redfish/v1?access_token=abc123&site=a",
        settings={
            "fabric": "lab",
            "password": "hunter2",
            "API_KEY": "k-123",
            "client_secret": "shh",
            "nested": {"auth_token": "t-456", "timeout_s": 5},
            "targets": [{"private_key": "pem"}],
            "unset_password": "",
        },
    )
    response = api_as(admin_user).get(f"/api/v1/fabric-managers/{manager.pk}/")
    row = response.json()
    assert row["settings"] == {
        "fabric": "lab",
        "password": "********",
        "API_KEY": "********",
        "client_secret": "********",
        "nested": {"auth_token": "********", "timeout_s": 5},
        "targets": [{"private_key": "********"}],
        "unset_password": "",
    }
    assert row["endpoint"] == (
        "https://ops:********@fm.example:8443/redfish/v1?access_token=********&site=a"
    )
    for secret in (b"hunter2", b"k-123", b"shh", b"t-456", b"pem", b"s3cr3t", b"abc123"):
        assert secret not in response.content
    listed = api_as(admin_user).get("/api/v1/fabric-managers/")
    assert b"hunter2" not in listed.content
