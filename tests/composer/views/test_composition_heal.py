"""The composition page's "Heal now" button and the request form's self-heal opt-in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from composer.services.health import compositions_react_to_health
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from tests.composer.services.test_health import fault, gpu_of

pytestmark = pytest.mark.django_db

HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}
SPEC = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}]}


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    inventory_sync(manager=sim_manager)
    return sim_manager


@pytest.fixture
def degraded(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> Composition:
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="a1")
    gpu = gpu_of(composition)
    fault(synced, "device", gpu.name)
    compositions_react_to_health(
        unhealthy_device_ids=[gpu.pk], healthy_device_ids=[], reason="device failed"
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.DEGRADED
    return composition


def page(client: Client, composition: Composition) -> bytes:
    response = client.get(reverse("composer:composition_detail", args=[composition.pk]))
    assert response.status_code == 200
    return bytes(response.content)


def test_alice_sees_heal_now_on_a_degraded_composition_and_it_heals(
    degraded: Composition,
    alice: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = client_as(alice)
    content = page(client, degraded)
    assert b'id="heal-button"' in content and b"device failed" in content
    url = reverse("composer:composition_heal", args=[degraded.pk])

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, **HTMX)

    assert response["HX-Redirect"] == reverse("composer:composition_detail", args=[degraded.pk])
    degraded.refresh_from_db()
    assert degraded.state == CompositionState.READY
    trail = degraded.state_changes.get(to_state="healing")
    assert trail.actor == alice and trail.remote_addr == "127.0.0.1"
    after = page(client, degraded)
    assert b'id="heal-button"' not in after and b"Self-heal" in after  # the plan says so


def test_heal_now_after_the_loss_cleared_makes_it_ready_with_nothing_to_replace(
    synced: FabricManager,
    degraded: Composition,
    alice: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The GPU is back (the tables say so) before any poll or reconcile moved the
    composition: *Heal now* makes it ready, audited as alice's, without a heal on the fabric."""
    fault(synced, "device", gpu_of(degraded).name, "recover")
    client = client_as(alice)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("composer:composition_heal", args=[degraded.pk]))

    assert response.status_code == 302
    degraded.refresh_from_db()
    assert degraded.state == CompositionState.READY and degraded.failure_reason == ""
    assert not degraded.state_changes.filter(to_state="healing").exists()
    change = degraded.state_changes.last()
    assert (change.from_state, change.to_state, change.actor) == ("degraded", "ready", alice)
    assert change.reason.startswith("Recovered (heal requested by alice)")
    job = Job.objects.get(kind=JobKind.HEAL, target_id=degraded.pk)
    assert job.status == JobStatus.SUCCEEDED and job.result["replaced"] == []
    assert "nothing to replace" in " ".join(job.log_lines.values_list("message", flat=True))
    content = page(client, degraded)
    assert b"is ready again: every device it lost is back" in content
    assert b'id="heal-button"' not in content


def test_bob_sees_no_button_and_gets_403_and_carol_404(
    degraded: Composition, bob: Any, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    url = reverse("composer:composition_heal", args=[degraded.pk])
    client = client_as(bob)
    assert b'id="heal-button"' not in page(client, degraded)
    assert client.post(url).status_code == 403
    assert client_as(carol).post(url).status_code == 404
    assert not Job.objects.filter(kind=JobKind.HEAL).exists()


def test_healing_a_ready_composition_says_why_not(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="r")
    client = client_as(alice)
    assert b'id="heal-button"' not in page(client, composition)
    response = client.post(reverse("composer:composition_heal", args=[composition.pk]))
    assert response.status_code == 302
    assert b"only a degraded composition can be healed" in page(client, composition)


def test_the_form_opts_in_to_self_heal(
    synced: FabricManager, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    form = client.get(reverse("composer:composition_create"))
    assert b'name="self_heal"' in form.content and b"Self-heal: replace failed" in form.content
    data = {"name": "sh", "item_0_kind": "gpu", "item_0_count": "1", "self_heal": "on"}
    client.post(reverse("composer:composition_create"), data)
    assert Composition.objects.get(name="sh").spec["self_heal"] is True
    client.post(reverse("composer:composition_create"), {**data, "name": "plain", "self_heal": ""})
    assert Composition.objects.get(name="plain").spec["self_heal"] is False
