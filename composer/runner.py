"""run_job(): the one place that starts a job, records its progress and log, and ends it.

Tasks stay thin because of this: they load a job and hand `run_job` a function. The
runner guarantees that

- a job runs once at a time: QUEUED -> RUNNING is a compare-and-set that also takes the
  job's lease (`composer.lease`), so a redelivered message finds the job claimed and exits
  (naming the holder); a heartbeat thread renews the lease while the work runs, and a job
  whose worker died is taken over once its lease expires and resumes from its last step;
- the attempt number is the fencing token: progress, the end and the renewal all require
  the attempt this run claimed, so a run that lost its lease cannot overwrite its
  successor; its next step raises `LeaseLost`, and it stops without ending the job;
- what the work logs (loggers under "fabric" and "composer", INFO and up, from the
  job's own thread) is stored as JobLogLine rows, each for operators only or also for the
  job's tenant (`composer.joblog`: `for_tenants`);
- progress and log lines reach the database at most once a second each, counted from
  the start (which is itself announced), and the last ones always do: a job done within
  a second writes its log in one INSERT at the end instead of one per line, off the path
  to READY, and a long job still shows its progress and log as it goes;
- every run ends SUCCEEDED (with the function's result) or FAILED (with the error),
  except a transient DriverError while retries remain: then the job goes back to
  QUEUED and `JobRetry` tells the task to retry with back-off.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.utils import timezone

from composer import joblog
from composer.choices import JobStatus
from composer.errors import BindingFailed, ComposerError, InvalidTransition, StaleState
from composer.events import job_progress_record
from composer.joblog import JobLogHandler, capture_logs, for_tenants
from composer.lease import LeaseKeeper, LeaseLost, lease_expiry, lease_holder, task_time_limit_s
from composer.models import Job
from composer.monitoring.metrics import job_run_observe
from composer.states import job_transition
from fabric.drivers.base import DriverError

logger = logging.getLogger(__name__)

ProgressFn = Callable[..., None]
"""`progress(done, total, message="")`: how far the work is; cheap to call often."""

JobFn = Callable[[ProgressFn], Mapping[str, Any] | None]
"""The work of a job: called with the progress callback, returns the JSON result."""


class JobRetry(Exception):
    """The job met a transient DriverError and was handed back to QUEUED; retry the task."""

    def __init__(self, job_id: int, cause: DriverError) -> None:
        super().__init__(f"job {job_id}: {cause.message}")
        self.job_id = job_id
        self.cause = cause


class _Progress:
    """The progress callback handed to the work; writes at most once per interval."""

    def __init__(self, job: Job, handler: JobLogHandler, keeper: LeaseKeeper) -> None:
        self.job = job
        self.handler = handler
        self.keeper = keeper
        self.attempt = job.attempts  # the fencing token this run claimed
        self.pending: tuple[int, int, str] | None = None
        self.last_write = time.monotonic()  # the RUNNING event has just told where it stands

    def __call__(self, done: int, total: int, message: str = "") -> None:
        self.keeper.check()  # a step of a run that lost its lease goes no further
        self.pending = (max(0, int(done)), max(0, int(total)), str(message)[:300])
        if time.monotonic() - self.last_write >= joblog.PROGRESS_INTERVAL_S:
            self.write()

    def write(self) -> None:
        if self.pending is None:
            return
        done, total, message = self.pending
        self.pending = None
        self.last_write = time.monotonic()
        # Fenced: only while this run's attempt still holds the job.
        updated = Job.objects.filter(
            pk=self.job.pk, status=JobStatus.RUNNING, attempts=self.attempt
        ).update(
            progress_done=done, progress_total=total, message=message, heartbeat_at=timezone.now()
        )
        self.job.progress_done, self.job.progress_total, self.job.message = done, total, message
        if not connection.in_atomic_block:
            self.handler.write()
        if not updated:  # taken over (or ended by someone else): this run stops here
            self.keeper.lost.set()
            raise LeaseLost(self.job.pk, self.attempt)
        job_progress_record(self.job, last_log_line_id=self.handler.last_id)

    def final_fields(self) -> dict[str, Any]:
        """The last report, if it was not written yet, for the terminal update."""
        if self.pending is None:
            return {}
        done, total, message = self.pending
        self.pending = None
        return {"progress_done": done, "progress_total": total, "message": message}


def _driver_words(job: Job, exc: DriverError) -> str:
    """What a fabric manager's error says to whoever reads `job`. A tenant's job never
    carries the manager's own answer (it may name the manager's switches and enclosures):
    composer's retelling of it (`BindingFailed`), or else a sentence saying which kind of
    error it was; the manager's answer is in the operators' log line."""
    if job.tenant_id is None or isinstance(exc, BindingFailed):
        return exc.message
    if exc.permanent:
        return "The fabric manager refused the operation."
    return "The fabric manager is busy or did not answer in time."


def _error_text(job: Job, exc: BaseException) -> str:
    """The job's `error`: read on its page and in the API and live events, by its tenant too.
    An unexpected exception's text is for operators (who have its traceback in the log)."""
    if type(exc).__name__ == "SoftTimeLimitExceeded":
        return "The job ran past its time limit and was stopped."
    if isinstance(exc, DriverError):
        kind = "permanent" if exc.permanent else "transient"
        return f"Fabric manager error ({kind}): {_driver_words(job, exc)}"
    if isinstance(exc, ComposerError):
        return exc.message
    if job.tenant_id is not None:
        return f"An unexpected error stopped the job ({type(exc).__name__})."
    return f"{type(exc).__name__}: {exc}"


