"""The Reconcile page: operators see runs, findings and what is being cleaned up, and can
reconcile now; tenant members get 404."""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import (
    Composition,
    FindingKind,
    FindingOutcome,
    ReconcileFinding,
    ReconcileRun,
    ReconcileTrigger,
    UnbindPending,
)
from fabric.models import Device, FabricManager, Host

pytestmark = pytest.mark.django_db

URL = "/reconcile/"


@pytest.fixture
def gpu_and_host(synced: FabricManager) -> tuple[Device, Host]:
    gpu = Device.objects.filter(kind="gpu").first()
    host = Host.objects.filter(manager=synced).first()
    assert gpu is not None and host is not None
    return gpu, host


def test_the_page_renders_findings_and_what_is_being_cleaned_up(
    synced: FabricManager, gpu_and_host: tuple[Device, Host], client_as: Any, admin_user: Any
) -> None:
    gpu, host = gpu_and_host
    run = ReconcileRun.objects.create(trigger=ReconcileTrigger.SCHEDULE, status="done")
    ReconcileFinding.objects.create(
        run=run,
        kind=FindingKind.ORPHAN,
        outcome=FindingOutcome.REPAIRED,
        manager=synced,
        device=gpu,
        host=host,
        binding_id="b-orphan",
        action=f"Unbound {gpu.name} from {host.name}: no composition claims that binding",
    )
    UnbindPending.objects.create(
        device=gpu, host=host, binding_id="b-stuck", attempts=4, last_error="manager busy"
    )

    response = client_as(admin_user).get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-kind="orphan"' in html and "b-orphan" in html and "Repaired" in html
    assert "b-stuck" in html and "manager busy" in html and "Being cleaned up" in html
    assert "Reconcile now" in html


def test_reconcile_now_queues_a_run_and_shows_the_page(
    synced: FabricManager,
    client_as: Any,
    admin_user: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(admin_user).post("/reconcile/run/")

    assert response.status_code == 302 and response["Location"] == URL
    run = ReconcileRun.objects.get()
    assert (run.trigger, run.requested_by, run.status) == ("operator", admin_user, "done")


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_tenant_members_get_404(who: str, persona: Any, client_as: Any) -> None:
    client = client_as(persona(who))
    assert client.get(URL).status_code == 404
    assert client.post("/reconcile/run/").status_code == 404
    assert not ReconcileRun.objects.exists()


def test_the_fabric_menu_links_the_page_for_operators_only(
    client_as: Any, admin_user: Any, alice: Any
) -> None:
    assert URL in client_as(admin_user).get("/").content.decode()
    assert URL not in client_as(alice).get("/").content.decode()


def test_the_device_page_says_a_device_is_being_cleaned_up(
    gpu_and_host: tuple[Device, Host], client_as: Any, admin_user: Any
) -> None:
    gpu, host = gpu_and_host
    UnbindPending.objects.create(device=gpu, host=host, binding_id="b-stuck")

    html = client_as(admin_user).get(f"/fabric/devices/{gpu.pk}/").content.decode()

    assert f"Being cleaned up: still bound to {host.name}" in html


def test_the_tenant_reads_that_a_device_is_being_cleaned_up_without_fabric_internals(
    gpu_and_host: tuple[Device, Host], acme: Any, client_as: Any, alice: Any
) -> None:
    gpu, host = gpu_and_host
    composition = Composition.objects.create(
        tenant=acme, name="gone-wrong", spec={}, state="failed", host=host
    )
    UnbindPending.objects.create(
        device=gpu, host=host, binding_id="b-secret", composition=composition
    )

    html = client_as(alice).get(f"/compositions/{composition.pk}/").content.decode()

    assert f"Device {gpu.name} could not be unbound yet" in html
    assert "b-secret" not in html
