"""Inventory sync through a real Celery worker process, broker and database (no eager mode).

In CI the worker talks to the real PostgreSQL and Redis; on a plain machine to the SQLite
test file and an embedded Redis.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.choices import TERMINAL_JOB_STATUSES, JobStatus
from composer.models import Job
from composer.services.jobs import inventory_sync_request
from fabric.choices import ChangeAction, DeviceState, Health
from fabric.models import ChangeRecord, Device, FabricManager
from fabric.simulator import store
from fabric.simulator.faults import fault_inject
from tests.fabric.simulated_world import simulated_manager

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def wait_for_job(job: Job, worker: Any, timeout_s: float = 60.0) -> Job:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in TERMINAL_JOB_STATUSES:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job.pk} still {job.status} after {timeout_s}s\n{worker.log()}")


@pytest.fixture
def manager() -> FabricManager:
    return simulated_manager(name="sim-worker", fabric="sim-worker")


def test_a_real_worker_learns_the_fabric_through_the_sync_job(
    celery_worker: Any, manager: FabricManager
) -> None:
    assert not Device.objects.filter(manager=manager).exists()

    job = wait_for_job(inventory_sync_request(manager=manager), celery_worker)

    assert job.status == JobStatus.SUCCEEDED, f"{job.error}\n{celery_worker.log()}"
    reported = store.fabric_get("sim-worker").elements.filter(kind="device").count()
    assert Device.objects.filter(manager=manager).count() == reported > 0
    assert job.progress_percent == 100
    assert job.log_lines.exists()
    assert job.started_at and job.finished_at and job.finished_at >= job.started_at
    assert "inventory_sync_task" in celery_worker.log()


def test_a_fault_injected_from_here_reaches_the_worker_through_shared_state(
    celery_worker: Any, manager: FabricManager
) -> None:
    wait_for_job(inventory_sync_request(manager=manager), celery_worker)
    gpu = Device.objects.filter(manager=manager, kind="gpu").order_by("name").first()
    assert gpu is not None and gpu.state == DeviceState.FREE

    fault_inject(manager=manager, target_type="device", target_id=gpu.pk, action="fail")
    job = wait_for_job(inventory_sync_request(manager=manager), celery_worker)

    assert job.status == JobStatus.SUCCEEDED, celery_worker.log()
    gpu.refresh_from_db()
    assert (gpu.state, gpu.health) == (DeviceState.FAILED, Health.CRITICAL)
    assert ChangeRecord.objects.filter(
        target_type="device", target_id=gpu.pk, action=ChangeAction.CHANGED
    ).exists()


def test_a_transient_driver_error_is_retried_by_the_worker_with_back_off(
    celery_worker: Any, manager: FabricManager
) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim-worker"), operation="discover", mode="transient", count=1
    )

    job = wait_for_job(inventory_sync_request(manager=manager), celery_worker, timeout_s=90)

    assert job.status == JobStatus.SUCCEEDED, f"{job.error}\n{celery_worker.log()}"
    assert job.attempts >= 2
    assert Device.objects.filter(manager=manager).exists()
