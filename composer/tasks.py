"""Celery entry points: thin, they load rows by id and call a service (STYLE §6).

Task arguments are ids only (JSON-serialisable, and the row is re-read in the worker), and
every task is safe to receive twice: the runner's compare-and-set turns a duplicate into
a no-op.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import shared_task

from composer.models import Job
from composer.runner import JobRetry
from composer.services.composition_jobs import composition_compose_run, composition_decompose_run
from composer.services.jobs import inventory_sync_request, inventory_sync_run, job_sweep_stale
from composer.services.reconcile import compositions_reconcile
from fabric.models import FabricManager

logger = logging.getLogger(__name__)

SYNC_MAX_RETRIES = 5
COMPOSE_MAX_RETRIES = 5

# Every job task: redelivered if its worker dies (acks_late + reject_on_worker_lost; the
# runner's compare-and-set makes a duplicate harmless), retried with jittered back-off on
# JobRetry (a transient driver error), stopped at its hard limit.
JOB_TASK = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (JobRetry,),
    "retry_jitter": True,
}


def _run_job(task: Any, job_id: int, run: Callable[..., Job], what: str) -> None:
    """Load job `job_id` and `run` it. On the last allowed attempt a transient error fails
    the job instead of retrying, so the job always ends with a status."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        logger.warning("%s job %s does not exist; nothing to do", what, job_id)
        return
    run(job, retryable=task.request.retries < task.max_retries)


@shared_task(
    **JOB_TASK,
    soft_time_limit=600,
    time_limit=660,
    max_retries=SYNC_MAX_RETRIES,
    retry_backoff=5,
    retry_backoff_max=300,
)
def inventory_sync_task(self: Any, job_id: int) -> None:
    """Run inventory-sync job `job_id`; transient driver errors retry with back-off."""
    _run_job(self, job_id, inventory_sync_run, "inventory sync")


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90)
def inventory_sync_all_task() -> int:
    """Beat: queue one sync job per enabled fabric manager (pending ones are reused)."""
    queued = 0
    for manager in FabricManager.objects.filter(is_enabled=True):
        inventory_sync_request(manager=manager)
        queued += 1
    return queued


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90)
def jobs_sweep_stale_task() -> int:
    """Beat: cancel jobs whose worker stopped sending heartbeats (or that no worker took),
    then finish the compositions they left unfinished (rule 2)."""
    swept = job_sweep_stale()
    compositions_reconcile()
    return swept


@shared_task(
    **JOB_TASK,
    soft_time_limit=300,
    time_limit=360,
    max_retries=COMPOSE_MAX_RETRIES,
    retry_backoff=2,
    retry_backoff_max=60,
)
def composition_compose_task(self: Any, job_id: int) -> None:
    """Run compose job `job_id`: bind, verify, ready; roll back on a permanent failure."""
    _run_job(self, job_id, composition_compose_run, "compose")


@shared_task(
    **JOB_TASK,
    soft_time_limit=300,
    time_limit=360,
    max_retries=COMPOSE_MAX_RETRIES,
    retry_backoff=2,
    retry_backoff_max=60,
)
def composition_decompose_task(self: Any, job_id: int) -> None:
    """Run decompose job `job_id`: unbind, release, RELEASED. Transient errors retry."""
    _run_job(self, job_id, composition_decompose_run, "decompose")
