"""POST /api/v1/compositions/{id}/resize/ and …/resize/preview/: the plan first, then the
job; bad input named by its entry, 409 when not ready, 422 when nothing fits; tenancy as
everywhere (read-only members preview only, outsiders 404)."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job, Quota
from fabric.models import FabricManager
from tests.composer.services.test_health import compose
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/compositions/"
ONE_H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}
ADD_GPU = {"add": [{"kind": "gpu", "count": 1}]}


@pytest.fixture
def ready(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return compose(acme, alice, ONE_H100, name="a1")


def test_alice_previews_then_resizes_and_gets_202_with_the_job(
    ready: Composition, alice: Any, api_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api_as(alice)
    preview = client.post(f"{URL}{ready.pk}/resize/preview/", ADD_GPU, format="json")
    assert preview.status_code == 200, preview.content
    plan = preview.json()
    assert plan["ok"] and len(plan["devices"]) == 1 and plan["explanation"]
    assert plan["remove"] == [] and plan["spec"]["items"][1]["model"] is None
    assert "device" not in plan["devices"][0]  # no snapshot ids for anyone
    assert not Job.objects.filter(kind=JobKind.RESIZE).exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{URL}{ready.pk}/resize/", ADD_GPU, format="json")

    assert response.status_code == 202, response.content
    job = response.json()
    assert job["kind"] == "resize" and response["Location"] == job["url"]
    assert Job.objects.get(pk=job["id"]).status == JobStatus.SUCCEEDED
    detail = client.get(f"{URL}{ready.pk}/").json()
    assert detail["state"] == "ready" and len(detail["allocations"]) == 2
    assert [h["to_state"] for h in detail["history"]][-2:] == ["resizing", "ready"]
    assert detail["history"][-2]["actor"] == "alice" and detail["history"][-2]["source"] == "api"


def test_a_removal_is_named_by_its_allocation_id(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    api_as: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, {**ONE_H100, "memory_gib": 64})
    memory = composition.allocations.get(gib__isnull=False)
    body = {"remove": [memory.pk]}

    plan = api_as(alice).post(f"{URL}{composition.pk}/resize/preview/", body, format="json")
    assert plan.json()["remove"] == [
        {
            "allocation": memory.pk,
            "name": memory.device.name,
            "kind": "cxl_memory",
            "gib": 64,
            "share": None,
        }
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(alice).post(f"{URL}{composition.pk}/resize/", body, format="json")

    assert response.status_code == 202
    composition.refresh_from_db()
    assert (
        composition.spec["memory_gib"] == 0
        and composition.allocations.filter(released_at__isnull=True).count() == 1
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "add"),
        ({"add": [{"kind": "gpu", "count": "2"}]}, "add[0].count"),
        ({"add": [{"kind": "gpu", "count": 0}]}, "add[0].count"),
        ({"add": [{"kind": "cxl_memory", "gib": 1.5}]}, "add[0].gib"),
        ({"add": [{"kind": "gpu", "colour": "red"}]}, "add[0]"),
        ({"add": {"kind": "gpu"}}, "add"),
        ({"remove": ["12"]}, "remove[0]"),
        ({"remove": [123456789]}, "remove[0]"),
    ],
)
def test_bad_input_answers_400_naming_the_entry(
    ready: Composition, alice: Any, api_as: Any, body: dict[str, Any], field: str
) -> None:
    for path in ("resize/preview/", "resize/"):
        response = api_as(alice).post(f"{URL}{ready.pk}/{path}", body, format="json")
        assert_error(response, 400, "invalid_spec", field=field)
    ready.refresh_from_db()
    assert ready.state == CompositionState.READY


def test_removing_everything_answers_400_on_remove(
    ready: Composition, alice: Any, api_as: Any
) -> None:
    body = {"remove": [ready.allocations.get().pk]}
    response = api_as(alice).post(f"{URL}{ready.pk}/resize/", body, format="json")
    assert "decompose" in assert_error(response, 400, "invalid_spec", field="remove")["detail"]


def test_a_composition_that_is_not_ready_answers_409_on_state(
    ready: Composition, alice: Any, api_as: Any
) -> None:
    assert api_as(alice).post(f"{URL}{ready.pk}/resize/", ADD_GPU, format="json").status_code == 202
    ready.refresh_from_db()
    assert ready.state == CompositionState.RESIZING  # nothing ran its job

    for path in ("resize/preview/", "resize/", "decompose/"):
        response = api_as(alice).post(f"{URL}{ready.pk}/{path}", ADD_GPU, format="json")
        code = "composition_busy" if path == "decompose/" else "invalid_transition"
        assert_error(response, 409, code, field="state")


def test_over_a_quota_answers_409_naming_the_entry(
    ready: Composition, acme: Any, alice: Any, api_as: Any
) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=1)
    response = api_as(alice).post(f"{URL}{ready.pk}/resize/", ADD_GPU, format="json")
    assert (
        "GPU quota" in assert_error(response, 409, "quota_exceeded", field="add[0].count")["detail"]
    )


def test_what_does_not_fit_answers_422_with_the_rejection_and_claims_nothing(
    synced: FabricManager, acme: Any, alice: Any, api_as: Any
) -> None:
    spread = compose(acme, alice, {"items": [{"kind": "gpu", "count": 2}], "policy": "enclosure"})
    response = api_as(alice).post(
        f"{URL}{spread.pk}/resize/", {"add": [{"kind": "gpu"}]}, format="json"
    )
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["code"] == "placement_rejected" and body["detail"] == body["rejection"]["message"]
    assert body["rejection"]["ok"] is False and "failure-domain" in body["rejection"]["nearest"]
    spread.refresh_from_db()
    assert spread.state == CompositionState.READY and spread.allocations.count() == 2


def test_bob_may_preview_but_not_resize_and_carol_sees_nothing(
    ready: Composition, bob: Any, carol: Any, api_as: Any
) -> None:
    preview = api_as(bob).post(f"{URL}{ready.pk}/resize/preview/", ADD_GPU, format="json")
    assert preview.status_code == 200
    resize = api_as(bob).post(f"{URL}{ready.pk}/resize/", ADD_GPU, format="json")
    assert_error(resize, 403, "permission_denied")
    for path in ("resize/preview/", "resize/"):
        response = api_as(carol).post(f"{URL}{ready.pk}/{path}", ADD_GPU, format="json")
        assert_error(response, 404, "not_found")
    assert not Job.objects.filter(kind=JobKind.RESIZE).exists()


def test_an_operator_resizes_any_tenants_composition(
    ready: Composition, admin_user: Any, api_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(admin_user).post(f"{URL}{ready.pk}/resize/", ADD_GPU, format="json")
    assert response.status_code == 202
    ready.refresh_from_db()
    assert ready.state == CompositionState.READY
    assert ready.state_changes.get(to_state="resizing").actor == admin_user


def test_the_schema_documents_both_operations_with_examples(api_as: Any, alice: Any) -> None:
    schema = api_as(alice).get("/api/schema/?format=json").json()
    for path in ("/api/v1/compositions/{id}/resize/", "/api/v1/compositions/{id}/resize/preview/"):
        operation = schema["paths"][path]["post"]
        content = operation["requestBody"]["content"]["application/json"]
        assert content["examples"], path
        assert {"400", "409"} <= set(operation["responses"]), path
    resize = schema["paths"]["/api/v1/compositions/{id}/resize/"]["post"]
    assert {"202", "422"} <= set(resize["responses"])
    entry = schema["components"]["schemas"]["ResizeRequestRequest"]["properties"]["add"]["items"]
    assert "cxl_memory" in entry["properties"]["kind"]["enum"] and "gib" in entry["properties"]


def test_the_resize_is_in_the_audit_trail_of_its_tenant_only(
    ready: Composition,
    alice: Any,
    carol: Any,
    admin_user: Any,
    api_as: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        api_as(alice).post(f"{URL}{ready.pk}/resize/", ADD_GPU, format="json")

    entries = api_as(alice).get("/api/v1/audit/?page_size=100").json()["results"]
    moves = [e for e in entries if e["kind"] == "composition" and e["object_id"] == ready.pk]
    resizing = next(e for e in moves if e["changes"][0]["after"] == "resizing")
    assert resizing["who"] == "alice" and resizing["source"] == "api"
    assert resizing["message"].startswith("Resize requested: add 1 GPU")
    assert resizing["remote_addr"] is None  # addresses are the operators' to read
    back = next(e for e in moves if e["changes"][0]["before"] == "resizing")
    assert back["changes"][0]["after"] == "ready" and "Resized: added " in back["message"]
    assert any(e["kind"] == "job" and e["label"].endswith("Resize: a1") for e in entries)
    operator = api_as(admin_user).get("/api/v1/audit/?page_size=100").json()["results"]
    assert any(e.get("remote_addr") == "127.0.0.1" for e in operator if e["kind"] == "composition")
    others = api_as(carol).get("/api/v1/audit/?page_size=100").json()["results"]
    assert not [e for e in others if e.get("object_id") == ready.pk]
