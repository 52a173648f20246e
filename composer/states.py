"""Transition tables and the one way a lifecycle state changes (compare-and-set).

A composition's state moves only through `composition_transition`, which does the same
compare-and-set and writes a StateChange (who, before/after, why, from where) in the same
transaction, so the audit trail never misses a change (rule 5).

A job's status moves only through `job_transition`: it checks the table, then updates
the row only if it still has the status this process last saw. When another worker got
there first (a redelivered task, the lease sweep), nothing is written and StaleState
is raised, so no job runs twice and no terminal status is overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState, JobStatus
from composer.errors import InvalidTransition, StaleState
from composer.events import composition_state_record, job_last_log_line_id, job_progress_record
from composer.models import Composition, Job, StateChange

JOB_ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    # A worker claims a queued job, or it is cancelled before it ran.
    # QUEUED -> FAILED: a job that can never run (a broker outage is not that: the job
    # waits for the task queue, composer.services.dispatch).
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED, JobStatus.FAILED}),
    # RUNNING -> QUEUED: a transient failure hands the job back for a retry with back-off.
    JobStatus.RUNNING: frozenset(
        {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.QUEUED}
    ),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}


def job_transition(
    job: Job, to: JobStatus | str, *, expect: Mapping[str, Any] | None = None, **fields: Any
) -> Job:
    """Move `job` to status `to`, setting `fields` in the same UPDATE.

    Compare-and-set on the status the caller holds (and on the `expect` field values):
    raises StaleState when the row changed meanwhile (the caller's `job` is refreshed so it
    can look), and
    InvalidTransition when the table forbids the move. Field values may be expressions
    such as `F("attempts") + 1`; the instance is refreshed for those. Records a
    `job.progress` event with the new status (published after commit).
    """
    current = JobStatus(job.status)
    target = JobStatus(to)
    if target not in JOB_ALLOWED[current]:
        raise InvalidTransition(
            f"Job {job.pk} cannot go from {current} to {target}.", field="status"
        )
    now = timezone.now()
    # A job's wait in the queue counts from when it (re-)entered it: a retry or a takeover
    # is not a job queued since its creation.
    entered = {"queued_at": now} if target == JobStatus.QUEUED else {}
    values = {"status": target, "updated_at": now, **entered, **fields}
    # The change and its event commit together: one commit, and never one without the other.
    with transaction.atomic():
        updated = Job.objects.filter(pk=job.pk, status=current, **(expect or {})).update(**values)
        if not updated:
            job.refresh_from_db()
            raise StaleState(
                f"Job {job.pk} is {job.status}, not {current}; another worker changed it first."
            )
        expressions = [n for n, value in values.items() if hasattr(value, "resolve_expression")]
        for name, value in values.items():
            if name not in expressions:
                setattr(job, name, value)
        if expressions:
            job.refresh_from_db(fields=expressions)
        # Every change of a job's status is heard live (start, retry, end, a sweep's cancel).
        first_start = target == JobStatus.RUNNING and job.attempts <= 1  # no log lines yet
        last_line = None if first_start else job_last_log_line_id(job)
        job_progress_record(job, last_log_line_id=last_line)
    return job


_C = CompositionState
COMPOSITION_ALLOWED: dict[CompositionState, frozenset[CompositionState]] = {
    # REQUESTED -> FAILED: the request could not even be placed (e.g. the claim kept losing).
    _C.REQUESTED: frozenset({_C.PLACING, _C.REJECTED, _C.FAILED}),
    # PLACING -> REJECTED: no plan; PLACING -> FAILED: the job could not start or roll back.
    # PLACING -> HELD: placed and claimed as a hold (composer.services.holds), not bound.
    _C.PLACING: frozenset({_C.BINDING, _C.HELD, _C.REJECTED, _C.FAILED}),
    # HELD -> PLACING: the hold is applied (its compose job queued); -> RELEASED: it was let
    # go or lapsed, its claims given back.
    _C.HELD: frozenset({_C.PLACING, _C.RELEASED}),
    # BINDING -> FAILED only after the compose job undid what it bound.
    _C.BINDING: frozenset({_C.READY, _C.FAILED}),
    # READY -> DEGRADED: a device it holds (or the path to it) failed or degraded.
    # READY -> RESIZING: devices are added or removed (composer.services.resize).
    _C.READY: frozenset({_C.DECOMPOSING, _C.DEGRADED, _C.RESIZING}),
    # DEGRADED -> READY: the fault cleared by itself; -> HEALING: a self-heal job started.
    _C.DEGRADED: frozenset({_C.READY, _C.HEALING, _C.DECOMPOSING}),
    # HEALING -> READY: the failed devices were replaced; -> DEGRADED: no spare, or the
    # replacement failed and was rolled back (the composition keeps what still works).
    _C.HEALING: frozenset({_C.READY, _C.DEGRADED}),
    # RESIZING -> READY: resized, or the additions rolled back (it keeps what it had); a
    # device lost meanwhile degrades it afterwards (the health pass looks at READY ones).
    _C.RESIZING: frozenset({_C.READY}),
    _C.DECOMPOSING: frozenset({_C.RELEASED}),
    _C.RELEASED: frozenset(),
    # FAILED -> DECOMPOSING: a rollback that could not unbind everything left allocations
    # recorded; decomposing cleans them up.
    _C.FAILED: frozenset({_C.DECOMPOSING}),
    _C.REJECTED: frozenset(),
}


def composition_transition(
    composition: Composition,
    to: CompositionState | str,
    *,
    reason: str,
    actor: Any = None,
    remote_addr: str | None = None,
    source: str = "",
    **fields: Any,
) -> Composition:
    """Move `composition` to state `to`, setting `fields` in the same UPDATE, and audit it.

    Compare-and-set on the state the caller holds: raises StaleState when another worker
    changed it first (the instance is refreshed), InvalidTransition when the table forbids
    the move. Writes a StateChange row (actor, before -> after, reason, remote address) and
    a `composition.state` event in the same transaction as the update; the event is
    published after commit.
    """
    current = CompositionState(composition.state)
    target = CompositionState(to)
    if target not in COMPOSITION_ALLOWED[current]:
        raise InvalidTransition(
            f"Composition {composition.name} is {current.label.lower()}; it cannot become "
            f"{target.label.lower()}.",
            field="state",
        )
    values = {"state": target, "updated_at": timezone.now(), **fields}
    with transaction.atomic():
        updated = Composition.objects.filter(pk=composition.pk, state=current).update(**values)
        if not updated:
            composition.refresh_from_db()
            raise StaleState(
                f"Composition {composition.pk} is {composition.state}, not {current}; "
                "another worker changed it first."
            )
        StateChange.objects.create(
            composition=composition,
            from_state=current,
            to_state=target,
            reason=reason,
            actor=actor if getattr(actor, "pk", None) else None,
            source=source[:100],
            remote_addr=remote_addr or None,
        )
        # Heard live by the tenant and operators once this commits (docs/events.md).
        composition_state_record(composition, from_state=current, to_state=target, reason=reason)
    for name, value in values.items():
        setattr(composition, name, value)
    return composition
