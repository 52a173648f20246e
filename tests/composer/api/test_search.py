"""GET /api/v1/search/: the page's finds as JSON, the same scoping, and 400s naming the
parameter."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from composer.choices import CompositionState
from composer.models import Composition
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db

URL = reverse("api:search")


@pytest.fixture
def boxes(small: SmallFabric, acme: Any, globex: Any, alice: Any, carol: Any) -> None:
    Composition.objects.create(
        tenant=acme, name="train-acme", requested_by=alice, state=CompositionState.READY
    )
    Composition.objects.create(
        tenant=globex, name="train-globex", requested_by=carol, state=CompositionState.READY
    )


def _kinds(body: dict[str, Any]) -> dict[str, list[str]]:
    return {g["kind"]: [i["label"] for i in g["items"]] for g in body["results"]}


def test_an_operator_gets_every_kind_with_links_to_the_pages(
    api_as: Any, admin_user: Any, small: SmallFabric, boxes: None
) -> None:
    response = api_as(admin_user).get(URL, {"q": "host-b"})
    assert response.status_code == 200
    body = response.json()
    assert body["query"] == "host-b"
    host = body["results"][0]
    assert host["kind"] == "host" and host["title"] == "Hosts" and host["more"] is False
    assert host["items"] == [
        {
            "kind": "host",
            "id": small.hosts[1].pk,
            "label": "host-b",
            "detail": host["items"][0]["detail"],
            "url": reverse("fabric:host_detail", args=[small.hosts[1].pk]),
        }
    ]
    assert "link" in _kinds(body)  # the link to host-b, by the name of its end


def test_limit_and_kind_narrow_the_answer(api_as: Any, admin_user: Any, small: SmallFabric) -> None:
    body = api_as(admin_user).get(URL, {"q": "gpu", "kind": "device", "limit": 3}).json()
    assert list(_kinds(body)) == ["device"]
    assert _kinds(body)["device"] == ["gpu-a-0", "gpu-a-1", "gpu-a-2"]
    assert body["results"][0]["more"] is True


def test_a_member_finds_only_their_own_and_no_internals(
    api_as: Any, alice: Any, small: SmallFabric, boxes: None
) -> None:
    client = api_as(alice)
    assert _kinds(client.get(URL, {"q": "train"}).json()) == {"composition": ["train-acme"]}
    assert _kinds(client.get(URL, {"q": "sw-a"}).json()) == {}
    refused = client.get(URL, {"q": "sw", "kind": "switch"})
    assert refused.status_code == 400
    assert refused.json()["field"] == "kind"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "q"),
        ({"q": " "}, "q"),
        ({"q": "x" * 101}, "q"),
        ({"q": "gpu\x00"}, "q"),  # PostgreSQL holds no NUL in text
        ({"q": "gpu", "limit": "0"}, "limit"),
        ({"q": "gpu", "limit": "many"}, "limit"),
        ({"q": "gpu", "kind": "planet"}, "kind"),
    ],
)
def test_bad_parameters_are_a_400_naming_them(
    api_as: Any, admin_user: Any, params: dict[str, str], field: str
) -> None:
    response = api_as(admin_user).get(URL, params)
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_anonymous_callers_are_refused(api: Any) -> None:
    assert api.get(URL, {"q": "gpu"}).status_code in (401, 403)
