"""The lease of a running job (composer.lease, in run_job): renewed by a heartbeat while the
work runs, fenced by the attempt, lost to a worker that took the job over."""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.lease import LeaseKeeper
from composer.models import Job
from composer.runner import run_job
from composer.services import dispatch
from composer.services.job_leases import RESUMING

pytestmark = pytest.mark.django_db(transaction=True)  # the heartbeat has its own connection


@pytest.fixture
def job() -> Job:
    return Job.objects.create(kind=JobKind.INVENTORY_SYNC, target_label="demo")


@pytest.fixture
def short_lease(settings: Any) -> float:
    settings.COMPOSER_JOB_LEASE_S = 0.6  # renewed every 0.2 s
    return 0.6


def _taken_over(job: Job) -> None:
    """What another worker does once it took the job over: attempt 2 is running it now."""
    Job.objects.filter(pk=job.pk).update(attempts=2, lease_owner="other pid 2")


def test_a_run_takes_the_lease_and_its_heartbeat_renews_it(job: Job, short_lease: float) -> None:
    seen: list[Any] = []

    def work(progress: Any) -> dict[str, Any]:
        claimed = Job.objects.get(pk=job.pk)
        seen.append((claimed.lease_owner, claimed.lease_expires_at))
        time.sleep(short_lease * 2)  # no progress: only the heartbeat keeps the lease
        seen.append(Job.objects.get(pk=job.pk).lease_expires_at)
        return {}

    start = timezone.now()
    run_job(job, work)

    (owner, first), later = seen
    assert " pid " in owner
    assert first > start and later > first + timedelta(seconds=short_lease)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert (job.lease_owner, job.lease_expires_at) == ("", None)  # cleared at the end


def test_a_run_that_lost_its_lease_has_its_progress_refused_and_stops(
    job: Job, short_lease: float, caplog: pytest.LogCaptureFixture
) -> None:
    after: list[str] = []

    def work(progress: Any) -> dict[str, Any]:
        progress(1, 3, "first step")
        _taken_over(job)
        time.sleep(1.1)  # past the next progress write's throttle
        progress(2, 3, "second step")  # refused: attempt 1 no longer holds the job
        after.append("went on")
        return {}

    with caplog.at_level(logging.WARNING, logger="composer"):
        run_job(job, work)

    job.refresh_from_db()
    assert after == []
    # Not ended, not overwritten: the job is the successor's to finish.
    assert (job.status, job.attempts, job.lease_owner) == (JobStatus.RUNNING, 2, "other pid 2")
    assert job.message != "second step" and job.finished_at is None
    assert "lost its lease" in caplog.text


def test_the_heartbeat_notices_the_takeover_and_the_next_step_stops(
    job: Job, short_lease: float
) -> None:
    after: list[str] = []

    def work(progress: Any) -> dict[str, Any]:
        _taken_over(job)
        time.sleep(short_lease)  # a renewal finds attempt 2 holding it
        progress(1, 2, "next step")  # not even written: the run knows it lost the lease
        after.append("went on")
        return {}

    run_job(job, work)

    assert after == []
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_the_end_of_a_run_that_lost_its_lease_is_refused(job: Job) -> None:
    def work(progress: Any) -> dict[str, Any]:
        _taken_over(job)  # and the work ends before any renewal or progress noticed
        return {"stale": True}

    run_job(job, work)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == (JobStatus.RUNNING, 2, {})


def test_a_failure_of_a_run_that_lost_its_lease_does_not_fail_the_successor(job: Job) -> None:
    def work(progress: Any) -> None:
        _taken_over(job)
        raise RuntimeError("the stale run broke")

    run_job(job, work)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (JobStatus.RUNNING, 2, "")


def test_the_heartbeat_stops_renewing_past_the_task_time_limit(
    job: Job, short_lease: float
) -> None:
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, attempts=1, lease_expires_at=timezone.now()
    )
    keeper = LeaseKeeper(job, 1, time_limit_s=0.3).start()
    try:
        time.sleep(0.5)
        renewed = Job.objects.get(pk=job.pk).lease_expires_at
        time.sleep(0.5)
        assert Job.objects.get(pk=job.pk).lease_expires_at == renewed  # no longer renewed
    finally:
        keeper.stop()
    assert renewed is not None and not keeper.lost.is_set()


def _cut_connections(*, own_too: bool) -> None:
    """What `pg_terminate_backend` does to a worker's connections (a failover, a restart,
    the chaos benchmark): every other session of the test database, and this one's too."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        if own_too:
            with contextlib.suppress(OperationalError):
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")


def test_a_run_whose_database_connection_is_cut_is_resumed_at_once_not_failed(
    job: Job, postgres: None
) -> None:
    """The chaos run of issue 11: a terminated connection failed the job ("job N failed"),
    the end could not be written either, and the job waited for its lease to run out.
    Now it is queued again to resume from its last step, and sent, straight away."""

    def work(progress: Any) -> dict[str, Any]:
        progress(1, 3, "half-way")
        _cut_connections(own_too=True)
        Job.objects.filter(pk=job.pk).exists()  # the next step finds the connection gone
        return {}

    with mock.patch.object(dispatch, "_send") as send:
        run_job(job, work)

    job.refresh_from_db()  # the runner reopened its connection
    assert (job.status, job.resumes, job.message) == (JobStatus.QUEUED, 1, RESUMING)
    assert (job.error, job.lease_owner, job.lease_expires_at) == ("", "", None)
    send.assert_called_once_with(job.pk, job.kind)
    assert job.dispatched_at is not None
    assert job.log_lines.filter(message__contains="lost its database connection").exists()


def test_a_deadlock_that_rolled_a_step_back_resumes_the_job(job: Job) -> None:
    def work(progress: Any) -> None:
        raise OperationalError("deadlock detected")

    with mock.patch.object(dispatch, "_send") as send:
        run_job(job, work)

    job.refresh_from_db()
    assert (job.status, job.resumes, job.attempts) == (JobStatus.QUEUED, 1, 1)
    send.assert_called_once_with(job.pk, job.kind)


def test_the_heartbeat_reconnects_after_its_connection_was_cut(
    job: Job, short_lease: float, postgres: None
) -> None:
    """Django does not reopen a broken connection outside a request: the keeper's thread
    renewed nothing more, and the live run lost its job to the lease sweep."""
    renewals: list[Any] = []

    def work(progress: Any) -> dict[str, Any]:
        time.sleep(short_lease)
        _cut_connections(own_too=False)  # the heartbeat thread's connection goes
        for _ in range(3):
            time.sleep(short_lease)
            renewals.append(Job.objects.get(pk=job.pk).lease_expires_at)
        return {}

    run_job(job, work)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert renewals[0] < renewals[1] < renewals[2]  # renewed again after the cut


def test_a_job_cut_short_too_often_fails_saying_why_not_blaming_a_dead_worker(
    job: Job, settings: Any
) -> None:
    settings.COMPOSER_JOB_MAX_RESUMES = 3
    Job.objects.filter(pk=job.pk).update(resumes=3)
    job.refresh_from_db()

    def work(progress: Any) -> None:
        raise OperationalError("terminating connection due to administrator command")

    with mock.patch.object(dispatch, "_send") as send:
        run_job(job, work)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "cut short 4 times" in job.error and "database connection was cut" in job.error
    assert "worker died" not in job.error
    send.assert_not_called()
