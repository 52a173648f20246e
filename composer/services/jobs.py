"""Job services: create jobs and enqueue them after commit; cancel queued jobs no worker took."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.errors import ComposerError
from composer.models import Job
from composer.runner import run_job
from composer.services.dispatch import WAITING_FOR_WORKER, job_enqueue
from composer.states import job_transition
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync

logger = logging.getLogger(__name__)

MANAGER_TARGET = "fabric_manager"


def inventory_sync_job_create(*, manager: FabricManager, requested_by: Any = None) -> Job:
    """Create a QUEUED inventory-sync job for `manager` without enqueueing it.

    For callers that run the job in-process (tests, commands); others use
    `inventory_sync_request`.
    """
    job = Job(
        kind=JobKind.INVENTORY_SYNC,
        status=JobStatus.QUEUED,
        requested_by=requested_by if getattr(requested_by, "pk", None) else None,
        target_type=MANAGER_TARGET,
        target_id=manager.pk,
        target_label=manager.name,
        params={"manager_id": manager.pk},
        message=WAITING_FOR_WORKER,
    )
    job.full_clean()
    job.save()
    return job


def inventory_sync_request(*, manager: FabricManager, requested_by: Any = None) -> Job:
    """Queue an inventory sync of `manager` and return its job.

    When a sync of the same manager is already queued or running, that job is returned
    instead of starting a second one (a sync reads the whole fabric: two at once only
    repeat the work). The task is enqueued after commit, so a worker never looks for a
    row that is not there yet. Raises ComposerError (field "manager") for a disabled
    manager.
    """
    if not manager.is_enabled:
        raise ComposerError(
            f"Fabric manager {manager.name} is disabled; enable it to synchronise.",
            field="manager",
        )
    with transaction.atomic():
        # Serialise requests for one manager so that two clicks make one job.
        FabricManager.objects.select_for_update().filter(pk=manager.pk).first()
        existing = (
            Job.objects.filter(
                kind=JobKind.INVENTORY_SYNC,
                target_type=MANAGER_TARGET,
                target_id=manager.pk,
                status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
            )
            .order_by("-created_at", "-id")
            .first()
        )
        if existing is not None:
            logger.info("sync of manager %s already pending as job %s", manager.pk, existing.pk)
            return existing
        job = inventory_sync_job_create(manager=manager, requested_by=requested_by)
        transaction.on_commit(partial(job_enqueue, job))
    logger.info("sync of manager %s queued as job %s", manager.pk, job.pk)
    return job


def inventory_sync_run(job: Job, *, retryable: bool = True) -> Job:
    """Run an inventory-sync job in this process (what the task does), via `run_job`.

    A job whose manager was deleted fails with that reason; driver errors are handled by
    the runner (transient ones raise JobRetry while `retryable`).
    """

    def work(progress: Any) -> dict[str, Any]:
        manager = (
            FabricManager.objects.filter(pk=job.target_id).first()
            if job.target_id is not None
            else None
        )
        if manager is None:
            raise ComposerError(
                f"Fabric manager {job.target_label or job.target_id} no longer exists."
            )
        result = inventory_sync(
            manager=manager,
            on_progress=progress,
            actor=job.requested_by,
            source=f"sync job {job.pk}",
        )
        return result.as_dict()

    return run_job(job, work, retryable=retryable)


def job_cancel(*, job: Job, actor: Any = None) -> Job:
    """Cancel a job that has not started. Raises StaleState/InvalidTransition otherwise.

    A running job cannot be cancelled from outside (the worker owns it); the message the
    worker may still receive finds the job CANCELLED and exits.
    """
    who = getattr(actor, "username", "") or "system"
    job_transition(
        job,
        JobStatus.CANCELLED,
        finished_at=timezone.now(),
        message=f"Cancelled by {who}"[:300],
    )
    logger.info("job %s cancelled by %s", job.pk, who)
    return job