_LEASE_CLEARED: dict[str, Any] = {"lease_owner": "", "lease_expires_at": None}


def _finish(job: Job, to: JobStatus, attempt: int, **fields: Any) -> None:
    try:
        job_transition(
            job,
            to,
            expect={"attempts": attempt},  # fenced: not if another worker took it over
            finished_at=timezone.now(),
            heartbeat_at=timezone.now(),
            **_LEASE_CLEARED,
            **fields,
        )
    except (StaleState, InvalidTransition):
        # Taken over (its successor ends it) or ended by someone else: theirs is the last word.
        logger.warning(
            "job %s was already %s (attempt %s); not marking it %s",
            job.pk,
            job.status,
            job.attempts,
            to,
        )
        job_run_observe(kind=job.kind, outcome="lease_lost")
        return
    job_run_observe(kind=job.kind, outcome=JobStatus(to).value, created_at=job.created_at)


def run_job(job: Job, fn: JobFn, *, retryable: bool = True) -> Job:
    """Run `fn` as `job` and leave the job in a terminal status (or QUEUED for a retry).

    `retryable` is false on the task's last attempt: a transient DriverError then fails
    the job like a permanent one. Raises JobRetry (job back in QUEUED) only for a
    transient DriverError while `retryable`; re-raises BaseExceptions such as SystemExit
    after recording FAILED. Any other exception ends the job FAILED and is not raised.
    `LeaseLost` (another worker took the job over) returns with the job left to that worker.
    """
    now = timezone.now()
    try:
        # Plain values, not F() expressions that would cost a read back: the compare-and-set
        # on QUEUED and on the attempts this process read lets one process through, and a
        # delivery that ran meanwhile makes this one stale.
        job_transition(
            job,
            JobStatus.RUNNING,
            expect={"attempts": job.attempts},
            started_at=job.started_at or now,
            heartbeat_at=now,
            finished_at=None,
            attempts=job.attempts + 1,
            error="",
            lease_owner=lease_holder(),
            lease_expires_at=lease_expiry(now),
        )
    except (StaleState, InvalidTransition):
        if job.status == JobStatus.RUNNING:
            # A live holder keeps it; if that worker is dead, the lease sweep resumes it.
            logger.info(
                "job %s is running (attempt %s) under a lease held by %s until %s: "
                "duplicate delivery ignored",
                job.pk,
                job.attempts,
                job.lease_owner or "an unknown worker",
                f"{job.lease_expires_at:%H:%M:%S}" if job.lease_expires_at else "its end",
            )
        else:
            logger.info("job %s is %s, not queued: duplicate delivery ignored", job.pk, job.status)
        job_run_observe(kind=job.kind, outcome="duplicate")
        return job

    keeper = LeaseKeeper(job, job.attempts, time_limit_s=task_time_limit_s()).start()
    try:
        return _run_claimed(job, fn, retryable, keeper)
    finally:
        keeper.stop()


