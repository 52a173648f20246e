"""GET /api/v1/devices/: the device table as an API, for operators and tenant members."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.choices import DeviceKind, DeviceState, Health
from fabric.filters import DeviceFilterSet
from tests.factories.fabric import DeviceFactory, fabric_small
from tests.support.api import assert_error, results

pytestmark = pytest.mark.django_db

TENANT_DEVICE_KEYS = {
    "id",
    "url",
    "name",
    "kind",
    "vendor",
    "model",
    "memory_gib",
    "capacity_gb",
    "is_partitionable",
    "allocated_gib",
    "free_gib",
    "state",
    "health",
    "pool",
}
INTERNAL_KEYS = {
    "serial",
    "firmware",
    "external_id",
    "enclosure",
    "slot",
    "rack",
    "bound_host",
    "manager",
    "attributes",
}


@pytest.fixture
def fabric() -> Any:
    return fabric_small()


@pytest.mark.parametrize("persona", ["admin_user", "alice", "bob", "carol"])
def test_every_persona_lists_every_device(
    persona: str, fabric: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    response = api_as(request.getfixturevalue(persona)).get("/api/v1/devices/")
    rows = results(response)
    assert response.json()["count"] == 10
    assert [row["name"] for row in rows][:3] == ["gpu-a-0", "gpu-a-1", "gpu-a-2"]


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_tenant_members_get_no_fabric_internals(
    persona: str, fabric: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    listed = client.get("/api/v1/devices/")
    detail = client.get(f"/api/v1/devices/{fabric.gpus[0].pk}/")
    for row in [*results(listed), detail.json()]:
        assert set(row) == TENANT_DEVICE_KEYS
        assert not any("serial" in key for key in row)
    # Not even the values leak, under any key.
    for device in [*fabric.gpus, *fabric.memory]:
        assert device.serial.encode() not in listed.content
        assert device.serial.encode() not in detail.content
    assert b"fm-small" not in listed.content


def test_operators_get_every_field(fabric: Any, api_as: Any, admin_user: Any) -> None:
    gpu = fabric.gpus[0]
    gpu.bound_host = fabric.hosts[0]
    gpu.firmware = "96.00.74"
    gpu.attributes = {"pcie_gen": 5, "bmc_password": "hunter2"}
    gpu.save()
    row = api_as(admin_user).get(f"/api/v1/devices/{gpu.pk}/").json()
    assert set(row) >= INTERNAL_KEYS
    assert row["serial"] == gpu.serial
    assert row["enclosure"] == {"id": fabric.enclosures[0].pk, "name": "gpu-a"}
    assert row["rack"] == {"id": fabric.racks[0].pk, "name": "rack-a"}
    assert row["bound_host"] == {"id": fabric.hosts[0].pk, "name": "host-a"}
    assert row["manager"] == {"id": fabric.manager.pk, "name": "fm-small"}
    assert row["pool"] == {"id": fabric.pools[0].pk, "slug": "h100", "name": "H100 GPUs"}
    assert row["attributes"] == {"pcie_gen": 5, "bmc_password": "********"}


def test_a_device_without_enclosure_has_null_enclosure_and_rack(
    fabric: Any, api_as: Any, admin_user: Any
) -> None:
    loose = DeviceFactory.create(
        manager=fabric.manager, name="nic-0", kind=DeviceKind.NIC, enclosure=None
    )
    row = api_as(admin_user).get(f"/api/v1/devices/{loose.pk}/").json()
    assert (row["enclosure"], row["rack"], row["pool"]) == (None, None, None)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kind=cxl_memory", ["mem-a-0", "mem-a-1"]),
        ("kind=gpu&state=bound", ["gpu-b-3"]),
        ("state=free&state=bound&kind=gpu&health=critical", ["gpu-a-1"]),
        ("pool=cxl-memory", ["mem-a-0", "mem-a-1"]),
        ("model=cmm-d%201tib", ["mem-a-0", "mem-a-1"]),
        ("q=mem-a-1", ["mem-a-1"]),
        ("q=Samsung&ordering=-name", ["mem-a-1", "mem-a-0"]),
        ("ordering=-memory,name&kind=cxl_memory", ["mem-a-0", "mem-a-1"]),
    ],
)
def test_filters_and_sorting_work_for_tenant_members(
    query: str, expected: list[str], fabric: Any, api_as: Any, bob: Any
) -> None:
    fabric.gpus[-1].state = DeviceState.BOUND
    fabric.gpus[-1].save()
    fabric.gpus[1].health = Health.CRITICAL
    fabric.gpus[1].save()
    rows = results(api_as(bob).get(f"/api/v1/devices/?{query}"))
    assert [row["name"] for row in rows] == expected


def test_operators_filter_by_enclosure_rack_and_manager(
    fabric: Any, api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    by_enclosure = results(client.get(f"/api/v1/devices/?enclosure={fabric.enclosures[1].pk}"))
    assert [row["name"] for row in by_enclosure] == [f"gpu-b-{i}" for i in range(4)]
    by_rack = results(client.get(f"/api/v1/devices/?rack={fabric.racks[1].pk}"))
    assert len(by_rack) == 4
    by_manager = results(client.get(f"/api/v1/devices/?manager={fabric.manager.pk + 1000}"))
    assert by_manager == []
    by_serial = results(client.get(f"/api/v1/devices/?q={fabric.gpus[2].serial}"))
    assert [row["name"] for row in by_serial] == ["gpu-a-2"]


def test_tenant_members_cannot_filter_or_search_by_internals(
    fabric: Any, api_as: Any, alice: Any
) -> None:
    # Build (and cache) the class-level ordering field first, as schema generation does: the
    # tenant's narrowed choices must still apply.
    assert DeviceFilterSet.base_filters["ordering"].field
    client = api_as(alice)
    # Operator-only filters are refused, naming the filter (never a list silently unfiltered);
    # the same 400 whatever the value, so nothing is learnt about the fabric.
    for name, value in [("enclosure", fabric.enclosures[1].pk), ("rack", "null"), ("manager", 1)]:
        body = assert_error(
            client.get(f"/api/v1/devices/?{name}={value}"), 400, "invalid", field=name
        )
        assert body["detail"] == f"Filtering by {name} is for operators."
    assert len(results(client.get("/api/v1/devices/?enclosure=&rack="))) == 10
    assert results(client.get(f"/api/v1/devices/?q={fabric.gpus[2].serial}")) == []
    assert_error(
        client.get("/api/v1/devices/?ordering=enclosure"), 400, "invalid", field="ordering"
    )


def test_operators_may_sort_by_enclosure(fabric: Any, api_as: Any, admin_user: Any) -> None:
    rows = results(api_as(admin_user).get("/api/v1/devices/?ordering=-enclosure"))
    assert rows[0]["enclosure"]["name"] == "mem-a"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("kind=banana", "kind"),
        ("state=on_fire", "state"),
        ("health=meh", "health"),
        ("pool=nope", "pool"),
        ("ordering=bogus", "ordering"),
        ("enclosure=abc", "enclosure"),
        ("enclosure=999999", "enclosure"),
        ("rack=abc", "rack"),
        ("manager=abc", "manager"),
        ("manager=0", "manager"),
        ("q=" + "x" * 101, "q"),
    ],
)
def test_bad_filters_are_400_naming_the_field(
    query: str, field: str, fabric: Any, api_as: Any, admin_user: Any
) -> None:
    assert_error(api_as(admin_user).get(f"/api/v1/devices/?{query}"), 400, "invalid", field=field)


def test_ties_in_the_sort_key_never_repeat_or_skip_across_pages(
    fabric: Any, api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    seen: list[int] = []
    for page in (1, 2, 3, 4):
        seen += [
            row["id"]
            for row in results(
                client.get(f"/api/v1/devices/?ordering=kind&page_size=3&page={page}")
            )
        ]
    assert sorted(seen) == sorted(d.pk for d in [*fabric.gpus, *fabric.memory])


@pytest.mark.parametrize("path", ["/api/v1/devices/999999/", "/api/v1/devices/abc/"])
def test_unknown_or_non_numeric_device_ids_are_404(
    path: str, fabric: Any, api_as: Any, alice: Any
) -> None:
    assert_error(api_as(alice).get(path), 404, "not_found")


def test_the_device_list_is_read_only(fabric: Any, api_as: Any, admin_user: Any) -> None:
    response = api_as(admin_user).post("/api/v1/devices/", {"name": "x"}, format="json")
    assert_error(response, 405, "method_not_allowed")


@pytest.mark.parametrize("persona", ["admin_user", "alice"])
@pytest.mark.parametrize(
    "query",
    [
        "",
        "kind=gpu&state=free",
        "health=critical&health=ok&ordering=-name",
        "pool=h100&ordering=state",
        "model=h100%20sxm&q=gpu-b",
        "ordering=-memory",
        "ordering=kind&page=2",
        "ordering=-model,kind&page=2",
        "ordering=-pool&page=2",
        "ordering=enclosure,-name&page=2",
    ],
)
def test_the_api_lists_what_the_device_table_shows(
    persona: str, query: str, fabric: Any, request: pytest.FixtureRequest
) -> None:
    """One FilterSet, two surfaces: same query string, same devices in the same order."""
    from django.test import Client

    fabric.gpus[1].health = Health.CRITICAL
    fabric.gpus[1].state = DeviceState.BOUND
    fabric.gpus[1].save()
    # Enough rows for a second page, all tying on kind and model: the tie-break must match.
    DeviceFactory.create_batch(30, manager=fabric.manager, enclosure=None)
    user = request.getfixturevalue(persona)
    client = Client()
    client.force_login(user)
    page = client.get(f"/fabric/devices/?{query}&per_page=25".replace("?&", "?"))
    api = client.get(f"/api/v1/devices/?{query}&page_size=25".replace("?&", "?"))
    if "enclosure" in query and persona != "admin_user":
        # Sorting by enclosure is for operators: both surfaces refuse it alike.
        assert (page.status_code, api.status_code) == (400, 400)
        return
    assert page.status_code == 200
    shown = [device.pk for device in page.context["page"].object_list]
    assert [row["id"] for row in results(api)] == shown
