"""The lease a worker holds on the job it runs, renewed by a heartbeat, fenced by the attempt.

A RUNNING job names the worker process that runs it (`Job.lease_owner`) and how long that
claim holds (`Job.lease_expires_at`, COMPOSER_JOB_LEASE_S ahead). While the work runs, a
small thread (`LeaseKeeper`) pushes the expiry forward every third of the lease. A worker
that dies (killed, its machine lost) stops renewing; once the lease has expired, the lease
sweep or the next delivery of the job's message takes the job over (Kubernetes'
coordination leases work the same way) and it resumes from its last recorded step.

The attempt number is the fencing token. Taking the job over changes it, and every write
of a run (progress, the end, the renewal) requires the attempt it claimed, so a worker that
was only slow, not dead, cannot overwrite its successor: its renewal finds the job gone and
its next step raises `LeaseLost`, which stops the work without rolling anything back and
without ending the job (the new holder does both, as the steps are idempotent).

A stuck process must not hold a job forever: the keeper stops renewing once the run has
outlived its task's hard time limit, so the sweep takes the job over.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from composer.choices import JobStatus
from composer.models import Job

logger = logging.getLogger(__name__)


class LeaseLost(Exception):
    """This worker no longer holds the job's lease: another one took the job over.

    Raised by a step of the work (a progress report, the record of a binding). The work
    stops where it is; nothing is rolled back and the job is not ended here.
    """

    def __init__(self, job_id: int, attempt: int) -> None:
        super().__init__(f"job {job_id}: attempt {attempt} lost its lease")
        self.job_id = job_id
        self.attempt = attempt


# Why a run stops where it is without undoing anything: another worker holds the job
# (LeaseLost), or the database connection was cut or a deadlock rolled a step back (the
# runner hands the job over at once, and it resumes: what was done can still finish).
STOP_WITHOUT_UNDO: tuple[type[BaseException], ...] = (LeaseLost, OperationalError, InterfaceError)


def lease_confirm(job: Job) -> None:
    """Raise LeaseLost unless `job` is still RUNNING under the attempt this process claimed.

    Asked of the database, not of the heartbeat: called before a compensating step (a
    rollback) that would undo what a successor did, after a wait or a silence that may have
    outlasted the lease (a paused process, a cut connection) before the keeper noticed.
    """
    if not Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts).exists():
        raise LeaseLost(job.pk, job.attempts)


def lease_seconds() -> float:
    """How long a lease holds without a renewal (COMPOSER_JOB_LEASE_S)."""
    return float(getattr(settings, "COMPOSER_JOB_LEASE_S", 10))


def lease_expiry(now: datetime | None = None) -> datetime:
    """When a lease taken or renewed `now` expires."""
    return (now or timezone.now()) + timedelta(seconds=lease_seconds())


def lease_holder() -> str:
    """Who takes a lease: the Celery worker's node name (or the machine's) and the pid of
    the process that runs the job, which is what dies when a pool child is killed."""
    from celery import current_task

    request = getattr(current_task, "request", None)
    node = getattr(request, "hostname", None) or socket.gethostname()
    return f"{node} pid {os.getpid()}"[:200]


def task_time_limit_s() -> float | None:
    """The hard time limit of the Celery task running now, if any (None outside a task)."""
    from celery import current_task

    limit = getattr(current_task, "time_limit", None) if current_task is not None else None
    return float(limit) if limit else None


class LeaseKeeper:
    """Renews the lease of `job`'s attempt `attempt` every third of the lease, in a thread.

    `lost` is set when a renewal finds the job no longer RUNNING under this attempt (taken
    over, or ended by someone else); the work's next step then raises LeaseLost. A renewal
    that fails (the database away for a moment) is tried again at the next beat: if the
    database stays away past the lease, the job is taken over and the fence stops this run.
    """

    def __init__(self, job: Job, attempt: int, *, time_limit_s: float | None = None) -> None:
        self.job_id = job.pk
        self.attempt = attempt
        self.interval = max(0.05, lease_seconds() / 3)
        self.deadline = time.monotonic() + time_limit_s if time_limit_s else None
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-job-{job.pk}", daemon=True)

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing (the work ended); the lease is cleared by the job's end."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def check(self) -> None:
        """Raise LeaseLost if a renewal found the job taken from this attempt."""
        if self.lost.is_set():
            raise LeaseLost(self.job_id, self.attempt)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                if self.deadline is not None and time.monotonic() > self.deadline:
                    # Past the task's hard limit the process is stuck (or the limit did not
                    # kill it): let the lease run out, so that the job is taken over.
                    logger.warning(
                        "job %s outlived its time limit; its lease is no longer renewed",
                        self.job_id,
                    )
                    return
                if not self.renew():
                    return
        finally:
            connection.close()  # this thread's own connection

    def renew(self) -> bool:
        """Push the lease forward; False (and `lost` set) when it is no longer this run's."""
        now = timezone.now()
        try:
            if Job.objects.filter(
                pk=self.job_id, status=JobStatus.RUNNING, attempts=self.attempt
            ).update(lease_expires_at=lease_expiry(now), heartbeat_at=now):
                return True
            row = Job.objects.filter(pk=self.job_id).values("status", "attempts").first()
        except Exception:  # the database away: try again at the next beat
            logger.warning("job %s: could not renew its lease", self.job_id, exc_info=True)
            connection.close()  # a cut connection is not reopened by itself: the next is new
            return True
        if row is None:
            # Not visible to this thread's connection (not committed yet) or deleted:
            # nobody else holds it either.
            return True
        logger.warning(
            "job %s: attempt %s lost its lease (the job is %s, attempt %s); stopping",
            self.job_id,
            self.attempt,
            row["status"],
            row["attempts"],
        )
        self.lost.set()
        return False
