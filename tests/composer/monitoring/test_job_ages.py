"""A job's wait counts from when it (re-)entered the queue, not from its creation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.models import Job
from composer.monitoring.collector import DomainCollector
from composer.monitoring.readiness import readiness
from composer.states import job_transition

pytestmark = pytest.mark.django_db


def gauge(name: str) -> float:
    for family in DomainCollector().collect():
        if family.name == name:
            return float(family.samples[0].value)
    raise KeyError(name)


def test_a_job_retried_now_is_not_long_queued_nor_a_stuck_unsent_job(settings: Any) -> None:
    settings.COMPOSER_READY_OUTBOX_MAX_AGE_S = 60
    job = Job.objects.create(kind=JobKind.values[0])
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    job.refresh_from_db()
    job_transition(job, JobStatus.RUNNING, attempts=1)
    job_transition(job, JobStatus.QUEUED, dispatched_at=None)  # a retry, not yet sent

    assert gauge("composer_jobs_oldest_queued_age_seconds") < 60
    assert gauge("composer_outbox_oldest_unsent_job_age_seconds") < 60
    (outbox,) = readiness(["outbox"])
    assert outbox.ok, outbox.detail


def test_a_job_queued_long_ago_is_long_queued_and_unsent(settings: Any) -> None:
    settings.COMPOSER_READY_OUTBOX_MAX_AGE_S = 60
    job = Job.objects.create(kind=JobKind.values[0])
    Job.objects.filter(pk=job.pk).update(queued_at=timezone.now() - timedelta(minutes=10))

    assert gauge("composer_jobs_oldest_queued_age_seconds") >= 600
    assert gauge("composer_outbox_oldest_unsent_job_age_seconds") >= 600
    (outbox,) = readiness(["outbox"])
    assert not outbox.ok and "1 queued job(s) not sent" in outbox.detail


def test_a_job_sent_later_by_the_dispatch_pass_carries_its_requests_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from composer.monitoring.requestid import request_id, request_id_reset, request_id_set
    from composer.services import dispatch

    token = request_id_set("req-made-it")
    try:
        job = Job.objects.create(kind=JobKind.INVENTORY_SYNC)  # the broker was away
    finally:
        request_id_reset(token)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=1))

    seen: list[str | None] = []

    class Task:
        autoretry_for = ()

        def delay(self, job_id: int) -> None:
            seen.append(request_id())  # what the message's header takes (celery_hooks)

    monkeypatch.setattr(dispatch, "job_task", lambda kind: Task())
    monkeypatch.setattr(dispatch, "broker_emptied", lambda: False)
    assert dispatch.jobs_dispatch() == 1
    assert seen == ["req-made-it"]
    assert request_id() is None
