"""Celery entry points: thin, they load rows by id and call a service.

Task arguments are ids only (JSON-serialisable, and the row is re-read in the worker), and
every task is safe to receive twice: the runner's compare-and-set turns a duplicate into
a no-op, unless the job's lease expired (its worker died): then the delivery takes it over
and it resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal, TypedDict

from celery import shared_task
from django.utils import timezone

from composer.events import events_publish_pending
from composer.models import Job
from composer.runner import JobRetry
from composer.services.composition_jobs import composition_compose_run, composition_decompose_run
from composer.services.dispatch import jobs_dispatch
from composer.services.heal import composition_heal_run
from composer.services.holds import holds_expire
from composer.services.job_leases import job_lease_expired, job_take_over, jobs_lease_sweep
from composer.services.jobs import inventory_sync_request, inventory_sync_run
from composer.services.reconcile import reconcile_run
from composer.services.resize import composition_resize_run
from fabric.models import FabricManager
from fabric.services.domains import domains_refresh_outdated

logger = logging.getLogger(__name__)

SYNC_MAX_RETRIES = 5
COMPOSE_MAX_RETRIES = 5


class JobTaskOptions(TypedDict):
    """The `shared_task` options every job task shares (bound: it reads its retry count)."""

    bind: Literal[True]
    acks_late: bool
    reject_on_worker_lost: bool
    autoretry_for: tuple[type[BaseException], ...]
    retry_jitter: bool


class CompositionJobTaskOptions(JobTaskOptions):
    """A composition job task's options: the shared ones, its time limits and retries."""

    soft_time_limit: int
    time_limit: int
    max_retries: int
    retry_backoff: int
    retry_backoff_max: int


# Every job task: redelivered if its worker dies (acks_late + reject_on_worker_lost; the
# runner's compare-and-set makes a duplicate harmless, and the job's lease says when the
# worker that holds it is dead), retried with jittered back-off on
# JobRetry (a transient driver error), stopped at its hard limit.
JOB_TASK: JobTaskOptions = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (JobRetry,),
    "retry_jitter": True,
}


# The jobs that bind and unbind a composition's devices: minutes at most, retried sooner.
COMPOSITION_JOB_TASK: CompositionJobTaskOptions = {
    **JOB_TASK,
    "soft_time_limit": 300,
    "time_limit": 360,
    "max_retries": COMPOSE_MAX_RETRIES,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
}


def _run_job(task: Any, job_id: int, run: Callable[..., Job], what: str) -> None:
    """Load job `job_id` and `run` it. On the last allowed attempt a transient error fails
    the job instead of retrying, so the job always ends with a status."""
    # The requester is the actor of every state change the job makes: load it with the job.
    job = Job.objects.select_related("requested_by").filter(pk=job_id).first()
    if job is None:
        logger.warning("%s job %s does not exist; nothing to do", what, job_id)
        return
    if job_lease_expired(job):
        if not job_take_over(job=job, by="a redelivery"):
            return  # failed past its resume limit, or another worker took it first
        # This delivery is its message: the dispatch pass must not send another.
        Job.objects.filter(pk=job.pk).update(dispatched_at=timezone.now())
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


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150, expires=60)
def failure_domains_recount_task() -> int:
    """Beat, every minute: recount the failure domains stored under another definition of
    the blast radius (after an upgrade that changed it); one query when there are none.
    Returns how many managers' domains were recounted."""
    return len(domains_refresh_outdated())


@shared_task(acks_late=True, soft_time_limit=30, time_limit=45, expires=30)
def events_publish_pending_task() -> int:
    """Beat, every few seconds: publish the events whose publish after commit failed (the
    outbox sweep). `expires`: runs queued up while no worker ran are dropped, not replayed."""
    return events_publish_pending()


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90, expires=60)
def health_poll_task(manager_id: int) -> int:
    """Poll one fabric manager's health and act on it (alerts, degraded compositions,
    self-heal, events). Not a Job row: polls run every few seconds, and each one already
    leaves its trace (samples, alerts, the manager's last poll time and error)."""
    from composer.services.health_poll import health_poll_run

    manager = FabricManager.objects.filter(pk=manager_id, is_enabled=True).first()
    if manager is None:
        return 0
    outcome = health_poll_run(manager=manager)
    return len(outcome.opened) + len(outcome.closed)


@shared_task(acks_late=True, soft_time_limit=30, time_limit=45, expires=30)
def health_poll_due_task() -> int:
    """Beat, every few seconds: queue a poll of each manager whose own interval is up.
    `expires` on both tasks: polls queued while no worker ran are dropped, not replayed."""
    from fabric.health.poll import managers_due

    due = managers_due()
    for manager in due:
        health_poll_task.delay(manager.pk)
    return len(due)


@shared_task(acks_late=True, soft_time_limit=300, time_limit=360)
def health_samples_prune_task() -> int:
    """Beat, hourly: delete health samples older than COMPOSER_HEALTH_RETENTION_HOURS."""
    from fabric.services.alerts import health_samples_prune

    return health_samples_prune()


