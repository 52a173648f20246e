"""Job status changes: only along the table, and only by compare-and-set."""

from __future__ import annotations

import pytest
from django.db.models import F

from composer.choices import JobKind, JobStatus
from composer.errors import InvalidTransition, StaleState
from composer.models import Job
from composer.states import JOB_ALLOWED, job_transition


@pytest.fixture
def job(db: None) -> Job:
    return Job.objects.create(kind=JobKind.INVENTORY_SYNC)


def test_every_status_has_a_row_and_terminal_ones_lead_nowhere() -> None:
    assert set(JOB_ALLOWED) == set(JobStatus)
    for status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED):
        assert JOB_ALLOWED[status] == frozenset()


def test_an_allowed_transition_updates_the_row_and_the_instance(job: Job) -> None:
    job_transition(job, JobStatus.RUNNING, attempts=F("attempts") + 1, message="go")
    assert (job.status, job.attempts, job.message) == (JobStatus.RUNNING, 1, "go")
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.RUNNING, 1)


def test_a_transition_the_table_forbids_is_refused(job: Job) -> None:
    with pytest.raises(InvalidTransition):
        job_transition(job, JobStatus.SUCCEEDED)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_a_second_worker_loses_the_compare_and_set(job: Job) -> None:
    other = Job.objects.get(pk=job.pk)
    job_transition(job, JobStatus.RUNNING)
    with pytest.raises(StaleState):
        job_transition(other, JobStatus.RUNNING)
    assert other.status == JobStatus.RUNNING  # refreshed so the caller can see why
