"""GET /api/v1/counterfactual/: operators get the replay's answer; tenant members 404,
anonymous callers 401; a bad parameter is a 400 naming it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from composer.models import ServerShape
from tests.composer.counterfactual.history import END, START, at, build_history, eight_gpu_shape

pytestmark = pytest.mark.django_db

URL = "/api/v1/counterfactual/"


def test_an_operator_gets_the_replay_of_the_period(acme: Any, api_as: Any, admin_user: Any) -> None:
    """The hand-checked history (tests/composer/counterfactual/history.py), with `infer` still
    up: it runs to the end of the period."""
    build_history(acme)
    shape = eight_gpu_shape()
    ServerShape.objects.create(name="not asked", gpus=2, cores=8, memory_gib=64)
    response = api_as(admin_user).get(
        URL, {"start": START.isoformat(), "end": END.isoformat(), "shape": [shape.pk]}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert [s["name"] for s in body["shapes"]] == ["8-GPU"]
    assert body["servers_at_peak"] == 1
    assert body["peak_at"] == at(1).isoformat().replace("+00:00", "Z")
    assert body["servers_by_shape_at_peak"] == [{"shape": "8-GPU", "servers": 1}]
    assert body["compositions"] == 3 and body["unplaced"] == []
    rows = {row["resource"]: row for row in body["resources"]}
    assert rows["gpus"]["fixed_capacity_at_peak"] == 8
    assert rows["gpus"]["fixed_idle_at_peak"] == 4.5
    assert rows["cores"]["fixed_idle_at_peak"] == 36
    assert rows["memory_gib"]["fixed_idle_at_peak"] == 288
    assert rows["gpus"]["composable_peak"] == 3.5
    assert "best fit" in body["method"]


def test_the_default_is_the_last_seven_days_on_every_shape(api_as: Any, admin_user: Any) -> None:
    eight_gpu_shape()
    body = api_as(admin_user).get(URL).json()
    assert body["servers_at_peak"] == 0 and body["compositions"] == 0
    assert [s["name"] for s in body["shapes"]] == ["8-GPU"]
    span = datetime.fromisoformat(body["end"]) - datetime.fromisoformat(body["start"])
    assert span == timedelta(days=7)


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_tenant_members_get_404(who: str, persona: Any, api_as: Any) -> None:
    eight_gpu_shape()
    assert api_as(persona(who)).get(URL).status_code == 404


def test_anonymous_callers_get_401(api: Any) -> None:
    assert api.get(URL).status_code == 401


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "yesterday"}, "start"),
        ({"end": "2026-13-40"}, "end"),
        ({"start": "2026-12-02T00:00:00Z", "end": "2026-12-01T00:00:00Z"}, "end"),
        ({"start": "2024-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "end"),
        ({"shape": "999999"}, "shape"),
        ({"shape": "abc"}, "shape"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(
    api_as: Any, admin_user: Any, params: dict[str, str], field: str
) -> None:
    eight_gpu_shape()
    response = api_as(admin_user).get(URL, params)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field


def test_an_empty_catalogue_is_a_400_naming_the_shape(api_as: Any, admin_user: Any) -> None:
    response = api_as(admin_user).get(URL)
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "shape" and "seed_server_shapes" in str(body)
