"""Templates and quotas written through the API are audited: who, from where, each field
before and after, in the write's transaction; the audit page and API show a quota's entries
to operators and to its own tenant only."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from composer.models import ChangeAudience, Quota, Template
from fabric.models import ChangeRecord

pytestmark = pytest.mark.django_db

ADDR = "198.51.100.7"
SPEC = {"items": [{"kind": "gpu", "count": 2}]}


def _records(kind: str) -> list[ChangeRecord]:
    return list(ChangeRecord.objects.filter(target_type=kind).order_by("pk"))


def test_a_template_created_changed_and_deleted_through_the_api_is_audited(
    admin_user: Any, api_as: Any
) -> None:
    api = api_as(admin_user)
    body = {"name": "train-2", "slug": "train-2", "spec": SPEC}
    assert api.post("/api/v1/templates/", body, format="json", REMOTE_ADDR=ADDR).status_code == 201
    pk = Template.objects.get(slug="train-2").pk
    response = api.patch(
        "/api/v1/templates/train-2/", {"description": "Two GPUs"}, format="json", REMOTE_ADDR=ADDR
    )
    assert response.status_code == 200
    assert api.delete("/api/v1/templates/train-2/", REMOTE_ADDR=ADDR).status_code == 204

    added, changed, deleted = _records("template")
    for record in (added, changed, deleted):
        assert (record.target_id, record.target_label) == (pk, "train-2")
        assert (record.actor, record.source, record.remote_addr) == (admin_user, "api", ADDR)
    assert added.action == "added"
    assert added.changes["name"] == [None, "train-2"]
    assert added.changes["spec"][1]["items"][0]["count"] == 2
    assert changed.action == "changed"
    assert changed.changes == {"description": ["", "Two GPUs"]}
    assert deleted.action == "deleted"
    assert deleted.changes["name"] == ["train-2", None]
    assert deleted.changes["description"] == ["Two GPUs", None]
    assert not ChangeAudience.objects.exists()  # a template is no tenant's


def test_a_change_that_changes_nothing_leaves_no_entry(admin_user: Any, api_as: Any) -> None:
    Template.objects.create(name="t", slug="t", spec=SPEC)
    response = api_as(admin_user).patch("/api/v1/templates/t/", {"name": "t"}, format="json")
    assert response.status_code == 200
    assert _records("template") == []


def test_a_quota_change_through_the_api_is_audited_for_its_tenant(
    admin_user: Any, acme: Any, api_as: Any
) -> None:
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=8)
    response = api_as(admin_user).patch(
        f"/api/v1/quotas/{quota.pk}/", {"max_count": 16}, format="json", REMOTE_ADDR=ADDR
    )
    assert response.status_code == 200, response.content
    (record,) = _records("quota")
    assert record.action == "changed"
    assert record.changes == {"max_count": [8, 16]}
    assert (record.actor, record.source, record.remote_addr) == (admin_user, "api", ADDR)
    assert record.target_label == "Acme: GPU"
    assert list(ChangeAudience.objects.values_list("tenant", flat=True)) == [acme.pk]


def test_a_quota_created_and_deleted_through_the_api_is_audited(
    admin_user: Any, acme: Any, api_as: Any
) -> None:
    api = api_as(admin_user)
    body = {"tenant": "acme", "kind": "gpu", "max_count": 4}
    response = api.post("/api/v1/quotas/", body, format="json", REMOTE_ADDR=ADDR)
    assert response.status_code == 201, response.content
    pk = response.json()["id"]
    assert api.delete(f"/api/v1/quotas/{pk}/", REMOTE_ADDR=ADDR).status_code == 204
    added, deleted = _records("quota")
    assert added.changes["tenant"] == [None, "Acme"]
    assert added.changes["max_count"] == [None, 4]
    assert (deleted.action, deleted.target_id) == ("deleted", pk)
    assert deleted.changes["max_count"] == [4, None]
    assert ChangeAudience.objects.filter(tenant=acme).count() == 2


def test_a_quota_moved_to_another_tenant_is_for_operators_only(
    admin_user: Any, acme: Any, globex: Any, api_as: Any
) -> None:
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=8)
    response = api_as(admin_user).patch(
        f"/api/v1/quotas/{quota.pk}/", {"tenant": "globex"}, format="json"
    )
    assert response.status_code == 200
    (record,) = _records("quota")
    assert record.changes["tenant"] == ["Acme", "Globex"]
    assert not ChangeAudience.objects.exists()


def test_a_members_refused_write_leaves_no_entry(alice: Any, acme: Any, api_as: Any) -> None:
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=8)
    response = api_as(alice).patch(f"/api/v1/quotas/{quota.pk}/", {"max_count": 99}, format="json")
    assert response.status_code == 403
    assert _records("quota") == []


@pytest.fixture
def settings_changes(admin_user: Any, acme: Any, globex: Any, api_as: Any) -> dict[str, str]:
    """A template created, and a quota of each tenant changed, through the API."""
    api = api_as(admin_user)
    api.post("/api/v1/templates/", {"name": "t", "slug": "t", "spec": SPEC}, format="json")
    keys = {"template": f"change-{ChangeRecord.objects.get(target_type='template').pk}"}
    for tenant in (acme, globex):
        quota = Quota.objects.create(tenant=tenant, kind="gpu", max_count=8)
        api.patch(f"/api/v1/quotas/{quota.pk}/", {"max_count": 9}, format="json", REMOTE_ADDR=ADDR)
        keys[tenant.slug] = f"change-{ChangeRecord.objects.latest('pk').pk}"
    return keys


@pytest.mark.parametrize(
    ("name", "visible"),
    [
        ("admin_user", {"template", "acme", "globex"}),
        ("alice", {"acme"}),
        ("bob", {"acme"}),
        ("carol", {"globex"}),
    ],
)
def test_the_audit_api_shows_a_quotas_entries_to_operators_and_its_tenant_only(
    settings_changes: dict[str, str], name: str, visible: set[str], persona: Any, api_as: Any
) -> None:
    user = persona(name)
    response = api_as(user).get("/api/v1/audit/")
    assert response.status_code == 200
    entries = {e["id"]: e for e in response.json()["results"]}
    assert set(entries) == {settings_changes[k] for k in visible}
    for entry in entries.values():
        if entry["kind"] == "quota":
            assert entry["changes"] == [{"field": "max_count", "before": 8, "after": 9}]
            assert entry["remote_addr"] == (ADDR if name == "admin_user" else None)
        if name != "admin_user":
            assert entry["remote_addr"] is None


@pytest.mark.parametrize(
    ("name", "kind", "status"),
    [("alice", "quota", 200), ("alice", "template", 400), ("carol", "tenant", 400)],
)
def test_members_may_filter_by_quota_but_not_by_the_operators_kinds(
    settings_changes: dict[str, str], name: str, kind: str, status: int, persona: Any, api_as: Any
) -> None:
    response = api_as(persona(name)).get("/api/v1/audit/", {"kind": kind})
    assert response.status_code == status


def test_the_audit_page_shows_a_quotas_entries_to_its_tenant_only(
    settings_changes: dict[str, str], alice: Any, carol: Any, client_as: Any
) -> None:
    keys = {e.key for e in client_as(alice).get("/audit/", {"kind": "quota"}).context["entries"]}
    assert keys == {settings_changes["acme"]}
    page = client_as(carol).get("/audit/")
    assert {e.key for e in page.context["entries"]} == {settings_changes["globex"]}
    assert "Acme" not in page.content.decode()


def test_a_members_audit_page_costs_the_same_with_quota_entries(
    settings_changes: dict[str, str], alice: Any, acme: Any, client_as: Any
) -> None:
    client = client_as(alice)
    client.get("/audit/")
    with CaptureQueriesContext(connection) as few:
        client.get("/audit/")
    quota = Quota.objects.get(tenant=acme)
    for i in range(5):
        Quota.objects.filter(pk=quota.pk).update(max_count=i)
        ChangeAudience.objects.create(
            record=ChangeRecord.objects.create(
                target_type="quota", target_id=quota.pk, target_label="Acme: GPU", action="changed"
            ),
            tenant=acme,
        )
    with CaptureQueriesContext(connection) as many:
        response = client.get("/audit/")
    assert len(response.context["entries"]) == 6
    assert len(many) == len(few)
