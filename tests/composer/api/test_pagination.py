"""composer.api.pagination: every list is paginated; bad paging input names the parameter."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories.fabric import DeviceFactory, FabricManagerFactory
from tests.support.api import assert_error, results

pytestmark = pytest.mark.django_db


@pytest.fixture
def devices() -> list[Any]:
    manager = FabricManagerFactory(name="fm-pages")
    return [DeviceFactory(manager=manager, name=f"gpu-{i:03d}", enclosure=None) for i in range(7)]


def test_lists_are_paginated_with_next_and_previous(
    devices: list[Any], api_as: Any, alice: Any
) -> None:
    client = api_as(alice)
    first = client.get("/api/v1/devices/?page_size=3").json()
    assert first["count"] == 7
    assert [row["name"] for row in first["results"]] == ["gpu-000", "gpu-001", "gpu-002"]
    assert first["previous"] is None
    second = client.get(first["next"]).json()
    assert [row["name"] for row in second["results"]] == ["gpu-003", "gpu-004", "gpu-005"]
    assert second["previous"].endswith("page_size=3")
    last = client.get("/api/v1/devices/?page_size=3&page=last").json()
    assert ([row["name"] for row in last["results"]], last["next"]) == (["gpu-006"], None)


def test_the_default_page_is_50(api_as: Any, admin_user: Any) -> None:
    manager = FabricManagerFactory(name="fm-many")
    for i in range(51):
        DeviceFactory(manager=manager, enclosure=None, name=f"d{i:03d}")
    body = api_as(admin_user).get("/api/v1/devices/").json()
    assert (body["count"], len(body["results"])) == (51, 50)


@pytest.mark.parametrize("size", ["501", "100000", "9" * 5000])
def test_a_page_size_over_the_schema_s_maximum_is_400(
    devices: list[Any], api_as: Any, alice: Any, size: str
) -> None:
    body = assert_error(
        api_as(alice).get(f"/api/v1/devices/?page_size={size}"), 400, "invalid", field="page_size"
    )
    assert "from 1 to 500" in body["detail"]
    assert len(results(api_as(alice).get("/api/v1/devices/?page_size=500"))) == 7


def test_a_page_past_the_end_is_404_saying_how_many_pages(
    devices: list[Any], api_as: Any, alice: Any
) -> None:
    body = assert_error(
        api_as(alice).get("/api/v1/devices/?page=999&page_size=3"), 404, "not_found", field="page"
    )
    assert body["detail"] == "Page 999 does not exist: there are 3 pages."


def test_an_empty_list_still_has_a_first_page(api_as: Any, alice: Any) -> None:
    body = api_as(alice).get("/api/v1/devices/").json()
    assert (body["count"], body["results"]) == (0, [])
    assert_error(api_as(alice).get("/api/v1/devices/?page=2"), 404, "not_found", field="page")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=abc", "page"),
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=1.5", "page"),
        ("page=²", "page"),
        ("page_size=abc", "page_size"),
        ("page_size=0", "page_size"),
        ("page_size=-5", "page_size"),
    ],
)
def test_bad_paging_input_is_400_naming_the_parameter(
    query: str, field: str, devices: list[Any], api_as: Any, alice: Any
) -> None:
    body = assert_error(api_as(alice).get(f"/api/v1/devices/?{query}"), 400, "invalid", field=field)
    assert "Expected" in body["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/pools/?page=abc",
        "/api/v1/jobs/?page=abc",
        "/api/v1/hosts/?page=abc",
        "/api/v1/links/?page_size=abc",
    ],
)
def test_every_list_validates_paging(path: str, api_as: Any, admin_user: Any) -> None:
    assert_error(
        api_as(admin_user).get(path), 400, "invalid", field=path.split("?")[1].split("=")[0]
    )
