"""POST /api/v1/fabric-managers/{id}/sync/: operators queue an inventory sync and get 202."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import JobKind
from composer.models import Job
from tests.factories.fabric import FabricManagerFactory
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager() -> Any:
    return FabricManagerFactory(name="fm-sync", settings={"fabric": "sync-test"})


def test_an_operator_starts_a_sync_and_gets_202_with_the_job(
    manager: Any, api_as: Any, admin_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api_as(admin_user).post(f"/api/v1/fabric-managers/{manager.pk}/sync/")
    assert response.status_code == 202, response.content
    body = response.json()
    job = Job.objects.get(pk=body["id"])
    assert job.kind == JobKind.INVENTORY_SYNC
    assert job.requested_by == admin_user
    assert job.tenant is None
    assert body["status"] == job.status
    assert body["url"].endswith(f"/api/v1/jobs/{job.pk}/")
    assert response["Location"] == body["url"]
    # The task is enqueued after commit, never before.
    assert len(callbacks) >= 1


def test_the_queued_job_is_visible_to_the_operator(
    manager: Any, api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    url = client.post(f"/api/v1/fabric-managers/{manager.pk}/sync/").json()["url"]
    assert client.get(url).status_code == 200


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_tenant_members_get_404_and_start_nothing(
    persona: str, manager: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    assert_error(client.post(f"/api/v1/fabric-managers/{manager.pk}/sync/"), 404, "not_found")
    assert not Job.objects.exists()


def test_anonymous_callers_get_401(manager: Any, api: Any) -> None:
    assert_error(api.post(f"/api/v1/fabric-managers/{manager.pk}/sync/"), 401, "not_authenticated")
    assert not Job.objects.exists()


@pytest.mark.parametrize("pk", ["999999", "abc"])
def test_an_unknown_manager_is_404(pk: str, api_as: Any, admin_user: Any) -> None:
    assert_error(api_as(admin_user).post(f"/api/v1/fabric-managers/{pk}/sync/"), 404, "not_found")
    assert not Job.objects.exists()


def test_get_is_not_allowed(manager: Any, api_as: Any, admin_user: Any) -> None:
    response = api_as(admin_user).get(f"/api/v1/fabric-managers/{manager.pk}/sync/")
    assert_error(response, 405, "method_not_allowed")
    assert "POST" in response["Allow"]


def test_asking_again_while_pending_returns_the_same_job(
    manager: Any, api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    first = client.post(f"/api/v1/fabric-managers/{manager.pk}/sync/")
    second = client.post(f"/api/v1/fabric-managers/{manager.pk}/sync/")
    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["id"] == second.json()["id"]
    assert Job.objects.count() == 1


def test_a_disabled_manager_is_400_naming_the_manager(api_as: Any, admin_user: Any) -> None:
    manager = FabricManagerFactory.create(name="fm-off", is_enabled=False)
    response = api_as(admin_user).post(f"/api/v1/fabric-managers/{manager.pk}/sync/")
    body = assert_error(response, 400, "composer_error", field="manager")
    assert "disabled" in body["detail"]
    assert not Job.objects.exists()


def test_the_sync_runs_and_its_devices_appear_in_the_api(
    api_as: Any, admin_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """End to end, nothing mocked: the task runs eagerly against the simulated manager."""
    from fabric.simulator.builder import WorldSpec, world_write

    world_write(
        fabric_name="api-e2e",
        spec=WorldSpec(
            racks=1,
            hosts=1,
            gpu_enclosures=1,
            gpus_per_enclosure=3,
            memory_boxes=0,
            jbofs=0,
            nics=0,
        ),
    )
    manager = FabricManagerFactory.create(
        name="fm-e2e", driver="simulated", settings={"fabric": "api-e2e"}
    )
    client = api_as(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/v1/fabric-managers/{manager.pk}/sync/")
    assert response.status_code == 202
    job = client.get(response["Location"]).json()
    assert job["status"] == "succeeded", job
    assert job["progress_percent"] == 100
    assert job["log_lines"]
    devices = client.get(f"/api/v1/devices/?manager={manager.pk}&kind=gpu").json()
    assert devices["count"] == 3
