"""Celery entry points: thin, they load rows by id and call a service (STYLE §6).

Task arguments are ids only (JSON-serialisable, and the row is re-read in the worker), and
every task is safe to receive twice: the runner's compare-and-set turns a duplicate into
a no-op.
"""

from __future__ import annotations

import logging
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


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=600,
    time_limit=660,
    autoretry_for=(JobRetry,),
    max_retries=SYNC_MAX_RETRIES,
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
)
def inventory_sync_task(self: Any, job_id: int) -> None:
    """Run inventory-sync job `job_id`; transient driver errors retry with back-off.

    On the last allowed attempt a transient error fails the job instead of retrying, so
    the job always ends with a status.
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        logger.warning("inventory sync job %s does not exist; nothing to do", job_id)
        return
    inventory_sync_run(job, retryable=self.request.retries < self.max_retries)


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


COMPOSE_MAX_RETRIES = 5


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=300,
    time_limit=360,
    autoretry_for=(JobRetry,),
    max_retries=COMPOSE_MAX_RETRIES,
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
)
def composition_compose_task(self: Any, job_id: int) -> None:
    """Run compose job `job_id`: bind, verify, ready; roll back on a permanent failure.

    Transient driver errors retry with back-off; on the last attempt they fail the job
    (and roll the composition back) instead, so the job always ends with a status.
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        logger.warning("compose job %s does not exist; nothing to do", job_id)
        return
    composition_compose_run(job, retryable=self.request.retries < self.max_retries)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=300,
    time_limit=360,
    autoretry_for=(JobRetry,),
    max_retries=COMPOSE_MAX_RETRIES,
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
)
def composition_decompose_task(self: Any, job_id: int) -> None:
    """Run decompose job `job_id`: unbind, release, RELEASED. Transient errors retry."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        logger.warning("decompose job %s does not exist; nothing to do", job_id)
        return
    composition_decompose_run(job, retryable=self.request.retries < self.max_retries)
