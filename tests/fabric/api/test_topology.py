"""The topology, failure-domain, what-if and paths endpoints (operators only)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from fabric.models import FailureDomain
from fabric.services.domains import domains_refresh
from tests.factories.fabric import DeviceFactory, EnclosureFactory, SmallFabric, fabric_small
from tests.support.api import assert_error, count_queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def small() -> SmallFabric:
    fabric = fabric_small()
    domains_refresh(manager=fabric.manager)
    return fabric


@pytest.fixture
def operator(api_as: Any, admin_user: Any) -> APIClient:
    return api_as(admin_user)


def domain(key: str) -> FailureDomain:
    return FailureDomain.objects.get(key=key)


# --- topology ---------------------------------------------------------------------------------


def test_the_topology_is_the_graph_of_the_whole_fabric(
    small: SmallFabric, operator: APIClient
) -> None:
    body = operator.get("/api/v1/topology/").json()

    ids = {node["data"]["id"] for node in body["nodes"]}
    assert {f"switch:{s.pk}" for s in small.switches} <= ids
    assert {f"device:{d.pk}" for d in small.gpus + small.memory} <= ids
    assert body["counts"]["devices"] == len(small.gpus) + len(small.memory)
    assert len(body["edges"]) == len(small.links)
    device = next(
        n["data"] for n in body["nodes"] if n["data"]["id"] == f"device:{small.gpus[0].pk}"
    )
    assert device["parent"] == f"enclosure:{small.gpus[0].enclosure_id}"
    assert device["url"] == f"/fabric/devices/{small.gpus[0].pk}/"


def test_the_topology_can_be_limited_to_a_rack(small: SmallFabric, operator: APIClient) -> None:
    body = operator.get("/api/v1/topology/", {"rack": small.racks[1].pk}).json()

    names = {node["data"]["label"] for node in body["nodes"]}
    assert "host-b" in names and "gpu-b-0" in names
    assert "host-a" not in names and "gpu-a-0" not in names


def test_a_collapsed_topology_draws_enclosures_with_counts(
    small: SmallFabric, operator: APIClient
) -> None:
    body = operator.get("/api/v1/topology/", {"collapse": "true"}).json()

    assert body["collapsed"] is True
    kinds = {node["data"]["kind"] for node in body["nodes"]}
    assert "device" not in kinds
    gpu_a = next(n["data"] for n in body["nodes"] if n["data"]["label"] == "gpu-a")
    assert gpu_a["device_count"] == 4


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"rack": "999999"}, "rack"),
        ({"rack": "abc"}, "rack"),
        ({"manager": "0"}, "manager"),
        ({"collapse": "maybe"}, "collapse"),
    ],
)
def test_bad_topology_parameters_are_a_400_naming_them(
    small: SmallFabric, operator: APIClient, query: dict[str, str], field: str
) -> None:
    assert_error(operator.get("/api/v1/topology/", query), 400, "invalid", field=field)


def test_the_topology_costs_the_same_queries_for_a_bigger_fabric(
    small: SmallFabric, operator: APIClient
) -> None:
    before = count_queries(lambda: operator.get("/api/v1/topology/"))
    enclosure = EnclosureFactory(manager=small.manager, rack=small.racks[0])
    DeviceFactory.create_batch(25, manager=small.manager, enclosure=enclosure)

    assert count_queries(lambda: operator.get("/api/v1/topology/")) == before


# --- who may see it -------------------------------------------------------------------------


ENDPOINTS = [
    "/api/v1/topology/",
    "/api/v1/failure-domains/",
    "/api/v1/failure-domains/impact/?ids=1",
    "/api/v1/paths/?host=1",
]


@pytest.mark.parametrize("url", ENDPOINTS)
@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_tenant_members_get_404(
    small: SmallFabric, api_as: Any, url: str, persona: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)
    assert_error(api_as(user).get(url), 404, "not_found")


@pytest.mark.parametrize("url", ENDPOINTS)
def test_anonymous_callers_get_401(small: SmallFabric, api: APIClient, url: str) -> None:
    assert api.get(url).status_code == 401


# --- failure domains and what-if -----------------------------------------------------------------


def test_failure_domains_are_listed_and_filtered_by_kind(
    small: SmallFabric, operator: APIClient
) -> None:
    switches = operator.get("/api/v1/failure-domains/", {"kind": "switch"}).json()["results"]

    assert {row["key"] for row in switches} == {f"switch:{s.pk}" for s in small.switches}
    row = next(r for r in switches if r["name"] == "sw-a")
    assert row["device_count"] >= 4
    assert row["impact_url"].endswith(f"/api/v1/failure-domains/{row['id']}/impact/")


def test_the_blast_radius_of_a_switch_names_what_it_takes_down(
    small: SmallFabric, operator: APIClient
) -> None:
    sw_a = domain(f"switch:{small.switches[0].pk}")

    body = operator.get(f"/api/v1/failure-domains/{sw_a.pk}/impact/").json()

    assert body["domains"] == [{"id": sw_a.pk, "key": sw_a.key, "kind": "switch", "name": "sw-a"}]
    lost = {row["name"]: row["reason"] for row in body["devices"]}
    assert {"gpu-a-0", "gpu-a-1", "gpu-a-2", "gpu-a-3"} <= set(lost)
    assert all(reason for reason in lost.values())
    assert "host-a" in {row["name"] for row in body["hosts"]}
    assert "sw-a" in {row["name"] for row in body["switches"]}
    assert f"switch:{small.switches[0].pk}" in body["node_ids"]
    assert body["compositions"] == [] and body["tenants"] == []
    assert body["counts"]["devices"] == len(body["devices"])


def test_a_what_if_of_two_domains_is_their_union(small: SmallFabric, operator: APIClient) -> None:
    enc_a = domain(f"enclosure:{small.enclosures[0].pk}")
    enc_b = domain(f"enclosure:{small.enclosures[1].pk}")

    body = operator.get("/api/v1/failure-domains/impact/", {"ids": f"{enc_a.pk},{enc_b.pk}"}).json()

    names = {row["name"] for row in body["devices"]}
    assert {f"gpu-{x}-{i}" for x in "ab" for i in range(4)} <= names
    assert [d["key"] for d in body["domains"]] == [enc_a.key, enc_b.key]
    failing = {row["name"]: row["reason"] for row in body["enclosures"] if row["failed"]}
    assert failing == {"gpu-a": "fails", "gpu-b": "fails"}
    assert body["counts"]["enclosures_failed"] == 2


def test_an_enclosure_cut_off_by_a_switch_is_hit_but_does_not_fail(
    small: SmallFabric, operator: APIClient
) -> None:
    sw_a = domain(f"switch:{small.switches[0].pk}")

    body = operator.get(f"/api/v1/failure-domains/{sw_a.pk}/impact/").json()

    gpu_a = next(row for row in body["enclosures"] if row["name"] == "gpu-a")
    assert gpu_a["failed"] is False
    assert gpu_a["reason"] == "cut off: no path to any host"


def test_a_what_if_injects_nothing(small: SmallFabric, operator: APIClient) -> None:
    sw_a = domain(f"switch:{small.switches[0].pk}")

    operator.get(f"/api/v1/failure-domains/{sw_a.pk}/impact/")

    small.switches[0].refresh_from_db()
    assert small.switches[0].health == "ok"
    assert all(d.state == "free" for d in small.gpus)


@pytest.mark.parametrize(
    "ids", ["", "abc", "1,x", "999999", ",".join(str(i) for i in range(1, 60))]
)
def test_bad_what_if_ids_are_a_400_naming_ids(
    small: SmallFabric, operator: APIClient, ids: str
) -> None:
    assert_error(
        operator.get("/api/v1/failure-domains/impact/", {"ids": ids}), 400, "invalid", field="ids"
    )


@pytest.mark.parametrize(
    "url", ["/api/v1/failure-domains/999999/impact/", "/api/v1/failure-domains/abc/"]
)
def test_unknown_failure_domains_are_a_404(
    small: SmallFabric, operator: APIClient, url: str
) -> None:
    assert_error(operator.get(url), 404, "not_found")


# --- paths ----------------------------------------------------------------------------------------


def test_paths_between_a_host_and_a_device_across_the_inter_switch_link(
    small: SmallFabric, operator: APIClient
) -> None:
    host_a, gpu_b = small.hosts[0], small.gpus[4]

    body = operator.get("/api/v1/paths/", {"host": host_a.pk, "device": gpu_b.pk}).json()

    assert body["reachable"] is True
    best = body["paths"][0]
    assert (best["hops"], best["latency_ns"], best["bottleneck_gbps"]) == (3, 120 + 300 + 250, 64.0)
    assert best["nodes"][0] == f"host:{host_a.pk}" and best["nodes"][-1] == f"device:{gpu_b.pk}"
    spof = body["single_points_of_failure"]
    assert {s["name"] for s in spof["switches"]} == {"sw-a", "sw-b"}
    assert len(spof["links"]) == 3


def test_a_host_lists_the_devices_it_reaches_nearest_first(
    small: SmallFabric, operator: APIClient
) -> None:
    body = operator.get("/api/v1/paths/", {"host": small.hosts[0].pk}).json()

    names = [row["name"] for row in body["devices"]]
    assert set(names[:4]) == {f"gpu-a-{i}" for i in range(4)}
    assert body["devices"][0]["latency_ns"] == 370
    within = operator.get("/api/v1/paths/", {"host": small.hosts[0].pk, "max_latency_ns": 400})
    assert {row["name"] for row in within.json()["devices"]} == {f"gpu-a-{i}" for i in range(4)}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "host"),
        ({"host": "abc"}, "host"),
        ({"host": "999999"}, "host"),
        ({"host": "HOST", "device": "999999"}, "device"),
        ({"host": "HOST", "max_latency_ns": "-5"}, "max_latency_ns"),
        ({"host": "HOST", "max_latency_ns": "soon"}, "max_latency_ns"),
    ],
)
def test_bad_path_parameters_are_a_400_naming_them(
    small: SmallFabric, operator: APIClient, query: dict[str, str], field: str
) -> None:
    query = {k: (str(small.hosts[0].pk) if v == "HOST" else v) for k, v in query.items()}
    assert_error(operator.get("/api/v1/paths/", query), 400, "invalid", field=field)
