"""POST /api/v1/compositions/{id}/heal/: the tenant's "heal now" for a degraded composition,
and the self_heal opt-in in the spec the API takes and returns."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from composer.services.health import compositions_react_to_health
from fabric.models import Device, FabricManager
from tests.composer.services.test_health import fault, gpu_of
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/compositions/"
SPEC = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}]}


@pytest.fixture
def ready(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> Composition:
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="a1")
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    return composition


@pytest.fixture
def degraded(synced: FabricManager, ready: Composition) -> Composition:
    gpu = gpu_of(ready)
    fault(synced, "device", gpu.name)
    compositions_react_to_health(
        unhealthy_device_ids=[gpu.pk], healthy_device_ids=[], reason="device failed"
    )
    ready.refresh_from_db()
    assert ready.state == CompositionState.DEGRADED
    return ready


def test_alice_heals_with_202_and_the_job_and_it_is_ready_again(
    degraded: Composition, alice: Any, api_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    lost = gpu_of(degraded)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(alice).post(f"{URL}{degraded.pk}/heal/")

    assert response.status_code == 202, response.content
    job = response.json()
    assert job["kind"] == "heal" and response["Location"] == job["url"]
    assert job["requested_by"] == "alice"
    degraded.refresh_from_db()
    assert degraded.state == CompositionState.READY
    assert gpu_of(degraded) != lost
    detail = api_as(alice).get(f"{URL}{degraded.pk}/").json()
    assert detail["job"] == job["url"]
    assert [h["to_state"] for h in detail["history"]][-3:] == ["degraded", "healing", "ready"]
    assert detail["history"][-2]["actor"] == "alice"
    assert {d["name"] for d in detail["placement"]["devices"]} == {gpu_of(degraded).name}


def test_a_second_heal_request_returns_the_pending_job(
    degraded: Composition, alice: Any, api_as: Any
) -> None:
    first = api_as(alice).post(f"{URL}{degraded.pk}/heal/")
    second = api_as(alice).post(f"{URL}{degraded.pk}/heal/")
    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["url"] == second.json()["url"]
    assert Job.objects.filter(kind=JobKind.HEAL).count() == 1


def test_bob_cannot_heal(degraded: Composition, bob: Any, api_as: Any) -> None:
    assert_error(api_as(bob).post(f"{URL}{degraded.pk}/heal/"), 403, "permission_denied")
    assert not Job.objects.filter(kind=JobKind.HEAL).exists()


def test_carol_gets_404(degraded: Composition, carol: Any, api_as: Any) -> None:
    assert_error(api_as(carol).post(f"{URL}{degraded.pk}/heal/"), 404, "not_found")
    assert not Job.objects.filter(kind=JobKind.HEAL).exists()


def test_healing_a_composition_that_is_not_degraded_is_409(
    ready: Composition, alice: Any, api_as: Any
) -> None:
    assert_error(
        api_as(alice).post(f"{URL}{ready.pk}/heal/"), 409, "invalid_transition", field="state"
    )
    assert not Job.objects.filter(kind=JobKind.HEAL).exists()


def test_the_spec_takes_and_returns_self_heal(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(
        URL, {"name": "sh", "spec": {**SPEC, "self_heal": True}}, format="json"
    )
    assert response.status_code == 202, response.content
    assert response.json()["spec"]["self_heal"] is True
    bad = api_as(alice).post(
        URL, {"name": "x", "spec": {**SPEC, "self_heal": "maybe"}}, format="json"
    )
    assert_error(bad, 400, "invalid_spec", field="spec.self_heal")


def test_the_no_spare_job_is_visible_with_its_reason(
    degraded: Composition, alice: Any, api_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    Device.objects.filter(kind="gpu", model="L40S 48GB", state="free").update(state="maintenance")
    with django_capture_on_commit_callbacks(execute=True):
        job = api_as(alice).post(f"{URL}{degraded.pk}/heal/").json()
    body = api_as(alice).get(job["url"]).json()
    assert body["status"] == JobStatus.FAILED and "No spare GPU of model L40S 48GB" in body["error"]
    detail = api_as(alice).get(f"{URL}{degraded.pk}/").json()
    assert detail["state"] == "degraded" and detail["failure_reason"].startswith("No spare")
