"""What /readyz checks: can this console do its work now?

- database: reachable, and every migration applied (read once per process: migrations are
  not unapplied under a running console, and the check reads the files);
- redis: answers a PING (broker, live events, heartbeats);
- workers: a live worker heartbeat (composer.monitoring.heartbeat) for each queue jobs and
  housekeeping go to;
- beat: a live beat heartbeat;
- outbox: no live event unpublished, and no queued job unsent, for longer than
  COMPOSER_READY_OUTBOX_MAX_AGE_S (the sweep and the dispatch pass run every few seconds:
  older means they are stuck).

Each check answers in the operators' words and names no address, password or tenant:
/readyz answers anyone who can reach it (a load balancer, Kubernetes), like /healthz.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from composer.monitoring import dbprobe
from composer.monitoring.heartbeat import heartbeat_stale_s, heartbeats_read, redis_client

logger = logging.getLogger(__name__)

__all__ = ["CHECKS", "Check", "readiness"]


@dataclass(frozen=True)
class Check:
    """The outcome of one check: its name, whether it passed, and why not."""

    name: str
    ok: bool
    detail: str = ""


_migrated = threading.Event()


def _database() -> Check:
    if not _migrated.is_set():
        from django.db.migrations.executor import MigrationExecutor

        try:
            executor = MigrationExecutor(connection)
            plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        except DatabaseError as exc:
            return Check("database", False, f"migrations unreadable ({type(exc).__name__})")
        if plan:
            return Check(
                "database", False, f"{len(plan)} migration(s) not applied: run manage.py migrate"
            )
        _migrated.set()
    return Check("database", True)


def _redis() -> Check:
    client = redis_client()
    try:
        client.ping()
    except redis.RedisError as exc:
        return Check("redis", False, f"Redis not reachable ({type(exc).__name__})")
    finally:
        client.close()
    return Check("redis", True)


def job_queues() -> list[str]:
    """The queues work is sent to: jobs on Celery's default queue, beat's housekeeping on
    its own (settings: CELERY_TASK_ROUTES)."""
    default = str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery"))
    return sorted({default, settings.COMPOSER_HOUSEKEEPING_QUEUE})


def _processes(role: str, queues: Iterable[str] = ()) -> Check:
    name = "workers" if role == "worker" else role
    try:
        beats = [b for b in heartbeats_read() if b.role == role]
    except redis.RedisError as exc:
        return Check(
            name, False, f"heartbeats unreadable: Redis not reachable ({type(exc).__name__})"
        )
    alive = [b for b in beats if b.is_alive]
    stale = heartbeat_stale_s()
    if not alive:
        words = "no worker" if role == "worker" else "no beat"
        if beats:
            newest = min(b.age_s for b in beats)
            return Check(name, False, f"{words} alive: the last heartbeat is {newest:.0f} s old")
        return Check(name, False, f"{words} has sent a heartbeat in the last {stale:.0f} s")
    missing = sorted(set(queues) - {q for b in alive for q in b.queues})
    if missing:
        return Check(name, False, f"no live worker consumes queue(s) {', '.join(missing)}")
    return Check(name, True)


def _outbox() -> Check:
    from composer.choices import JobStatus
    from composer.models import Event, Job

    max_age = timedelta(seconds=settings.COMPOSER_READY_OUTBOX_MAX_AGE_S)
    cutoff = timezone.now() - max_age
    try:
        stuck_events = Event.objects.filter(published_at__isnull=True, at__lt=cutoff).count()
        stuck_jobs = Job.objects.filter(
            status=JobStatus.QUEUED, dispatched_at__isnull=True, queued_at__lt=cutoff
        ).count()
    except DatabaseError as exc:
        return Check("outbox", False, f"not readable ({type(exc).__name__})")
    problems = []
    if stuck_events:
        problems.append(f"{stuck_events} live event(s) unpublished")
    if stuck_jobs:
        problems.append(f"{stuck_jobs} queued job(s) not sent to the task queue")
    if problems:
        seconds = int(max_age.total_seconds())
        return Check("outbox", False, f"{' and '.join(problems)} for over {seconds} s")
    return Check("outbox", True)


CHECKS: dict[str, Callable[[], Check]] = {
    "database": _database,
    "redis": _redis,
    "workers": lambda: _processes("worker", job_queues()),
    "beat": lambda: _processes("beat"),
    "outbox": _outbox,
}


# The checks that read the database: with it away they fail at once (composer.monitoring.dbprobe).
NEEDS_DATABASE = frozenset({"database", "outbox"})


def readiness(only: Iterable[str] | None = None) -> list[Check]:
    """Run the checks (those named in `only`, else all), each on its own: one that fails
    does not stop the others, and one that raises unexpectedly fails with its type.
    The database is asked once, with a short timeout, before any check reads it."""
    names = [name for name in CHECKS if only is None or name in only]
    down = dbprobe.database_probe() if NEEDS_DATABASE.intersection(names) else None
    results = []
    for name in names:
        check = CHECKS[name]
        if down and name in NEEDS_DATABASE:
            what = "not reachable" if name == "database" else "not readable: database not reachable"
            results.append(Check(name, False, f"{what} ({down})"))
            continue
        try:
            results.append(check())
        except Exception as exc:  # a readiness probe answers, whatever breaks
            logger.warning("readiness check %s raised", name, exc_info=True)
            results.append(Check(name, False, f"check failed ({type(exc).__name__})"))
    return results