@shared_task(acks_late=True, soft_time_limit=300, time_limit=360)
def inventory_changes_prune_task() -> int:
    """Beat, hourly: prune the inventory generation's rows (composer.services.snapshot_cache)
    that no placement has pruned, so that a quiet console's table does not grow."""
    from composer.services.snapshot_cache import inventory_changes_prune

    return inventory_changes_prune()


@shared_task(acks_late=True, soft_time_limit=50, time_limit=58, expires=60)
def utilisation_tick_task() -> dict[str, int]:
    """Beat, every minute: sample every pool and tenant, roll the hour and day up, prune.
    `expires`: a tick queued while no worker ran is dropped; the next one samples now."""
    from composer.services.utilisation import utilisation_tick

    result = utilisation_tick(now=timezone.now())
    return {"pools": result.pools, "tenants": result.tenants, "pruned": result.pruned}


@shared_task(acks_late=True, soft_time_limit=30, time_limit=45, expires=10)
def jobs_lease_sweep_task() -> int:
    """Beat, every few seconds: take over the jobs whose worker died (their lease expired)
    and send them again, so they resume within a minute of the death; fail those that
    killed their worker too often. `expires`: sweeps queued while no worker ran are
    dropped (the next one does the same). Returns how many were taken over."""
    return jobs_lease_sweep()


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90, expires=30)
def jobs_dispatch_task() -> int:
    """Beat, every few seconds: send the QUEUED jobs the broker does not hold (refused while
    Redis was away, or lost with a Redis restart): the job outbox. Returns how many."""
    return jobs_dispatch()


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90, expires=30)
def composition_holds_expire_task() -> int:
    """Beat, every COMPOSER_HOLD_SWEEP_S: release the holds whose time is up, giving their
    claimed devices back (`composer.services.holds.holds_expire`). Returns how many."""
    return holds_expire()


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150)
def reconcile_task(run_id: int | None = None) -> int | None:
    """Beat, every COMPOSER_RECONCILE_INTERVAL_S (no `run_id`), or an operator's queued run
    `run_id`: compare each fabric manager's bindings with the database and repair the drift
    (`composer.services.reconcile`). Returns the id of the run's row."""
    run = reconcile_run(run_id=run_id)
    return run.pk if run is not None else None


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150, expires=30)
def bookings_tick_task() -> int:
    """Beat, every COMPOSER_BOOKING_TICK_S: start, warn and end the occurrences of bookings
    that are due (`composer.services.booking_clock`). Each step is a compare-and-set on the
    occurrence, so two ticks at once or a duplicate delivery start nothing twice. Returns
    how many occurrences it moved."""
    from composer.services.booking_clock import bookings_tick

    return bookings_tick().count()


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90)
def notification_deliver_task(delivery_id: int) -> bool | None:
    """One attempt at a notification (an e-mail or a webhook POST): claimed by
    compare-and-set, so a duplicate message does nothing; a failure is recorded with its
    next attempt, which beat's dispatch pass sends when it is due. Returns whether it was
    delivered (None: no attempt was due)."""
    from composer.notifications import delivery_attempt

    outcome = delivery_attempt(delivery_id=delivery_id)
    return None if outcome is None else outcome.ok


@shared_task(acks_late=True, soft_time_limit=30, time_limit=45, expires=30)
def notifications_dispatch_task() -> int:
    """Beat, every COMPOSER_NOTIFY_DISPATCH_S: send the notifications that are due and that
    no worker holds (retries whose back-off is over, those the broker refused or lost, an
    attempt whose worker died). Returns how many."""
    from composer.notifications import deliveries_dispatch

    return deliveries_dispatch()


@shared_task(acks_late=True, soft_time_limit=300, time_limit=360)
def notifications_prune_task() -> int:
    """Beat, hourly: delete finished deliveries older than COMPOSER_NOTIFY_RETENTION_DAYS."""
    from composer.notifications import deliveries_prune

    return deliveries_prune()


@shared_task(**COMPOSITION_JOB_TASK)
def composition_compose_task(self: Any, job_id: int) -> None:
    """Run compose job `job_id`: bind, verify, ready; roll back on a permanent failure."""
    _run_job(self, job_id, composition_compose_run, "compose")


@shared_task(**COMPOSITION_JOB_TASK)
def composition_decompose_task(self: Any, job_id: int) -> None:
    """Run decompose job `job_id`: unbind, release, RELEASED. Transient errors retry."""
    _run_job(self, job_id, composition_decompose_run, "decompose")


@shared_task(**COMPOSITION_JOB_TASK)
def composition_heal_task(self: Any, job_id: int) -> None:
    """Run heal job `job_id`: replace lost devices from spares, READY; roll back to DEGRADED
    on a permanent failure or when no spare exists. Transient errors retry with back-off."""
    _run_job(self, job_id, composition_heal_run, "heal")


@shared_task(**COMPOSITION_JOB_TASK)
def composition_resize_task(self: Any, job_id: int) -> None:
    """Run resize job `job_id`: bind what is added, verify, unbind what goes, READY; undo
    the additions on a permanent failure (READY with what it had). Transient errors retry."""
    _run_job(self, job_id, composition_resize_run, "resize")
