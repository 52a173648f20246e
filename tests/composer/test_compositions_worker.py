"""Compose and decompose through a real Celery worker process (no eager mode): the bindings
appear in the simulated fabric, and are gone after the decompose."""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.choices import TERMINAL_JOB_STATUSES, CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.compositions import composition_decompose, composition_request
from fabric.choices import DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def wait_for(job: Job, worker: Any, timeout_s: float = 60.0) -> Job:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in TERMINAL_JOB_STATUSES:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job.pk} still {job.status} after {timeout_s}s\n{worker.log()}")


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name="sim-compose", fabric="sim-compose")
    inventory_sync(manager=manager)
    return manager


def test_a_real_worker_composes_and_decomposes_through_the_simulated_fabric(
    celery_worker: Any, manager: FabricManager, acme: Any, alice: Any
) -> None:
    driver = get_driver(manager)
    composition = composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 2}], "memory_gib": 512},
        name="worker-c1",
    )
    job = wait_for(Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk), celery_worker)
    composition.refresh_from_db()

    assert job.status == JobStatus.SUCCEEDED, f"{job.error}\n{celery_worker.log()}"
    assert composition.state == CompositionState.READY
    bindings = driver.bindings()
    assert {b.binding_id for b in bindings} == set(
        composition.allocations.values_list("binding_id", flat=True)
    )
    assert {b.host_id for b in bindings} == {composition.host.external_id}
    assert "composition_compose_task" in celery_worker.log()

    job = wait_for(composition_decompose(composition=composition, actor=alice), celery_worker)
    composition = Composition.objects.get(pk=composition.pk)

    assert job.status == JobStatus.SUCCEEDED, f"{job.error}\n{celery_worker.log()}"
    assert composition.state == CompositionState.RELEASED
    assert driver.bindings() == []
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}
