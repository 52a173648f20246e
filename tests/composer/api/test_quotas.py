"""/api/v1/quotas/: members read their tenants' quotas with usage; operators all, and write."""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import Quota
from composer.services.compositions import composition_request
from tests.support.api import assert_error, count_queries, results

pytestmark = pytest.mark.django_db

URL = "/api/v1/quotas/"


@pytest.fixture
def quotas(acme: Any, globex: Any) -> dict[str, Quota]:
    return {
        "acme_gpu": Quota.objects.create(tenant=acme, kind="gpu", max_count=8),
        "acme_mem": Quota.objects.create(tenant=acme, kind="cxl_memory", max_memory_gib=512),
        "globex_gpu": Quota.objects.create(tenant=globex, kind="gpu", max_count=2),
    }


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("admin_user", {"acme_gpu", "acme_mem", "globex_gpu"}),
        ("alice", {"acme_gpu", "acme_mem"}),
        ("bob", {"acme_gpu", "acme_mem"}),
        ("carol", {"globex_gpu"}),
    ],
)
def test_each_persona_sees_only_its_tenants_quotas(
    persona: str,
    visible: set[str],
    quotas: dict[str, Quota],
    api_as: Any,
    request: pytest.FixtureRequest,
) -> None:
    rows = results(api_as(request.getfixturevalue(persona)).get(URL))
    assert {row["id"] for row in rows} == {quotas[name].pk for name in visible}


def test_usage_counts_what_the_tenants_compositions_hold(
    synced: Any, quotas: dict[str, Quota], acme: Any, alice: Any, api_as: Any
) -> None:
    composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 2}], "memory_gib": 256},
        name="c",
    )
    rows = {row["kind"]: row for row in results(api_as(alice).get(URL))}
    assert rows["gpu"]["usage"] == {"count": 2, "memory_gib": 0, "storage_tb": 0.0}
    assert rows["cxl_memory"]["usage"]["memory_gib"] == 256
    assert rows["gpu"]["label"] == "GPU"
    detail = api_as(alice).get(f"{URL}{quotas['acme_gpu'].pk}/").json()
    assert detail["usage"]["count"] == 2


def test_carol_gets_404_for_acmes_quota_even_when_writing(
    quotas: dict[str, Quota], carol: Any, api_as: Any
) -> None:
    pk = quotas["acme_gpu"].pk
    assert_error(api_as(carol).get(f"{URL}{pk}/"), 404, "not_found")
    assert_error(
        api_as(carol).patch(f"{URL}{pk}/", {"max_count": 99}, format="json"), 404, "not_found"
    )
    assert Quota.objects.get(pk=pk).max_count == 8


@pytest.mark.parametrize("persona", ["alice", "bob"])
def test_members_may_not_write_quotas(
    persona: str, quotas: dict[str, Quota], api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    pk = quotas["acme_gpu"].pk
    assert_error(
        client.post(URL, {"tenant": "acme", "kind": "nvme", "max_storage_tb": 9}, format="json"),
        403,
        "permission_denied",
    )
    assert_error(
        client.patch(f"{URL}{pk}/", {"max_count": 99}, format="json"), 403, "permission_denied"
    )
    assert_error(client.delete(f"{URL}{pk}/"), 403, "permission_denied")
    assert Quota.objects.count() == 3 and Quota.objects.get(pk=pk).max_count == 8


def test_operators_create_change_and_delete_quotas(
    quotas: dict[str, Quota], admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    response = client.post(
        URL, {"tenant": "globex", "kind": "nvme", "max_storage_tb": 8}, format="json"
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["tenant"] == "globex" and created["usage"]["storage_tb"] == 0.0
    response = client.patch(f"{URL}{created['id']}/", {"max_storage_tb": 4}, format="json")
    assert response.status_code == 200 and response.json()["max_storage_tb"] == 4
    assert client.delete(f"{URL}{created['id']}/").status_code == 204


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tenant": "acme", "kind": "gpu", "max_memory_gib": 5}, "max_memory_gib"),
        ({"tenant": "acme", "kind": "nvme", "max_count": -1}, "max_count"),
        ({"tenant": "nope", "kind": "gpu", "max_count": 1}, "tenant"),
        ({"tenant": "acme", "kind": "banana"}, "kind"),
    ],
)
def test_bad_quotas_name_the_field(
    quotas: dict[str, Quota], admin_user: Any, api_as: Any, body: dict[str, Any], field: str
) -> None:
    assert_error(api_as(admin_user).post(URL, body, format="json"), 400, "invalid", field=field)
    assert Quota.objects.count() == 3


def test_a_second_quota_of_the_same_kind_and_model_is_refused(
    quotas: dict[str, Quota], admin_user: Any, api_as: Any
) -> None:
    response = api_as(admin_user).post(
        URL, {"tenant": "acme", "kind": "gpu", "max_count": 3}, format="json"
    )
    assert response.status_code == 400, response.content
    assert Quota.objects.count() == 3


def test_changing_a_quota_into_a_duplicate_is_refused_not_a_500(
    quotas: dict[str, Quota], api_as: Any, admin_user: Any
) -> None:
    """A partial update names no tenant; the quota's own tenant still counts for uniqueness."""
    url = f"{URL}{quotas['acme_mem'].pk}/"
    body = {"kind": "gpu", "max_count": 0, "max_memory_gib": None}
    assert_error(api_as(admin_user).patch(url, body), 400, "invalid", field="kind")
    assert Quota.objects.filter(tenant=quotas["acme_gpu"].tenant, kind="gpu").count() == 1


def test_the_quota_list_costs_the_same_queries_for_few_and_many(
    quotas: dict[str, Quota], acme: Any, admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    few = count_queries(lambda: client.get(URL))
    for model in ("a", "b", "c"):
        Quota.objects.create(tenant=acme, kind="gpu", model=model, max_count=1)
    assert count_queries(lambda: client.get(URL)) == few


def test_usage_counts_a_gpu_share_as_its_fraction_as_the_quota_check_does(
    synced: Any, acme: Any, alice: Any, api_as: Any
) -> None:
    """A 250/1000 share is a quarter of a GPU in the API too, not rounded down to none."""
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=2)
    composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 1}, {"kind": "gpu", "share": 250}]},
        name="c",
    )
    usage = api_as(alice).get(f"{URL}{quota.pk}/").json()["usage"]
    assert usage == {"count": 1.25, "memory_gib": 0, "storage_tb": 0.0}
    schema = api_as(alice).get("/api/schema/?format=json").json()
    assert schema["components"]["schemas"]["QuotaUsage"]["properties"]["count"]["type"] == "number"


def test_a_refused_change_leaves_the_quota_as_it_was(quotas: dict[str, Quota]) -> None:
    """The check runs on a copy: a refused change never touches the quota object (which the
    audit and the answer read)."""
    from rest_framework.test import APIRequestFactory

    from composer.api.serializers.templates import QuotaSerializer

    quota = quotas["acme_mem"]  # made a second GPU quota of Acme's: refused by the model
    before = (quota.kind, quota.max_count, quota.max_memory_gib, quota.max_storage_tb)
    serializer = QuotaSerializer(
        instance=quota,
        data={"kind": "gpu", "max_count": 99},
        partial=True,
        context={"request": APIRequestFactory().get("/")},
    )
    assert not serializer.is_valid()
    assert "kind" in serializer.errors
    assert (quota.kind, quota.max_count, quota.max_memory_gib, quota.max_storage_tb) == before
