"""Celery tasks, run eagerly against the simulated fabric (a real worker: the lead's test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from composer import celery_app
from composer.choices import JobStatus
from composer.models import Job
from composer.services.jobs import inventory_sync_job_create
from composer.tasks import (
    SYNC_MAX_RETRIES,
    failure_domains_recount_task,
    inventory_sync_all_task,
    inventory_sync_task,
)
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager, FailureDomain
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.topology.radius import RADIUS_VERSION


@pytest.fixture
def job(sim_manager: FabricManager) -> Job:
    return inventory_sync_job_create(manager=sim_manager)


@pytest.fixture
def eager_retries() -> Iterator[None]:
    """Eager mode runs a retry at once, but only when it does not re-raise the Retry signal
    (which a real worker turns into a delayed redelivery)."""
    before = celery_app.conf.task_eager_propagates
    celery_app.conf.update(task_eager_propagates=False)
    yield
    celery_app.conf.update(task_eager_propagates=before)


def _fail_discover(mode: str, count: int) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="discover", mode=mode, count=count
    )


def test_the_sync_task_synchronises_the_fabric_and_succeeds(job: Job) -> None:
    inventory_sync_task.delay(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.result["kinds"]["devices"]["added"] == Device.objects.count() > 0
    assert job.log_lines.filter(message__startswith="discovered sim").exists()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}


@pytest.mark.usefixtures("eager_retries")
def test_a_transient_driver_error_is_retried_and_the_job_then_succeeds(job: Job) -> None:
    _fail_discover("transient", 2)
    inventory_sync_task.delay(job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 3)
    assert job.log_lines.filter(level="WARNING", message__contains="will retry").count() == 2


@pytest.mark.usefixtures("eager_retries")
def test_a_transient_error_that_outlasts_the_retries_fails_the_job(job: Job) -> None:
    _fail_discover("timeout", SYNC_MAX_RETRIES + 5)
    inventory_sync_task.delay(job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, SYNC_MAX_RETRIES + 1)
    assert "timed out" in job.error


def test_a_permanent_driver_error_fails_the_job_at_once(
    job: Job, sim_manager: FabricManager
) -> None:
    _fail_discover("permanent", 1)
    inventory_sync_task.delay(job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    sim_manager.refresh_from_db()
    assert sim_manager.last_sync_error


def test_a_missing_job_or_manager_does_not_crash_the_worker(
    job: Job, sim_manager: FabricManager
) -> None:
    inventory_sync_task.delay(987654)
    Job.objects.filter(pk=job.pk).update(target_id=987654)
    inventory_sync_task.delay(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "no longer exists" in job.error


def test_the_beat_task_queues_one_sync_per_enabled_manager(
    sim_manager: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    FabricManager.objects.create(name="off", driver="simulated", is_enabled=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert inventory_sync_all_task.delay().get() == 1
    [job] = Job.objects.all()
    assert (job.target_id, job.status) == (sim_manager.pk, JobStatus.SUCCEEDED)


def test_the_beat_recounts_failure_domains_of_an_older_definition_every_minute(
    sim_manager: FabricManager, settings: Any
) -> None:
    entry = next(
        e
        for e in settings.CELERY_BEAT_SCHEDULE.values()
        if e["task"] == "composer.tasks.failure_domains_recount_task"
    )
    assert entry["schedule"] <= 60
    inventory_sync(manager=sim_manager)
    assert failure_domains_recount_task.delay().get() == 0
    FailureDomain.objects.filter(manager=sim_manager).update(radius_version=0)
    assert failure_domains_recount_task.delay().get() == 1
    assert not FailureDomain.objects.exclude(radius_version=RADIUS_VERSION).exists()


def test_every_beat_entry_and_housekeeping_route_names_a_task_that_exists(settings: Any) -> None:
    """A renamed or removed task must not leave beat sending a name no worker knows."""
    import composer.tasks as tasks

    names = {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    names |= set(settings.CELERY_TASK_ROUTES)
    missing = [n for n in names if not hasattr(tasks, n.rsplit(".", 1)[1])]
    assert missing == []
