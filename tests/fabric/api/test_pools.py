"""GET /api/v1/pools/: every signed-in user sees pools with their availability."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.choices import DeviceState, Health
from tests.factories.fabric import fabric_small
from tests.support.api import assert_error, results

pytestmark = pytest.mark.django_db

TENANT_POOL_KEYS = {
    "id",
    "url",
    "slug",
    "name",
    "kind",
    "model",
    "description",
    "unit",
    "capacity",
    "allocated",
    "free",
    "unavailable",
}


@pytest.fixture
def fabric() -> Any:
    fabric = fabric_small()
    gpus = fabric.gpus
    gpus[0].state = DeviceState.BOUND
    gpus[1].state = DeviceState.RESERVED
    gpus[2].state = DeviceState.FAILED
    gpus[3].health = Health.CRITICAL
    gpus[4].state = DeviceState.ABSENT
    for gpu in gpus[:5]:
        gpu.save()
    fabric.memory[0].state = DeviceState.BOUND  # sliced whole
    fabric.memory[0].allocated_gib = fabric.memory[0].memory_gib
    fabric.memory[0].save()
    return fabric


@pytest.mark.parametrize("persona", ["admin_user", "alice", "bob", "carol"])
def test_every_persona_sees_pools_with_availability(
    persona: str, fabric: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    rows = {
        row["slug"]: row
        for row in results(api_as(request.getfixturevalue(persona)).get("/api/v1/pools/"))
    }
    assert list(rows) == ["cxl-memory", "h100"]  # by name
    gpu = rows["h100"]
    assert (gpu["unit"], gpu["capacity"], gpu["allocated"], gpu["free"], gpu["unavailable"]) == (
        "devices",
        7,
        2,
        3,
        2,
    )
    memory = rows["cxl-memory"]
    assert (memory["unit"], memory["capacity"], memory["allocated"], memory["free"]) == (
        "GiB",
        2048,
        1024,
        1024,
    )
    assert gpu["url"].endswith("/api/v1/pools/h100/")


def test_tenant_members_do_not_see_the_pools_rack(fabric: Any, api_as: Any, alice: Any) -> None:
    for row in results(api_as(alice).get("/api/v1/pools/")):
        assert set(row) == TENANT_POOL_KEYS


def test_operators_also_see_the_pools_rack(fabric: Any, api_as: Any, admin_user: Any) -> None:
    fabric.pools[0].rack = fabric.racks[0]
    fabric.pools[0].save()
    row = api_as(admin_user).get("/api/v1/pools/h100/").json()
    assert set(row) == TENANT_POOL_KEYS | {"rack"}
    assert row["rack"] == {"id": fabric.racks[0].pk, "name": "rack-a"}


def test_a_pool_is_addressed_by_slug(fabric: Any, api_as: Any, bob: Any) -> None:
    response = api_as(bob).get("/api/v1/pools/cxl-memory/")
    assert response.status_code == 200
    assert response.json()["free"] == 1024


def test_an_unknown_pool_slug_is_404(fabric: Any, api_as: Any, carol: Any) -> None:
    assert_error(api_as(carol).get("/api/v1/pools/nope/"), 404, "not_found")


def test_pools_filter_by_kind(fabric: Any, api_as: Any, alice: Any) -> None:
    rows = results(api_as(alice).get("/api/v1/pools/?kind=cxl_memory"))
    assert [row["slug"] for row in rows] == ["cxl-memory"]


def test_an_unknown_pool_kind_is_400_naming_the_field(fabric: Any, api_as: Any, alice: Any) -> None:
    assert_error(api_as(alice).get("/api/v1/pools/?kind=banana"), 400, "invalid", field="kind")


def test_anonymous_callers_get_401(fabric: Any, api: Any) -> None:
    assert_error(api.get("/api/v1/pools/"), 401, "not_authenticated")
