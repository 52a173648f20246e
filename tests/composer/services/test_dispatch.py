"""The job outbox: a job the broker refuses waits QUEUED and is sent once the broker is back;
a message the broker lost is sent again; a retry is not sent before its countdown."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from django.utils import timezone

from composer import tasks
from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services import dispatch
from composer.services.compositions import composition_request
from composer.services.dispatch import (
    JOB_TASKS,
    broker_emptied,
    broker_marker_set,
    job_task,
    jobs_dispatch,
)
from fabric.models import FabricManager
from tests.support.outage import OwnRedis, celery_on

pytestmark = pytest.mark.django_db

ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}
BROKER_DOWN = ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


@pytest.fixture(autouse=True)
def broker_kept() -> Any:
    """The broker kept its messages, unless a test puts the real `broker_emptied` back:
    the first pass of a test run would otherwise find no marker and send everything."""
    with mock.patch.object(dispatch, "broker_emptied", return_value=False):
        yield


def aged(job: Job, **ago_s: float) -> None:
    """Move `job`'s timestamps (`created_at=10` etc.) that many seconds into the past."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        **{field: now - timedelta(seconds=s) for field, s in ago_s.items()}
    )


def test_every_job_kind_has_its_task() -> None:
    assert set(JOB_TASKS) == set(JobKind.values)
    for kind in JobKind.values:
        assert job_task(kind).name == f"composer.tasks.{JOB_TASKS[kind]}"


def test_a_compose_accepted_while_the_broker_is_away_waits_and_comes_up_once_it_is_back(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The outage of issue 11: the compose was failed ("could not be queued") and its
    devices given back. Now it keeps its claims, waits, and is composed after the outage."""
    with (
        mock.patch.object(tasks.composition_compose_task, "delay", side_effect=BROKER_DOWN),
        django_capture_on_commit_callbacks(execute=True),
    ):
        composition = composition_request(
            tenant=acme, requested_by=alice, spec=ONE_GPU, name="during-outage"
        )
        job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
        aged(job, created_at=10)
        assert jobs_dispatch() == 0  # still away: nothing sent, nothing failed

    composition.refresh_from_db()
    job.refresh_from_db()
    assert composition.state == CompositionState.PLACING
    assert composition.allocations.filter(released_at__isnull=True).count() == 1
    assert (job.status, job.error, job.dispatched_at) == (JobStatus.QUEUED, "", None)
    assert job.message == "Waiting for the task queue"

    assert jobs_dispatch() == 1  # the broker is back (eager: the job runs here)
    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.dispatched_at is not None
    assert composition.state == CompositionState.READY


def test_a_dispatch_pass_stops_at_the_first_refusal_and_keeps_every_job_queued(
    db: None,
) -> None:
    jobs = [Job.objects.create(kind=JobKind.INVENTORY_SYNC) for _ in range(3)]
    for job in jobs:
        aged(job, created_at=10)
    with mock.patch.object(tasks.inventory_sync_task, "delay", side_effect=BROKER_DOWN) as delay:
        assert jobs_dispatch() == 0
    assert delay.call_count == 1
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.QUEUED}


def test_a_job_just_committed_is_left_to_its_own_enqueue(db: None) -> None:
    Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    with mock.patch.object(tasks.inventory_sync_task, "delay") as delay:
        assert jobs_dispatch() == 0
    delay.assert_not_called()


def test_a_message_lost_with_a_redis_restart_is_sent_again_after_the_redispatch_delay(
    db: None, settings: Any
) -> None:
    """Redis without persistence forgets its queues on restart; the row remembers."""
    settings.COMPOSER_JOB_REDISPATCH_S = 60
    lost = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    aged(lost, created_at=120, dispatched_at=90)
    waiting = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    aged(waiting, created_at=120, dispatched_at=30)
    with mock.patch.object(tasks.inventory_sync_task, "delay") as delay:
        assert jobs_dispatch() == 1
        delay.assert_called_once_with(lost.pk)
        # Sent again now: not again until another COMPOSER_JOB_REDISPATCH_S has passed.
        assert jobs_dispatch() == 0
    lost.refresh_from_db()
    assert (timezone.now() - lost.dispatched_at).total_seconds() < 5


def test_a_job_handed_back_for_a_retry_is_not_sent_again_before_its_countdown(
    db: None, settings: Any
) -> None:
    """Celery holds the retry's message until its countdown (at most the task's
    retry_backoff_max); sending the job earlier would run it before its back-off."""
    settings.COMPOSER_JOB_REDISPATCH_S = 60
    countdown_max = getattr(tasks.composition_compose_task, "retry_backoff_max")  # noqa: B009
    now = timezone.now()
    retrying = Job.objects.create(
        kind=JobKind.COMPOSE,
        attempts=1,
        started_at=now - timedelta(seconds=200),
        heartbeat_at=now - timedelta(seconds=countdown_max + 30),
        dispatched_at=now - timedelta(seconds=200),
    )
    with mock.patch.object(tasks.composition_compose_task, "delay") as delay:
        assert jobs_dispatch() == 0
        Job.objects.filter(pk=retrying.pk).update(
            heartbeat_at=now - timedelta(seconds=countdown_max + 61)
        )
        assert jobs_dispatch() == 1  # its retry's message was lost too
    delay.assert_called_once_with(retrying.pk)


def test_jobs_that_are_running_or_finished_are_never_dispatched(db: None) -> None:
    old = timezone.now() - timedelta(hours=1)
    for status in (JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED):
        Job.objects.create(kind=JobKind.INVENTORY_SYNC, status=status, started_at=old)
    Job.objects.update(created_at=old)
    with mock.patch.object(tasks.inventory_sync_task, "delay") as delay:
        assert jobs_dispatch() == 0
    delay.assert_not_called()


def test_a_duplicate_delivery_of_a_dispatched_job_is_a_no_op(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Why re-sending is safe: the runner claims a job QUEUED -> RUNNING by compare-and-set."""
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(tenant=acme, requested_by=alice, spec=ONE_GPU, name="c")
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    assert job.status == JobStatus.SUCCEEDED and job.dispatched_at is not None

    tasks.composition_compose_task.delay(job.pk)  # a stale second message

    job.refresh_from_db()
    assert job.attempts == 1
    assert Composition.objects.get(pk=composition.pk).state == CompositionState.READY


