"""GET /api/v1/audit/: the audit page's filters, order, paging and scoping, as JSON."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from composer.models import StateChange
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from tests.support.audit import (
    AuditWorld,
    keys_for_acme,
    keys_for_globex,
    keys_for_operator,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/audit/"


def _ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [entry["id"] for entry in response.json()["results"]]


def test_anonymous_gets_401(api: Any) -> None:
    assert api.get(URL).status_code == 401


def test_operator_reads_every_trail_newest_first_with_before_and_after(
    audit_trail: AuditWorld, admin_user: Any, api_as: Any
) -> None:
    response = api_as(admin_user).get(URL)
    assert _ids(response) == keys_for_operator(audit_trail)
    body = response.json()
    assert body["count"] == len(keys_for_operator(audit_trail))
    device = next(e for e in body["results"] if e["kind"] == "device")
    assert device == {
        "id": f"change-{audit_trail.device_change.pk}",
        "at": "2026-11-30T09:05:00+00:00",
        "kind": "device",
        "object_id": 4242,
        "label": "gpu-a-01-1",
        "action": "Changed",
        "changes": [{"field": "state", "before": "free", "after": "maintenance"}],
        "message": "Put into maintenance for a fan swap",
        "who": "admin",
        "source": "console",
        "remote_addr": "192.0.2.7",
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [("alice", keys_for_acme), ("bob", keys_for_acme), ("carol", keys_for_globex)],
)
def test_members_read_only_their_tenants_compositions_and_jobs(
    audit_trail: AuditWorld, name: str, expected: Any, persona: Any, api_as: Any
) -> None:
    response = api_as(persona(name)).get(URL)
    assert _ids(response) == expected(audit_trail)
    for entry in response.json()["results"]:
        assert entry["kind"] in ("composition", "job")
        assert entry["remote_addr"] is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"who": "carol"}, lambda w: [f"state-{w.globex_requested.pk}"]),
        ({"kind": "job"}, lambda w: [f"job-{w.sync_job.pk}", f"job-{w.acme_job.pk}"]),
        (
            {"label": "acme"},
            lambda w: [
                f"state-{w.acme_placing.pk}",
                f"job-{w.acme_job.pk}",
                f"state-{w.acme_requested.pk}",
            ],
        ),
        (
            {"since": "2026-11-30T09:06:00Z"},
            lambda w: [f"reconcile-{w.reconcile.pk}", f"job-{w.sync_job.pk}"],
        ),
        ({"until": "2026-11-30T09:01:00Z"}, lambda w: [f"state-{w.acme_requested.pk}"]),
        ({"source": "api"}, lambda w: [f"state-{w.globex_requested.pk}"]),
        ({"who": "", "kind": ""}, keys_for_operator),
    ],
)
def test_filters(
    audit_trail: AuditWorld, admin_user: Any, api_as: Any, query: dict[str, str], expected: Any
) -> None:
    assert _ids(api_as(admin_user).get(URL, query)) == expected(audit_trail)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"kind": "spaceship"}, "kind"),
        ({"since": "not a time"}, "since"),
        ({"until": "2026-13-45"}, "until"),
        ({"since": "2026-11-30T10:00:00Z", "until": "2026-11-30T09:00:00Z"}, "until"),
        ({"who": "a\x00b"}, "who"),
        ({"label": "x" * 201}, "label"),
        ({"source": "x" * 101}, "source"),
        ({"page": "0"}, "page"),
        ({"page_size": "501"}, "page_size"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(
    audit_trail: AuditWorld, admin_user: Any, api_as: Any, query: dict[str, str], field: str
) -> None:
    response = api_as(admin_user).get(URL, query)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert response.json()["field"] == field


def test_a_member_asking_for_a_fabric_kind_gets_a_400_not_the_rows(
    audit_trail: AuditWorld, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).get(URL, {"kind": "device"})
    assert response.status_code == 400
    assert response.json()["field"] == "kind"
    assert "gpu-a-01-1" not in response.content.decode()


def test_a_member_cannot_match_on_addresses(
    audit_trail: AuditWorld, alice: Any, api_as: Any
) -> None:
    assert _ids(api_as(alice).get(URL, {"source": "10.0.0"})) == []


def test_pages_and_a_constant_query_count(
    audit_trail: AuditWorld, admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    first = client.get(URL, {"page_size": "3"})
    assert _ids(first) == keys_for_operator(audit_trail)[:3]
    assert "page=2" in first.json()["next"]
    with CaptureQueriesContext(connection) as few:
        _ids(client.get(URL))
    older = audit_trail.at(-60)
    ChangeRecord.objects.bulk_create(
        ChangeRecord(target_type="link", target_id=i, action=ChangeAction.CHANGED, at=older)
        for i in range(70)
    )
    StateChange.objects.bulk_create(
        StateChange(composition=audit_trail.globex_box, to_state="requested") for _ in range(30)
    )
    ChangeRecord.objects.filter(target_type="link").update(at=older)
    with CaptureQueriesContext(connection) as many:
        assert len(_ids(client.get(URL))) == 50
    assert len(many) == len(few)


def test_the_schema_documents_the_endpoint_and_its_filters(api: Any) -> None:
    schema = api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"][URL]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"who", "kind", "label", "since", "until", "source", "page", "page_size"} <= names
    assert "400" in operation["responses"]
