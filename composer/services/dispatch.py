"""Job dispatch: the Job row is the outbox of the task queue.

A service writes a QUEUED `Job` and, once its transaction commits, `job_enqueue` sends the
job's task to the broker once and records when the broker took it (`Job.dispatched_at`).
When the broker cannot be reached (Redis restarting, a network cut) the job is not failed:
it stays QUEUED, "Waiting for the task queue", and `jobs_dispatch` (beat, every few
seconds, on the housekeeping queue) sends it once Redis is back. Work accepted during an
outage is thus late, never lost, and never failed for that reason alone (rule 6).

The same pass re-sends QUEUED jobs whose message the broker lost. A Redis restarted without
persistence (or flushed) forgets every message it held; the pass notices at once, because a
marker key it keeps in the broker's database is gone (`broker_emptied`), and sends every
QUEUED job again, so a restart costs a job seconds, not minutes. A message lost any other
way is caught later: a job whose message went out long ago and that no worker ever started
is sent again after COMPOSER_JOB_REDISPATCH_S. Re-sending is
safe because a duplicate delivery is a no-op (the runner claims a job QUEUED -> RUNNING by
compare-and-set). A job handed back to QUEUED for a retry (a transient driver error) has a
message of Celery's own waiting for its countdown; it is re-sent only once that countdown
(at most the task's `retry_backoff_max`) and COMPOSER_JOB_REDISPATCH_S more have passed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import redis
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.models import Job
from composer.monitoring.requestid import (
    request_id,
    request_id_clean,
    request_id_reset,
    request_id_set,
)

logger = logging.getLogger(__name__)

__all__ = [
    "JOB_TASKS",
    "WAITING_FOR_QUEUE",
    "WAITING_FOR_WORKER",
    "broker_emptied",
    "broker_marker_set",
    "job_enqueue",
    "job_task",
    "jobs_dispatch",
]

# The one mapping from a job's kind to the Celery task (in composer.tasks) that runs it.
JOB_TASKS: dict[str, str] = {
    JobKind.INVENTORY_SYNC: "inventory_sync_task",
    JobKind.COMPOSE: "composition_compose_task",
    JobKind.DECOMPOSE: "composition_decompose_task",
    JobKind.HEAL: "composition_heal_task",
    JobKind.RESIZE: "composition_resize_task",
}

WAITING_FOR_WORKER = "Waiting for a worker"
WAITING_FOR_QUEUE = "Waiting for the task queue"

# A job committed this recently is left to the `job_enqueue` of its own transaction.
DISPATCH_GRACE_S = 2
# How many jobs one pass sends at most (the next pass, seconds later, sends the rest).
DISPATCH_BATCH = 500


def job_task(kind: str) -> Any:
    """The Celery task that runs jobs of `kind` (looked up when called, so that tests and
    the tasks module's own imports see the same object). Raises KeyError for a kind with
    no task."""
    import composer.tasks

    return getattr(composer.tasks, JOB_TASKS[kind])


def _send(job_id: int, kind: str) -> None:
    job_task(kind).delay(job_id)


@contextlib.contextmanager
def _under_request_id(rid: object) -> Iterator[None]:
    """Outside a request, make `rid` (the id of the request that made the job, kept in its
    params) the current one while its task is sent: the task's message then carries it."""
    token = request_id_set(request_id_clean(rid)) if request_id() is None and rid else None
    try:
        yield
    finally:
        if token is not None:
            request_id_reset(token)


def job_enqueue(job: Job) -> bool:
    """Send `job`'s task to the broker once; call it after the job's transaction committed.

    On success the job's `dispatched_at` is set. When the broker cannot be reached the job
    stays QUEUED with the message "Waiting for the task queue" and `jobs_dispatch` sends it
    later; nothing is raised, so the request that queued it answers as usual. Returns
    whether the broker took it.
    """
    try:
        with _under_request_id(job.params.get("request_id")):
            _send(job.pk, job.kind)
    except Exception as exc:  # kombu and redis-py raise several types; none is the caller's
        logger.warning(
            "job %s (%s) could not be queued (%s: %s); it waits for the task queue",
            job.pk,
            job.kind,
            type(exc).__name__,
            exc,
        )
        with contextlib.suppress(DatabaseError):  # only the words on the job's page
            Job.objects.filter(
                pk=job.pk, status=JobStatus.QUEUED, dispatched_at__isnull=True
            ).update(message=WAITING_FOR_QUEUE)
        if job.status == JobStatus.QUEUED:
            job.message = WAITING_FOR_QUEUE
        return False
    now = timezone.now()
    try:
        Job.objects.filter(pk=job.pk).update(dispatched_at=now)
    except DatabaseError as exc:
        # Runs after the commit of the request that made the job: raising here would answer
        # an error for a change that was saved. Unrecorded, the job is sent again by the
        # dispatch pass, and a duplicate delivery is a no-op.
        logger.warning("job %s was queued but not recorded as sent (%s)", job.pk, exc)
        return True
    job.dispatched_at = now
    return True


def _marker_key() -> str:
    """The key whose absence means the broker forgot its messages (one per deployment: two
    deployments sharing a Redis server have their own prefixes)."""
    return f"{settings.COMPOSER_EVENTS_CHANNEL_PREFIX}:broker-marker"


def _broker_client() -> redis.Redis | None:
    """A client of the broker's Redis, or None when the broker is not Redis (or its URL is
    not one redis-py reads, such as a list of failover hosts)."""
    from composer import celery_app

    url = str(celery_app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    try:
        return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)
    except Exception:  # a URL only kombu understands: no fast path, the slow one still works
        return None


def broker_emptied() -> bool:
    """Whether the broker's Redis lost what it held: restarted without persistence, or
    flushed. The marker lives in the broker's own database, so it vanishes with the queued
    messages; `broker_marker_set` puts it back once every queued job was sent again, so a
    loss is acted on until that is done, whatever fails in between.

    With append-only persistence both survive a restart and nothing is re-sent. With
    snapshots only, the marker survives while the messages sent after the last snapshot
    are lost: those are caught by COMPOSER_JOB_REDISPATCH_S. The first pass of a new
    deployment also says True (re-sending then is harmless). False for a broker that is
    not Redis or that cannot be reached (the pass's sends fail anyway).
    """
    client = _broker_client()
    if client is None:
        return False
    try:
        return not client.exists(_marker_key())
    except redis.RedisError:
        return False
    finally:
        client.close()


def broker_marker_set() -> None:
    """Mark the broker as holding every queued job's message again (see broker_emptied)."""
    client = _broker_client()
    if client is None:
        return
    try:
        client.set(_marker_key(), "1")
    except redis.RedisError as exc:
        logger.warning("the task queue's marker was not set (%s); the next pass sends again", exc)
    finally:
        client.close()


def _retry_wait_s(kind: str) -> float:
    """The longest countdown Celery may give a retry of `kind` (jitter only shortens it)."""
    task = job_task(kind)
    return float(getattr(task, "retry_backoff_max", 0) or 0) if task.autoretry_for else 0.0


def _due(now: datetime) -> Q:
    """QUEUED jobs to send now: never dispatched (past the grace), or dispatched (or handed
    back for a retry) long enough ago that their message must have been lost."""
    redispatch = timedelta(seconds=settings.COMPOSER_JOB_REDISPATCH_S)
    never_sent = Q(
        dispatched_at__isnull=True, created_at__lt=now - timedelta(seconds=DISPATCH_GRACE_S)
    )
    lost = Q()
    for kind in JOB_TASKS:
        cutoff = now - redispatch
        retry_cutoff = cutoff - timedelta(seconds=_retry_wait_s(kind))
        lost |= Q(kind=kind, dispatched_at__lt=cutoff, started_at__isnull=True) | Q(
            # Handed back for a retry (`heartbeat_at` is when): Celery's own message waits
            # for its countdown first.
            kind=kind,
            dispatched_at__lt=cutoff,
            started_at__isnull=False,
            heartbeat_at__lt=retry_cutoff,
        )
    return never_sent | lost


def jobs_dispatch(*, now: datetime | None = None) -> int:
    """Send the QUEUED jobs the broker does not hold (see the module docstring).

    Oldest first; every QUEUED job (past the grace of its own enqueue) when the broker
    was emptied since the last pass. Stops at the first refusal (the broker is still away;
    the next pass tries again) and returns how many were sent. Each sent job's
    `dispatched_at` is set (and its message back to "Waiting for a worker"), so a job is
    re-sent at most once per COMPOSER_JOB_REDISPATCH_S while it waits.
    """
    now = now or timezone.now()
    due_now = _due(now)
    emptied = broker_emptied()
    if emptied:
        # A retry waiting out its back-off goes too: its message was lost with the rest.
        logger.warning(
            "the task queue lost its messages (Redis restarted without persistence, or "
            "was flushed): every queued job is sent again"
        )
        due_now = Q(created_at__lt=now - timedelta(seconds=DISPATCH_GRACE_S))
    due = list(
        Job.objects.filter(status=JobStatus.QUEUED)
        .filter(due_now)
        .order_by("created_at", "id")
        .values_list("pk", "kind", "dispatched_at", "params")[:DISPATCH_BATCH]
    )
    sent: list[int] = []
    resent: list[int] = []
    refused = False
    for pk, kind, dispatched_at, params in due:
        try:
            with _under_request_id((params or {}).get("request_id")):
                _send(pk, kind)
        except Exception as exc:
            logger.warning(
                "dispatch stopped after %s job(s): the task queue refused job %s (%s: %s)",
                len(sent),
                pk,
                type(exc).__name__,
                exc,
            )
            refused = True
            break
        sent.append(pk)
        if dispatched_at is not None:
            resent.append(pk)
    if sent:
        when = timezone.now()
        Job.objects.filter(pk__in=sent).update(dispatched_at=when)
        Job.objects.filter(pk__in=sent, status=JobStatus.QUEUED, message=WAITING_FOR_QUEUE).update(
            message=WAITING_FOR_WORKER
        )
        logger.info(
            "dispatched %s queued job(s) (%s sent again after their message was lost)",
            len(sent),
            len(resent),
        )
    if emptied and not refused and len(due) < DISPATCH_BATCH:
        broker_marker_set()  # every queued job was sent again: the broker holds them all
    return len(sent)
