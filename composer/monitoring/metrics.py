"""The series each process counts for itself: jobs run, HTTP requests, live events.

They live in prometheus-client's default registry. With PROMETHEUS_MULTIPROC_DIR set (as
`make run` does, and as docs/monitoring.md asks of every machine that runs more than one
process) each process writes its values to files in that folder and any process of the
machine serving /metrics adds them up (`composer.monitoring.views`), so Celery's pool
processes, which run the jobs but serve no HTTP, are counted too. The driver calls are
counted by fabric itself (`fabric.drivers.metrics`) into the same registry.

Names follow Prometheus' conventions: `composer_` first, base units (seconds), counters
ending in `_total`. Labels carry kinds, outcomes and statuses, never ids: a label value is
a new series for ever.
"""

from __future__ import annotations

import atexit
import logging
import os
from datetime import datetime

from django.utils import timezone
from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "EVENTS_PUBLISHED",
    "EVENT_REPLAYS",
    "HTTP_REQUESTS",
    "HTTP_REQUEST_DURATION",
    "JOB_DURATION",
    "JOB_ROLLED_BACK",
    "JOB_RUNS",
    "WEBSOCKETS_CONNECTED",
    "job_run_observe",
    "multiprocess_dir",
    "process_dead_mark",
    "process_dead_mark_at_exit",
]

logger = logging.getLogger(__name__)

# Compose runs from seconds (a fast manager) to minutes (a slow one binding eight GPUs).
JOB_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

JOB_DURATION = Histogram(
    "composer_job_duration_seconds",
    "From a job's creation to its end (queue wait included: what its requester waits), by "
    "kind and outcome (succeeded, failed).",
    ["kind", "outcome"],
    buckets=JOB_BUCKETS,
)
JOB_RUNS = Counter(
    "composer_job_runs_total",
    "Runs of jobs by how each ended: succeeded, failed, retried (a transient fabric manager "
    "error), handed_over (database connection cut: resumed by another run), lease_lost "
    "(taken over), duplicate (a delivery that found the job claimed).",
    ["kind", "outcome"],
)
JOB_ROLLED_BACK = Counter(
    "composer_jobs_rolled_back_total",
    "Jobs that failed and undid what they had bound (a failed compose is rolled back, a "
    "failed heal goes back to degraded, a failed resize back to what the composition had).",
    ["kind"],
)
HTTP_REQUESTS = Counter(
    "composer_http_requests_total",
    "HTTP requests answered, by method and status class (2xx, 3xx, 4xx, 5xx).",
    ["method", "status"],
)
HTTP_REQUEST_DURATION = Histogram(
    "composer_http_request_duration_seconds",
    "Time to answer an HTTP request, by method.",
    ["method"],
    buckets=HTTP_BUCKETS,
)
EVENTS_PUBLISHED = Counter(
    "composer_events_published_total",
    "Live events sent out on Redis: after their commit, or by the outbox sweep (late).",
    ["path"],
)
EVENT_REPLAYS = Counter(
    "composer_event_replay_requests_total",
    "Resume requests of websocket clients (replays of what they missed).",
)
WEBSOCKETS_CONNECTED = Gauge(
    "composer_websockets_connected",
    "Websocket connections open now (signed in).",
    multiprocess_mode="livesum",
)


def multiprocess_dir() -> str | None:
    """The folder of multiprocess mode, or None when each process counts only for itself."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def process_dead_mark() -> None:
    """Drop this process's live gauges (the websockets it held) from the machine's sum:
    its files stay in the folder after it exits, and a `livesum` gauge adds up every file
    not marked dead. A no-op outside multiprocess mode."""
    folder = multiprocess_dir()
    if folder:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid(), folder)


def process_dead_mark_at_exit() -> None:
    """Mark this (web) process dead when it exits (the pid is read then: a forked child
    marks itself). A process killed outright cannot: the folder is emptied when the
    machine's processes start (the launcher does it for `make run`)."""
    atexit.register(process_dead_mark)


# A failed job of these kinds undid what it had bound (docs/flows.md).
ROLLED_BACK_KINDS = frozenset({"compose", "heal", "resize"})


def job_run_observe(*, kind: str, outcome: str, created_at: datetime | None = None) -> None:
    """Count one run of a job of `kind` that ended with `outcome`; a run that ended the job
    (succeeded, failed) also observes its duration from `created_at` and, for a failure
    that undoes its work, a rollback. Never raises: a metric must not fail a job."""
    try:
        JOB_RUNS.labels(kind=kind, outcome=outcome).inc()
        if outcome in ("succeeded", "failed") and created_at is not None:
            elapsed = (timezone.now() - created_at).total_seconds()
            JOB_DURATION.labels(kind=kind, outcome=outcome).observe(max(0.0, elapsed))
        if outcome == "failed" and kind in ROLLED_BACK_KINDS:
            JOB_ROLLED_BACK.labels(kind=kind).inc()
    except Exception:  # a full disk under PROMETHEUS_MULTIPROC_DIR, say
        logger.warning("job metrics not recorded", exc_info=True)
