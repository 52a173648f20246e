"""What the console shows of Kubernetes: the claim beside the composition it made (to the
tenant's members only), and the controllers' health on the fabric managers page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.kubernetes.controller import Controller
from composer.models import KubernetesClaim, KubernetesController
from fabric.models import FabricManager
from tests.support.kube import FakeKube

pytestmark = pytest.mark.django_db


def test_the_composition_page_names_the_claim_pod_and_node_to_its_tenant_only(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    carol: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    kube = FakeKube()
    kube.node_add("node-1", host="host-a-01")
    kube.namespace_add("ml", tenant="acme")
    Controller(kube).reconcile()
    device = next(d["name"] for s in kube.slices.values() for d in s["spec"]["devices"])
    pool = next(s["spec"]["pool"]["name"] for s in kube.slices.values()
                if device in [d["name"] for d in s["spec"]["devices"]])  # fmt: skip
    kube.claim_allocate("ml", "gpus", uid="u-1", node="node-1", devices=[(pool, device)])
    with django_capture_on_commit_callbacks(execute=True):
        Controller(kube).reconcile()
    composition = KubernetesClaim.objects.get(uid="u-1").composition
    assert composition is not None
    url = reverse("composer:composition_detail", args=[composition.pk])

    page = client_as(alice).get(url).content.decode()

    assert 'id="composition-kubernetes-claim"' in page
    assert "ml/gpus" in page and "trainer-0" in page and "node-1" in page
    assert "the Kubernetes controller" in page
    assert client_as(carol).get(url).status_code == 404


def test_the_managers_page_shows_each_controller_running_failing_or_stale(
    synced: FabricManager, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    url = reverse("fabric:manager_list")
    assert 'id="kubernetes-controllers"' not in client_as(admin_user).get(url).content.decode()
    now = timezone.now()
    KubernetesController.objects.create(
        identity="a", driver="fabric.composer.dev", is_leader=True, last_pass_at=now, pools=4
    )
    KubernetesController.objects.create(
        identity="b", driver="fabric.composer.dev", last_pass_at=now, last_error="Forbidden"
    )
    KubernetesController.objects.create(
        identity="c", driver="fabric.composer.dev", last_pass_at=now - timedelta(minutes=5)
    )

    page = client_as(admin_user).get(url).content.decode()

    assert 'id="kubernetes-controllers"' in page
    assert '<tr data-status="ok">' in page and '<tr data-status="failing">' in page
    assert '<tr data-status="stale">' in page and "Forbidden" in page
