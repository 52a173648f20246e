"""The Celery application: configured from Django settings under the CELERY_ namespace."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")

app = Celery("composer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["composer", "fabric"])
# Celery's Django fixup closes every database connection before and after each task unless
# this is set: a new PostgreSQL connection per task, which cost more than a compose job's
# first dozen queries (docs/benchmarks.md, end to end). It then recycles them only every
# this many tasks; `_recycle_connections` below decides per task instead.
app.conf.update(CELERY_DB_REUSE_MAX=1000)


@task_prerun.connect
@task_postrun.connect
def _recycle_connections(signal: Any = None, task: Any = None, **kwargs: Any) -> None:
    """Keep a worker's database connection between tasks only while it is known clean.

    Django's rule for requests (CONN_MAX_AGE; a connection that raised is tested), plus:
    closed when it is not idle, which is how a query cut short by a time limit leaves it
    (the case that made Celery close after every task); and before a task, one `SELECT 1`,
    so that a connection the server dropped meanwhile is replaced rather than failed on.
    Eager tasks (tests) run inside the caller's transaction and are left alone.
    """
    if task is None or getattr(task.request, "is_eager", False):
        return
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        if conn.in_atomic_block or not _idle(conn.connection):
            conn.close()
            continue
        conn.close_if_unusable_or_obsolete()
        if signal is task_prerun and conn.connection is not None and not conn.is_usable():
            conn.close()


def _idle(raw: Any) -> bool:
    """Whether a DB-API connection is between transactions with nothing in flight."""
    info = getattr(raw, "info", None)  # psycopg 3: libpq's own state, no round trip
    if info is not None:
        from psycopg.pq import TransactionStatus

        return bool(info.transaction_status == TransactionStatus.IDLE)
    return not getattr(raw, "in_transaction", False)  # sqlite3


# Heartbeats, the request id across the queue, log formats (composer.monitoring).
import composer.monitoring.celery_hooks  # noqa: E402, F401
