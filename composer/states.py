"""Transition tables and the one way a lifecycle state changes (compare-and-set).

A job's status moves only through `job_transition`: it checks the table, then updates
the row only if it still has the status this process last saw. When another worker got
there first (a redelivered task, the stale-job sweep), nothing is written and StaleState
is raised, so no job runs twice and no terminal status is overwritten.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from composer.choices import JobStatus
from composer.errors import InvalidTransition, StaleState
from composer.models import Job

JOB_ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    # A worker claims a queued job, or it is cancelled before it ran.
    # QUEUED -> FAILED: the task could not be sent to the broker at all.
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED, JobStatus.FAILED}),
    # RUNNING -> QUEUED: a transient failure hands the job back for a retry with back-off.
    JobStatus.RUNNING: frozenset(
        {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.QUEUED}
    ),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}


def job_transition(job: Job, to: JobStatus | str, **fields: Any) -> Job:
    """Move `job` to status `to`, setting `fields` in the same UPDATE.

    Compare-and-set on the status the caller holds: raises StaleState when the row's
    status changed meanwhile (the caller's `job` is refreshed so it can look), and
    InvalidTransition when the table forbids the move. Field values may be expressions
    such as `F("attempts") + 1`; the instance is refreshed for those.
    """
    current = JobStatus(job.status)
    target = JobStatus(to)
    if target not in JOB_ALLOWED[current]:
        raise InvalidTransition(
            f"Job {job.pk} cannot go from {current} to {target}.", field="status"
        )
    values = {"status": target, "updated_at": timezone.now(), **fields}
    updated = Job.objects.filter(pk=job.pk, status=current).update(**values)
    if not updated:
        job.refresh_from_db()
        raise StaleState(
            f"Job {job.pk} is {job.status}, not {current}; another worker changed it first."
        )
    expressions = [name for name, value in values.items() if hasattr(value, "resolve_expression")]
    for name, value in values.items():
        if name not in expressions:
            setattr(job, name, value)
    if expressions:
        job.refresh_from_db(fields=expressions)
    return job
