"""Job services: a sync request makes one job and enqueues it after commit; lost jobs are swept."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.contrib.auth import get_user_model

from composer.choices import JobKind, JobStatus
from composer.errors import ComposerError, InvalidTransition
from composer.models import Job
from composer.services.jobs import inventory_sync_request, job_cancel
from fabric.models import FabricManager


def test_a_sync_request_creates_a_queued_job_and_enqueues_it_after_commit(
    sim_manager: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    user = get_user_model().objects.create_user("op", is_staff=True)
    with mock.patch("composer.tasks.inventory_sync_task.delay") as delay:
        with django_capture_on_commit_callbacks() as callbacks:
            job = inventory_sync_request(manager=sim_manager, requested_by=user)
            delay.assert_not_called()  # not before commit: the worker could miss the row
        assert len(callbacks) == 1
        callbacks[0]()
    delay.assert_called_once_with(job.pk)
    assert (job.kind, job.status, job.requested_by) == (
        JobKind.INVENTORY_SYNC,
        JobStatus.QUEUED,
        user,
    )
    assert (job.target_type, job.target_id, job.target_label) == (
        "fabric_manager",
        sim_manager.pk,
        sim_manager.name,
    )


def test_a_second_request_while_one_is_pending_returns_the_pending_job(
    sim_manager: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    with (
        mock.patch("composer.tasks.inventory_sync_task.delay") as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        first = inventory_sync_request(manager=sim_manager)
        second = inventory_sync_request(manager=sim_manager)
    assert first == second and Job.objects.count() == 1
    delay.assert_called_once_with(first.pk)


def test_a_disabled_manager_is_refused_naming_the_field(sim_manager: FabricManager) -> None:
    sim_manager.is_enabled = False
    with pytest.raises(ComposerError) as caught:
        inventory_sync_request(manager=sim_manager)
    assert caught.value.field == "manager"
    assert not Job.objects.exists()


def test_only_queued_jobs_can_be_cancelled(db: None) -> None:
    job = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    job_cancel(job=job)
    assert Job.objects.get(pk=job.pk).status == JobStatus.CANCELLED
    with pytest.raises(InvalidTransition):
        job_cancel(job=job)


def test_a_job_the_broker_refuses_waits_for_the_task_queue_and_is_not_failed(
    sim_manager: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    """Redis away: the job stays QUEUED (the dispatch pass sends it later), and a second
    request for the same manager returns it rather than queueing another."""
    with (
        mock.patch(
            "composer.tasks.inventory_sync_task.delay", side_effect=ConnectionError("broker down")
        ),
        django_capture_on_commit_callbacks(execute=True),
    ):
        refused = inventory_sync_request(manager=sim_manager)

    refused.refresh_from_db()
    assert refused.status == JobStatus.QUEUED and refused.error == ""
    assert refused.message == "Waiting for the task queue" and refused.dispatched_at is None
    with (
        mock.patch("composer.tasks.inventory_sync_task.delay") as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        again = inventory_sync_request(manager=sim_manager)
    assert again.pk == refused.pk
    delay.assert_not_called()