def test_the_broker_marker_is_gone_exactly_when_redis_restarted_empty(tmp_path: Any) -> None:
    """The marker lives in the broker's database: a restart without persistence takes it
    with the queued messages, and the next pass knows at once; it stays gone until a pass
    sent every queued job again."""
    with OwnRedis.running(tmp_path) as own, celery_on(own.url):
        assert broker_emptied() is True  # a new broker: nothing is known to be held
        assert broker_emptied() is True  # until the re-sends are done
        broker_marker_set()
        assert broker_emptied() is False
        own.stop()
        assert broker_emptied() is False  # away: the pass's sends fail anyway
        own.start()
        assert broker_emptied() is True


def test_a_broker_that_is_not_redis_is_never_taken_as_emptied() -> None:
    with celery_on("memory://"):
        assert broker_emptied() is False
    with celery_on("redis://a:26379;redis://b:26379"):  # a URL only kombu reads
        assert broker_emptied() is False


def test_after_a_redis_restart_every_queued_job_is_sent_again_at_once(
    db: None, settings: Any, tmp_path: Any
) -> None:
    """Issue 11's chaos run: jobs whose message a Redis restart took waited a minute or
    more (COMPOSER_JOB_REDISPATCH_S, plus the retry back-off for one handed back by the
    lease sweep). Now the first pass after the restart sends them."""
    settings.COMPOSER_JOB_REDISPATCH_S = 60
    fresh = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    aged(fresh, created_at=20, dispatched_at=10)
    now = timezone.now()
    handed_back = Job.objects.create(
        kind=JobKind.COMPOSE,
        attempts=1,
        started_at=now - timedelta(seconds=30),
        heartbeat_at=now - timedelta(seconds=5),
        dispatched_at=now - timedelta(seconds=5),
    )
    aged(handed_back, created_at=40)
    running = Job.objects.create(kind=JobKind.INVENTORY_SYNC, status=JobStatus.RUNNING)
    aged(running, created_at=20, dispatched_at=10)
    just_committed = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    with (
        OwnRedis.running(tmp_path) as own,
        celery_on(own.url),
        mock.patch.object(dispatch, "broker_emptied", broker_emptied),
        mock.patch.object(tasks.inventory_sync_task, "delay") as sync_delay,
        mock.patch.object(tasks.composition_compose_task, "delay") as compose_delay,
    ):
        broker_marker_set()
        assert jobs_dispatch() == 0  # the broker holds them: not due yet
        own.stop()
        own.start()
        with mock.patch.object(dispatch, "_send", side_effect=[None, ConnectionError("gone")]):
            assert jobs_dispatch() == 1  # refused half-way: the loss is not forgotten
        assert broker_emptied() is True
        assert jobs_dispatch() == 2
        assert jobs_dispatch() == 0  # one restart, one complete re-send
    sync_delay.assert_called_once_with(fresh.pk)
    compose_delay.assert_called_once_with(handed_back.pk)
    assert just_committed.pk not in {c.args[0] for c in sync_delay.call_args_list}


def test_a_job_sent_whose_record_fails_does_not_fail_the_request_that_made_it(db: None) -> None:
    """`job_enqueue` runs after the request's commit: a database error while recording the
    send must not turn a saved change into an error answer (a retry would make it twice).
    Unrecorded, the dispatch pass sends it again; a duplicate is a no-op."""
    job = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    with (
        mock.patch.object(dispatch, "_send") as send,
        mock.patch.object(
            Job.objects, "filter", side_effect=OperationalError("the connection is lost")
        ),
    ):
        assert dispatch.job_enqueue(job) is True
    send.assert_called_once_with(job.pk, job.kind)
    assert Job.objects.get(pk=job.pk).dispatched_at is None
