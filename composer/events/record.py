"""Recording events: in the caller's transaction, published after it commits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from composer.choices import EventType
from composer.events.outbox import event_publish
from composer.events.payloads import CompositionStatePayload, JobProgressPayload
from composer.models import Composition, Event, EventAudience, Job, JobLogLine


def event_record(
    type: EventType | str,
    payload: Mapping[str, Any],
    *,
    tenant_ids: Iterable[int] = (),
    composition: Composition | int | None = None,
    job: Job | None = None,
) -> Event:
    """Write an event and its audience in the caller's transaction; publish after commit.

    `tenant_ids` are the tenants that hear of it (operators always do); `composition` and
    `job` route it to those subscription groups too (a composition may be given by id when
    `job` is given: the job's tenant is the owner). The payload's `type` is set to `type`
    (ValueError if it says otherwise). Two or three queries: the event, the audience rows
    in one insert, and after commit the `published_at` update.

    No `full_clean()`: it would look every foreign key up again, in the compose hot path,
    for values this module builds itself.
    """
    event_type = EventType(type)
    body = dict(payload)
    if body.setdefault("type", event_type.value) != event_type.value:
        raise ValueError(f"payload type {body['type']!r} is not the event type {event_type!r}")
    tenants = sorted({int(tenant) for tenant in tenant_ids})
    event = Event(type=event_type, at=timezone.now(), payload=body, job=job)
    if isinstance(composition, Composition):
        event.composition = composition
    elif composition is not None:
        event.composition_id = composition
    if tenants:
        with transaction.atomic(savepoint=False):
            event.save(force_insert=True)
            EventAudience.objects.bulk_create(
                [EventAudience(event_id=event.pk, tenant_id=tenant) for tenant in tenants]
            )
    else:
        event.save(force_insert=True)
    transaction.on_commit(partial(event_publish, event, tenant_ids=tenants), robust=True)
    return event


def composition_state_record(
    composition: Composition, *, from_state: str, to_state: str, reason: str
) -> Event:
    """Record a composition's change of state (`composer.states.composition_transition`)."""
    payload: CompositionStatePayload = {
        "type": "composition.state",
        "composition_id": composition.pk,
        "name": composition.name,
        "tenant_id": composition.tenant_id,
        "from": str(from_state),
        "to": str(to_state),
        "reason": reason[:500],
    }
    return event_record(
        EventType.COMPOSITION_STATE,
        payload,
        tenant_ids=(composition.tenant_id,),
        composition=composition,
    )


# `Job.target_type` of the compose/decompose jobs (composer.services.compositions, which
# imports this module through composer.states, so the constant is repeated here).
_COMPOSITION_TARGET = "composition"


def job_progress_record(job: Job, *, last_log_line_id: int | None = None) -> Event:
    """Record where `job` stands: its status changes (`composer.states.job_transition`)
    and its progress reports (`composer.runner`, at most one a second).

    Heard by the job's tenant, or by operators only when it has none (fabric work).
    """
    composition_id = job.target_id if job.target_type == _COMPOSITION_TARGET else None
    payload: JobProgressPayload = {
        "type": "job.progress",
        "job_id": job.pk,
        "kind": job.kind,
        "status": str(job.status),
        "tenant_id": job.tenant_id,
        "composition_id": composition_id,
        "target_label": job.target_label,
        "progress_done": job.progress_done,
        "progress_total": job.progress_total,
        "percent": job.progress_percent,
        "message": job.message,
        "error": job.error[:1000],
        "last_log_line_id": last_log_line_id,
    }
    return event_record(
        EventType.JOB_PROGRESS,
        payload,
        tenant_ids=(job.tenant_id,) if job.tenant_id else (),
        composition=composition_id,
        job=job,
    )


def job_last_log_line_id(job: Job) -> int | None:
    """The id of the newest log line `job` has (one query), for a status event."""
    return JobLogLine.objects.filter(job_id=job.pk).aggregate(newest=Max("id"))["newest"]
