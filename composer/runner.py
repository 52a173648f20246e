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
  job's tenant (`for_tenants`, below);
- progress and log lines reach the database at most once a second each, counted from
  the start (which is itself announced), and the last ones always do: a job done within
  a second writes its log in one INSERT at the end instead of one per line, off the path
  to READY, and a long job still shows its progress and log as it goes;
- every run ends SUCCEEDED (with the function's result) or FAILED (with the error),
  except a transient DriverError while retries remain: then the job goes back to
  QUEUED and `JobRetry` tells the task to retry with back-off.

Who reads a log line is decided where it is logged. Operators read every line as logged.
The job's tenant reads only the lines logged with `extra=for_tenants(...)`, in the words
given there: a driver's lines and fabric code's (loggers under "fabric") name the manager,
switches and ports, and stay with operators whatever they pass, and so does any composer
line that does not say it is fit for tenants (a traceback, a binding id, another
composition). A new logging call is thus operators' only until its author words it for
tenants.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from composer.choices import JobStatus
from composer.errors import BindingFailed, ComposerError, InvalidTransition, StaleState
from composer.events import job_progress_record
from composer.lease import LeaseKeeper, LeaseLost, lease_expiry, lease_holder, task_time_limit_s
from composer.models import Job, JobLogLine
from composer.states import job_transition
from fabric.drivers.base import DriverError

logger = logging.getLogger(__name__)

ProgressFn = Callable[..., None]
"""`progress(done, total, message="")`: how far the work is; cheap to call often."""

JobFn = Callable[[ProgressFn], Mapping[str, Any] | None]
"""The work of a job: called with the progress callback, returns the JSON result."""

CAPTURED_LOGGERS = ("fabric", "composer")
# Loggers whose lines a tenant never reads: fabric code speaks of the fabric's own elements.
OPERATOR_LOGGERS = ("fabric",)
PROGRESS_INTERVAL_S = 1.0
MAX_LOG_LINES = 5000
MAX_LINE_CHARS = 4000

_TENANT_WORDS = "tenant_words"  # the LogRecord attribute `for_tenants` sets
_SAME_WORDS = True


def for_tenants(words: str | None = None) -> dict[str, object]:
    """`extra=` for a logging call of a job whose line the job's tenant reads too: in
    `words`, or (without them) in the line's own words, when those name nothing of the
    fabric's internals (no switch, port, link, manager, binding id; devices and the host
    of the tenant's own composition are theirs to read).

        logger.info("bound %s to %s (%s)", name, host, binding_id,
                    extra=for_tenants(f"Bound GPU {name} to {host}"))
    """
    return {_TENANT_WORDS: _SAME_WORDS if words is None else words}


def _tenant_text(record: logging.LogRecord) -> str:
    """The line of `record` as the job's tenant reads it; "" when it is operators' only."""
    words = getattr(record, _TENANT_WORDS, None)
    if words is None or record.name.split(".", 1)[0] in OPERATOR_LOGGERS:
        return ""
    # The record's own message, never the formatted one: that carries any traceback.
    return record.getMessage() if words is _SAME_WORDS else str(words)


class JobRetry(Exception):
    """The job met a transient DriverError and was handed back to QUEUED; retry the task."""

    def __init__(self, job_id: int, cause: DriverError) -> None:
        super().__init__(f"job {job_id}: {cause.message}")
        self.job_id = job_id
        self.cause = cause


class _JobLogHandler(logging.Handler):
    """Stores the job thread's log records as JobLogLine rows.

    Records are buffered and written together: by a record that comes at least
    PROGRESS_INTERVAL_S after the last write, by a progress write, and at the end of the
    job. Never inside a transaction of the work (the lines would be invisible until its
    commit, or lost with a rollback); they wait for the next chance outside it.
    """

    def __init__(self, job_id: int) -> None:
        super().__init__(level=logging.INFO)
        self.job_id = job_id
        self.thread_id = threading.get_ident()
        self.threads = {self.thread_id}  # the job's own, and helper threads it adopted
        self.buffer: list[JobLogLine] = []
        self.buffer_lock = threading.Lock()
        self.count = 0
        self.last_id: int | None = None  # newest line written, for the job.progress event
        self.last_write = time.monotonic()  # the start, announced by the RUNNING event
        self.setFormatter(logging.Formatter("%(message)s"))

    def adopt(self) -> None:
        """Take the calling thread's records as the job's (a helper thread of the job)."""
        self.threads.add(threading.get_ident())

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread not in self.threads or self.count > MAX_LOG_LINES:
            return
        try:
            message = self.format(record)
            tenant_message = _tenant_text(record)
            with self.buffer_lock:
                self.count += 1
                if self.count > MAX_LOG_LINES:
                    message = tenant_message = f"log truncated after {MAX_LOG_LINES} lines"
                self.buffer.append(
                    JobLogLine(
                        job_id=self.job_id,
                        at=datetime.fromtimestamp(record.created, tz=UTC),
                        level=record.levelname[:10],
                        logger=record.name[:100],
                        message=message[:MAX_LINE_CHARS],
                        tenant_message=tenant_message[:MAX_LINE_CHARS],
                    )
                )
            # Written by the job's own thread only (on its connection, between its steps).
            due = time.monotonic() - self.last_write >= PROGRESS_INTERVAL_S
            if due and record.thread == self.thread_id and not connection.in_atomic_block:
                self.write()
        except Exception:  # logging must never break the job
            self.handleError(record)

    def write(self) -> None:
        with self.buffer_lock:
            lines, self.buffer = self.buffer, []
        if lines:
            self.last_write = time.monotonic()
            if len(lines) == 1:
                # Most writes are one line. A plain INSERT commits on its own; bulk_create
                # would wrap it in BEGIN ... COMMIT: three round trips a line instead of one.
                lines[0].save(force_insert=True)
            else:
                JobLogLine.objects.bulk_create(lines)
            self.last_id = lines[-1].pk or self.last_id


_running = threading.local()  # the log handler of the job this thread runs, if any


def job_log_adopter() -> Callable[[], None]:
    """For work that hands steps to helper threads: a function each of them calls first,
    so that what it logs is the running job's log. A no-op outside a job."""
    handler: _JobLogHandler | None = getattr(_running, "handler", None)
    return handler.adopt if handler is not None else lambda: None


@contextmanager
def _capture_logs(job: Job) -> Iterator[_JobLogHandler]:
    handler = _JobLogHandler(job.pk)
    _running.handler = handler
    restore: list[tuple[logging.Logger, int]] = []
    for name in CAPTURED_LOGGERS:
        log = logging.getLogger(name)
        log.addHandler(handler)
        if log.getEffectiveLevel() > logging.INFO:
            # Let INFO through to our handler; other handlers keep their own levels.
            restore.append((log, log.level))
            log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        _running.handler = None
        for name in CAPTURED_LOGGERS:
            logging.getLogger(name).removeHandler(handler)
        for log, level in restore:
            log.setLevel(level)


class _Progress:
    """The progress callback handed to the work; writes at most once per interval."""

    def __init__(self, job: Job, handler: _JobLogHandler, keeper: LeaseKeeper) -> None:
        self.job = job
        self.handler = handler
        self.keeper = keeper
        self.attempt = job.attempts  # the fencing token this run claimed
        self.pending: tuple[int, int, str] | None = None
        self.last_write = time.monotonic()  # the RUNNING event has just told where it stands

    def __call__(self, done: int, total: int, message: str = "") -> None:
        self.keeper.check()  # a step of a run that lost its lease goes no further
        self.pending = (max(0, int(done)), max(0, int(total)), str(message)[:300])
        if time.monotonic() - self.last_write >= PROGRESS_INTERVAL_S:
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
        return job

    keeper = LeaseKeeper(job, job.attempts, time_limit_s=task_time_limit_s()).start()
    try:
        return _run_claimed(job, fn, retryable, keeper)
    finally:
        keeper.stop()


def _run_claimed(job: Job, fn: JobFn, retryable: bool, keeper: LeaseKeeper) -> Job:
    """The work of a job this run has claimed, under its lease (see `run_job`)."""
    attempt = job.attempts
    with _capture_logs(job) as handler:
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
            handler.write()
            return job
        except (OperationalError, InterfaceError) as exc:
            # The database connection was cut (or a deadlock rolled the step back): the
            # steps are idempotent, so the job resumes rather than fails.
            _hand_over(job, attempt, exc, keeper)
            handler.write()
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


def _hand_over(job: Job, attempt: int, exc: Exception, keeper: LeaseKeeper) -> None:
    """Resume `job` at once after a database error cut its run short, instead of failing
    it (the error says nothing about the job) or waiting for its lease to run out."""
    from composer.services.job_leases import job_hand_over

    logger.warning(
        "job %s: attempt %s lost its database connection (%s: %s); handing it over to resume",
        job.pk,
        attempt,
        type(exc).__name__,
        str(exc).strip()[:300],
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
