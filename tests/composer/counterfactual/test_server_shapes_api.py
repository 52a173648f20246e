"""/api/v1/server-shapes/: operators keep the catalogue through the API, every write audited;
tenant members get 404, anonymous callers 401; a bad value is a 400 naming its field."""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import ServerShape
from fabric.models import ChangeRecord

pytestmark = pytest.mark.django_db

URL = "/api/v1/server-shapes/"
DGX = {"name": "DGX H100", "gpu_model": "H100", "gpus": 8, "cores": 112, "memory_gib": 2048}


def test_an_operator_adds_changes_and_deletes_a_shape_audited(api_as: Any, admin_user: Any) -> None:
    client = api_as(admin_user)
    created = client.post(URL, DGX, format="json", REMOTE_ADDR="10.0.0.7")
    assert created.status_code == 201, created.content
    body = created.json()
    assert {k: body[k] for k in DGX} == DGX and body["machines"] == 0
    changed = client.patch(body["url"], {"cores": 224}, format="json")
    assert changed.status_code == 200 and changed.json()["cores"] == 224
    assert client.delete(body["url"]).status_code == 204
    assert not ServerShape.objects.exists()
    trail = ChangeRecord.objects.filter(target_type="servershape").order_by("at", "id")
    assert [(r.action, r.actor, r.source) for r in trail] == [
        ("added", admin_user, "api"),
        ("changed", admin_user, "api"),
        ("deleted", admin_user, "api"),
    ]
    assert trail[0].remote_addr == "10.0.0.7"
    assert trail[1].changes == {"cores": [112, 224]}


def test_the_list_is_smallest_first_in_a_fixed_number_of_queries(
    api_as: Any, admin_user: Any, django_assert_max_num_queries: Any
) -> None:
    ServerShape.objects.create(name="big", gpus=8, cores=96, memory_gib=512)
    ServerShape.objects.create(name="cpu", gpus=0, cores=96, memory_gib=512)
    ServerShape.objects.create(name="small", gpus=2, cores=64, memory_gib=512)
    client = api_as(admin_user)
    with django_assert_max_num_queries(4):
        response = client.get(URL)
    assert [s["name"] for s in response.json()["results"]] == ["cpu", "small", "big"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cores": 0}, "cores"),
        ({"memory_gib": -1}, "memory_gib"),
        ({"gpus": 1000}, "gpus"),
        ({"gpus": "eight"}, "gpus"),
        ({"name": ""}, "name"),
        ({"name": "bad\u202ename"}, "name"),
    ],
)
def test_a_bad_value_is_a_400_naming_it(
    api_as: Any, admin_user: Any, change: dict[str, Any], field: str
) -> None:
    response = api_as(admin_user).post(URL, DGX | change, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not ServerShape.objects.exists()


def test_a_name_in_use_is_a_400_on_the_name(api_as: Any, admin_user: Any) -> None:
    ServerShape.objects.create(name="DGX H100", gpus=8, cores=112, memory_gib=2048)
    response = api_as(admin_user).post(URL, DGX, format="json")
    assert response.status_code == 400 and response.json()["field"] == "name"


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_tenant_members_get_404(who: str, persona: Any, api_as: Any) -> None:
    shape = ServerShape.objects.create(name="8-GPU", gpus=8, cores=64, memory_gib=512)
    client = api_as(persona(who))
    assert client.get(URL).status_code == 404
    assert client.get(f"{URL}{shape.pk}/").status_code == 404
    assert client.post(URL, DGX, format="json").status_code == 404
    assert client.delete(f"{URL}{shape.pk}/").status_code == 404
    assert ServerShape.objects.count() == 1


def test_anonymous_callers_get_401(api: Any) -> None:
    assert api.get(URL).status_code == 401
