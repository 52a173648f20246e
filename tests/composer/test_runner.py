"""run_job: one run per job, its log captured, progress throttled, always a terminal status."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from composer import joblog, runner
from composer.choices import JobKind, JobStatus
from composer.models import Job
from composer.runner import JobRetry, run_job
from fabric.drivers.base import DriverError

fabric_log = logging.getLogger("fabric.services.test")


@pytest.fixture
def job(db: None) -> Job:
    return Job.objects.create(kind=JobKind.INVENTORY_SYNC, target_label="demo")


def _reloaded(job: Job) -> Job:
    return Job.objects.get(pk=job.pk)


def test_a_job_that_returns_succeeds_with_its_result(job: Job) -> None:
    def work(progress: Any) -> dict[str, int]:
        progress(1, 4, "one of four")
        return {"devices": 64}

    run_job(job, work)
    job = _reloaded(job)
    assert job.status == JobStatus.SUCCEEDED
    assert job.result == {"devices": 64}
    assert job.attempts == 1 and job.started_at and job.finished_at and job.heartbeat_at
    assert (job.progress_done, job.progress_total, job.progress_percent) == (4, 4, 100)
    assert job.error == ""


def test_a_job_that_raises_fails_with_the_error_and_the_exception_does_not_escape(
    job: Job,
) -> None:
    def work(progress: Any) -> None:
        raise RuntimeError("cable on fire")

    run_job(job, work)
    job = _reloaded(job)
    assert job.status == JobStatus.FAILED
    assert job.error == "RuntimeError: cable on fire"
    assert job.finished_at is not None
    assert job.log_lines.filter(level="ERROR", message__contains="cable on fire").exists()


def test_log_records_of_fabric_and_composer_loggers_become_log_lines(job: Job) -> None:
    other = logging.getLogger("somewhere.else")

    def work(progress: Any) -> None:
        fabric_log.info("discovered %d devices", 64)
        fabric_log.debug("too chatty to keep")
        logging.getLogger("composer.services.test").warning("pool nearly full")
        other.warning("not ours")

    run_job(job, work)
    lines = list(job.log_lines.values_list("level", "logger", "message"))
    assert ("INFO", "fabric.services.test", "discovered 64 devices") in lines
    assert ("WARNING", "composer.services.test", "pool nearly full") in lines
    assert not [m for _, _, m in lines if m in ("too chatty to keep", "not ours")]
    # The handler is gone afterwards.
    assert not any(
        isinstance(h, joblog.JobLogHandler) for h in logging.getLogger("fabric").handlers
    )


def test_log_lines_written_inside_a_transaction_are_kept(job: Job) -> None:
    def work(progress: Any) -> None:
        with transaction.atomic():
            fabric_log.info("inside")
        fabric_log.info("outside")

    run_job(job, work)
    assert list(job.log_lines.values_list("message", flat=True)).count("inside") == 1


def _recording(calls: list[int], mark: int) -> Callable[[Any], dict[str, Any]]:
    """Work that only appends `mark` to `calls`."""

    def work(progress: Any) -> dict[str, Any]:
        calls.append(mark)
        return {}

    return work


def test_a_duplicate_delivery_exits_without_running_the_work(job: Job) -> None:
    calls: list[int] = []
    run_job(job, _recording(calls, 1))
    duplicate = Job.objects.get(pk=job.pk)
    duplicate.status = JobStatus.QUEUED  # what a stale copy of the message believes
    run_job(duplicate, _recording(calls, 2))
    assert calls == [1]
    assert _reloaded(job).status == JobStatus.SUCCEEDED
    assert _reloaded(job).attempts == 1


def test_a_copy_read_before_another_delivery_ran_and_requeued_the_job_is_stale(
    job: Job,
) -> None:
    stale = Job.objects.get(pk=job.pk)  # read, then another worker ran it and requeued it
    Job.objects.filter(pk=job.pk).update(attempts=1)
    calls: list[int] = []
    run_job(stale, _recording(calls, 1))
    assert calls == []
    assert (_reloaded(job).status, _reloaded(job).attempts) == (JobStatus.QUEUED, 1)


def test_a_transient_driver_error_hands_the_job_back_for_a_retry(job: Job) -> None:
    def work(progress: Any) -> None:
        raise DriverError("manager busy", permanent=False)

    with pytest.raises(JobRetry):
        run_job(job, work)
    job = _reloaded(job)
    assert job.status == JobStatus.QUEUED
    assert "manager busy" in job.error and job.message.startswith("Waiting to retry")

    run_job(job, lambda progress: {"ok": True})
    job = _reloaded(job)
    assert (job.status, job.attempts, job.error) == (JobStatus.SUCCEEDED, 2, "")


def test_a_transient_driver_error_on_the_last_attempt_fails_the_job(job: Job) -> None:
    def work(progress: Any) -> None:
        raise DriverError("manager busy", permanent=False)

    run_job(job, work, retryable=False)
    job = _reloaded(job)
    assert job.status == JobStatus.FAILED
    assert job.error == "Fabric manager error (transient): manager busy"


def test_a_permanent_driver_error_fails_the_job_without_retry(job: Job) -> None:
    def work(progress: Any) -> None:
        raise DriverError("device already bound", permanent=True)

    run_job(job, work)
    job = _reloaded(job)
    assert job.status == JobStatus.FAILED
    assert job.error == "Fabric manager error (permanent): device already bound"


def test_progress_is_written_at_most_once_a_second_but_the_last_report_always(
    job: Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    seen: list[tuple[int, int, str]] = []

    def row() -> tuple[int, int, str]:
        return tuple(  # type: ignore[return-value]
            Job.objects.values_list("progress_done", "progress_total", "message").get(pk=job.pk)
        )

    def work(progress: Any) -> None:
        progress(1, 10, "first")  # within a second of the start, which RUNNING announced
        progress(2, 10, "second")
        seen.append(row())
        clock[0] += 1.5
        progress(3, 10, "third")  # a second later: written
        seen.append(row())
        progress(4, 10, "fourth")  # same second: kept for later
        seen.append(row())
        progress(7, 10, "seventh")  # never written by a tick: by the end
        raise RuntimeError("stop here")

    run_job(job, work)
    assert seen == [(0, 0, ""), (3, 10, "third"), (3, 10, "third")]
    job = _reloaded(job)
    assert (job.progress_done, job.progress_total, job.message) == (7, 10, "seventh")


def test_an_interrupt_still_leaves_a_terminal_status(job: Job) -> None:
    def work(progress: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_job(job, work)
    assert _reloaded(job).status == JobStatus.FAILED


def test_a_job_cancelled_while_running_keeps_its_cancelled_status(job: Job) -> None:
    def work(progress: Any) -> None:
        Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)

    run_job(job, work)
    assert _reloaded(job).status == JobStatus.CANCELLED


# --- who reads a line ---------------------------------------------------------------------


@pytest.fixture
def tenant_job(acme: Any) -> Job:
    return Job.objects.create(kind=JobKind.COMPOSE, tenant=acme, target_label="llm-serve")


def test_a_line_reaches_the_tenant_only_when_worded_for_it_and_never_from_fabric(
    tenant_job: Job,
) -> None:
    composer_log = logging.getLogger("composer.services.test")

    def work(progress: Any) -> None:
        composer_log.info("bound gpu-1 (b-42)", extra=joblog.for_tenants("Bound GPU gpu-1."))
        composer_log.info("verified 1 binding(s) on host-1", extra=joblog.for_tenants())
        composer_log.info("binding b-42 recorded")  # no words for tenants: operators only
        fabric_log.info("manager fm-1 bound gpu-1 behind leaf-3", extra=joblog.for_tenants())
        try:
            raise ValueError("leaf-3 said no")
        except ValueError:
            composer_log.exception("retry failed", extra=joblog.for_tenants())

    run_job(tenant_job, work)
    lines = {m: t for m, t in tenant_job.log_lines.values_list("message", "tenant_message")}
    assert lines["bound gpu-1 (b-42)"] == "Bound GPU gpu-1."
    assert lines["verified 1 binding(s) on host-1"] == "verified 1 binding(s) on host-1"
    assert lines["binding b-42 recorded"] == ""
    assert lines["manager fm-1 bound gpu-1 behind leaf-3"] == ""
    traceback = next(m for m in lines if m.startswith("retry failed"))
    assert "leaf-3 said no" in traceback and lines[traceback] == "retry failed"
    assert lines[f"job {tenant_job.pk} succeeded"] == f"job {tenant_job.pk} succeeded"


def test_a_tenants_job_fails_without_the_managers_own_words(tenant_job: Job, job: Job) -> None:
    def work(progress: Any) -> None:
        raise DriverError("enclosure gpu-a-02 lost power behind cxl-leaf-a", permanent=True)

    for each in (tenant_job, job):
        run_job(each, work)
    mine = _reloaded(tenant_job)
    assert mine.status == JobStatus.FAILED
    assert (
        mine.error == "Fabric manager error (permanent): The fabric manager refused the operation."
    )
    failed = mine.log_lines.get(level="ERROR")
    assert "cxl-leaf-a" in failed.message  # the operators' line keeps the manager's answer
    assert failed.tenant_message == f"Failed: {mine.error}"
    # Fabric work (no tenant) is operators' only: its error keeps the manager's words.
    assert "cxl-leaf-a" in _reloaded(job).error


def test_a_tenants_job_names_an_unexpected_error_without_its_text(tenant_job: Job) -> None:
    def work(progress: Any) -> None:
        raise KeyError("cxl-leaf-a")

    run_job(tenant_job, work)
    job = _reloaded(tenant_job)
    assert job.error == "An unexpected error stopped the job (KeyError)."
    assert "cxl-leaf-a" in job.log_lines.get(level="ERROR").message