def _run_claimed(job: Job, fn: JobFn, retryable: bool, keeper: LeaseKeeper) -> Job:
    """The work of a job this run has claimed, under its lease (see `run_job`)."""
    attempt = job.attempts
    with capture_logs(job) as handler:
        progress = _Progress(job, handler, keeper)
        logger.info(
            "job %s (%s) started, attempt %s",
            job.pk,
            job.kind,
            job.attempts,
            extra=for_tenants(),
        )
        try:
            result = fn(progress)
            keeper.check()  # the work ended, but another worker holds the job now
        except LeaseLost:
            logger.warning(
                "job %s: attempt %s lost its lease to another worker; stopping here, "
                "without rolling back or ending the job (the new holder resumes it)",
                job.pk,
                attempt,
            )
            _write_or_drop(handler, job)
            job_run_observe(kind=job.kind, outcome="lease_lost")
            return job
        except (OperationalError, InterfaceError) as exc:
            # The database connection was cut (or a deadlock rolled the step back): the
            # steps are idempotent, so the job resumes rather than fails.
            _hand_over(job, attempt, exc, keeper)
            _write_or_drop(handler, job)
            job_run_observe(kind=job.kind, outcome="handed_over")
            return job
        except DriverError as exc:
            if not exc.permanent and retryable:
                logger.warning(
                    "job %s: transient fabric manager error, will retry: %s",
                    job.pk,
                    exc,
                    extra=for_tenants(f"{_driver_words(job, exc)} Trying again shortly."),
                )
                handler.write()
                _requeue(job, exc, progress, attempt)
                job_run_observe(kind=job.kind, outcome="retried")
                raise JobRetry(job.pk, exc) from exc
            error = _error_text(job, exc)
            logger.error(
                "job %s failed: Fabric manager error (%s): %s",
                job.pk,
                "permanent" if exc.permanent else "transient",
                exc.message,
                extra=for_tenants(f"Failed: {error}"),
            )
            handler.write()
            _finish(job, JobStatus.FAILED, attempt, error=error, **progress.final_fields())
        except Exception as exc:
            error = _error_text(job, exc)
            logger.exception("job %s failed", job.pk, extra=for_tenants(f"Failed: {error}"))
            handler.write()
            _finish(job, JobStatus.FAILED, attempt, error=error, **progress.final_fields())
        except BaseException as exc:
            handler.write()
            _finish(
                job,
                JobStatus.FAILED,
                attempt,
                error=_error_text(job, exc),
                **progress.final_fields(),
            )
            raise
        else:
            logger.info("job %s succeeded", job.pk, extra=for_tenants())
            handler.write()
            final = progress.final_fields()
            if job.progress_total or final.get("progress_total"):
                total = final.get("progress_total", job.progress_total)
                final.update(progress_done=total, progress_total=total)
            _finish(job, JobStatus.SUCCEEDED, attempt, result=dict(result or {}), **final)
    return job


def _write_or_drop(handler: JobLogHandler, job: Job) -> None:
    """Write the job's last log lines if the database takes them: a run that stops without
    ending its job must not raise out of the task for its log alone."""
    try:
        handler.write()
    except DatabaseError as exc:
        logger.warning("job %s: its last log lines were not written (%s)", job.pk, exc)


def _hand_over(job: Job, attempt: int, exc: Exception, keeper: LeaseKeeper) -> None:
    """Resume `job` at once after a database error cut its run short, instead of failing
    it (the error says nothing about the job) or waiting for its lease to run out."""
    from composer.services.job_leases import job_hand_over

    earlier = exc.__context__
    logger.warning(
        "job %s: attempt %s lost its database connection (%s: %s)%s; handing it over to resume",
        job.pk,
        attempt,
        type(exc).__name__,
        str(exc).strip()[:300],
        # What the run was handling when the database went (a refused bind...): not lost.
        f" while handling {type(earlier).__name__}: {str(earlier)[:300]}"
        if earlier is not None and not isinstance(earlier, DatabaseError)
        else "",
    )
    keeper.stop()  # a renewal must not push the lease forward while it is handed over
    connection.close()  # Django does not reconnect a broken connection by itself
    try:
        job_hand_over(job, attempt, "its database connection was cut")
    except Exception:  # the database still away: the lease runs out and the sweep resumes it
        logger.warning("job %s: not handed over; its lease will run out", job.pk, exc_info=True)
        connection.close()


def _requeue(job: Job, exc: DriverError, progress: _Progress, attempt: int) -> None:
    try:
        job_transition(
            job,
            JobStatus.QUEUED,
            expect={"attempts": attempt},
            **_LEASE_CLEARED,
            error=_error_text(job, exc),
            message=f"Waiting to retry: {_driver_words(job, exc)}"[:300],
            heartbeat_at=timezone.now(),
            **{k: v for k, v in progress.final_fields().items() if k != "message"},
        )
    except (StaleState, InvalidTransition):
        logger.warning("job %s changed while requeueing; it will not be retried", job.pk)
