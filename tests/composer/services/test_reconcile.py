"""Reconciliation (rule 2): a compose or decompose whose worker died is finished by beat."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job
from composer.services.allocations import allocation_mark_bound
from composer.services.compositions import composition_request
from composer.services.reconcile import compositions_reconcile
from composer.tasks import jobs_lease_sweep_task, reconcile_task
from fabric.drivers.base import FabricDriver
from fabric.models import FabricManager
from tests.support.rollback import assert_rolled_back

pytestmark = pytest.mark.django_db

SPEC = {"items": [{"kind": "gpu", "count": 2}]}


def age(composition: Composition, job: Job, *, hours: int = 1) -> None:
    """As if the worker died an hour ago: nothing has touched either row since."""
    then = timezone.now() - timedelta(hours=hours)
    Composition.objects.filter(pk=composition.pk).update(updated_at=then)
    Job.objects.filter(pk=job.pk).update(updated_at=then, heartbeat_at=then, started_at=then)


@pytest.fixture
def half_bound(synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any) -> Composition:
    """A compose whose worker bound one of two GPUs and was killed: job RUNNING, composition
    BINDING, one binding on the manager."""
    composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="c1")
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    Composition.objects.filter(pk=composition.pk).update(state=CompositionState.BINDING)
    first = composition.allocations.order_by("pk").first()
    assert first is not None and composition.host is not None
    binding = driver.bind(device_id=first.device.external_id, host_id=composition.host.external_id)
    allocation_mark_bound(allocation=first, binding_id=binding.binding_id, host=composition.host)
    age(composition, job)
    return composition


def test_beat_resumes_a_compose_whose_worker_died_without_binding_again(
    half_bound: Composition, driver: FabricDriver
) -> None:
    assert len(driver.bindings()) == 1

    jobs_lease_sweep_task.delay()  # its lease expired: taken over, sent again, resumed

    half_bound.refresh_from_db()
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=half_bound.pk)
    assert (job.status, job.resumes, job.attempts) == (JobStatus.SUCCEEDED, 1, 1)
    assert half_bound.state == CompositionState.READY
    bound = set(half_bound.allocations.values_list("binding_id", flat=True))
    assert {b.binding_id for b in driver.bindings()} == bound and len(bound) == 2


def test_beat_rolls_back_a_compose_whose_job_ended_without_finishing_it(
    half_bound: Composition, driver: FabricDriver
) -> None:
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=half_bound.pk)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)

    reconcile_task.delay()  # the reconciler rolls its composition back

    assert_rolled_back(half_bound, driver)
    assert "ended without finishing it" in half_bound.failure_reason


def test_a_compose_still_being_worked_on_is_left_alone(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="c2")

    result = compositions_reconcile()

    assert result.rolled_back == []
    composition.refresh_from_db()
    assert composition.state not in (CompositionState.FAILED, CompositionState.RELEASED)
    assert Allocation.objects.filter(released_at__isnull=True).count() == 2
