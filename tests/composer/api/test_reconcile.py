"""/api/v1/reconcile/runs/: operators list runs with their findings and start one (202);
tenant members get 404, anonymous callers 401."""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import ReconcileRun, ReconcileStatus, ReconcileTrigger
from fabric.drivers.base import FabricDriver
from fabric.models import Device, FabricManager, Host

pytestmark = pytest.mark.django_db

URL = "/api/v1/reconcile/runs/"


def test_an_operator_reconciles_now_and_reads_what_was_repaired(
    synced: FabricManager,
    driver: FabricDriver,
    api_as: Any,
    admin_user: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    gpu = Device.objects.filter(kind="gpu").first()
    host = Host.objects.filter(manager=synced).first()
    assert gpu is not None and host is not None
    orphan = driver.bind(device_id=gpu.external_id, host_id=host.external_id)

    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(admin_user).post(URL, REMOTE_ADDR="10.0.0.7")

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["trigger"] == "operator" and body["requested_by"] == "admin"
    assert response["Location"] == body["url"]
    run = ReconcileRun.objects.get(pk=body["id"])
    assert run.status == ReconcileStatus.DONE  # ran once the request committed (eager)
    assert (run.requested_by, run.remote_addr) == (admin_user, "10.0.0.7")  # audited
    assert driver.bindings() == []

    detail = api_as(admin_user).get(body["url"]).json()
    [finding] = detail["findings"]
    assert finding["kind"] == "orphan" and finding["outcome"] == "repaired"
    assert finding["binding_id"] == orphan.binding_id and finding["device"] == gpu.name
    listed = api_as(admin_user).get(URL).json()
    assert [r["id"] for r in listed["results"]] == [run.pk]


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_tenant_members_get_404(who: str, persona: Any, api_as: Any) -> None:
    run = ReconcileRun.objects.create(trigger=ReconcileTrigger.SCHEDULE)
    client = api_as(persona(who))
    assert client.get(URL).status_code == 404
    assert client.get(f"{URL}{run.pk}/").status_code == 404
    assert client.post(URL).status_code == 404
    assert ReconcileRun.objects.count() == 1


def test_anonymous_gets_401(api: Any) -> None:
    assert api.get(URL).status_code == 401
    assert api.post(URL).status_code == 401


def test_the_list_takes_a_fixed_number_of_queries(
    api_as: Any, admin_user: Any, django_assert_max_num_queries: Any
) -> None:
    for _ in range(5):
        ReconcileRun.objects.create(trigger=ReconcileTrigger.SCHEDULE)
    with django_assert_max_num_queries(8):
        assert api_as(admin_user).get(URL).status_code == 200
