"""Taking over jobs whose worker died: their lease expired (see `composer.lease`).

A RUNNING job's worker renews its lease every third of COMPOSER_JOB_LEASE_S. When the
lease has expired, the worker is taken as dead (killed, its machine lost, stuck past its
time limit) and the job is handed back to QUEUED by compare-and-set on the attempt and
the expiry it read (a renewal at that very moment wins), then sent to its task again; the
new run resumes from the last recorded step (every step is idempotent, and a compose or
heal asks the manager for bindings a dead worker made but never recorded). Two paths take
a job over: the lease sweep (beat, every few seconds: `jobs_lease_sweep`) and a delivery
of the job's own message that finds the lease expired (`job_take_over`, from the task).

A job that kills its worker every time must not be resumed for ever: past
COMPOSER_JOB_MAX_RESUMES takeovers it is failed instead, and what it left half-done is
undone (a compose rolled back, a heal back to DEGRADED).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.errors import ComposerError, InvalidTransition, StaleState
from composer.lease import lease_seconds
from composer.models import Job, JobLogLine
from composer.states import job_transition

logger = logging.getLogger(__name__)

RESUMING = "Resuming: its worker stopped answering"


def _expired(now: datetime) -> Q:
    """RUNNING jobs whose lease expired; a job started before leases existed (no expiry)
    counts from its last heartbeat."""
    legacy_cutoff = now - timedelta(seconds=lease_seconds())
    return Q(status=JobStatus.RUNNING) & (
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, last_sign__lt=legacy_cutoff)
    )


def job_lease_expired(job: Job, *, now: datetime | None = None) -> bool:
    """Whether RUNNING `job` (as read) is held by nobody alive any more."""
    now = now or timezone.now()
    if job.status != JobStatus.RUNNING:
        return False
    if job.lease_expires_at is not None:
        return job.lease_expires_at < now
    last = job.heartbeat_at or job.started_at or job.updated_at
    return last is None or last < now - timedelta(seconds=lease_seconds())


def _note(job: Job, level: int, message: str, tenant_message: str) -> None:
    """A line in the job's log written from outside its run (the takeover is no run's)."""
    JobLogLine.objects.create(
        job=job,
        at=datetime.now(tz=UTC),
        level=logging.getLevelName(level),
        logger=__name__,
        message=message[:4000],
        tenant_message=tenant_message[:4000],
    )


def job_take_over(*, job: Job, by: str, now: datetime | None = None, cut_short: str = "") -> bool:
    """Take RUNNING `job`, whose lease expired, from its dead worker: back to QUEUED to be
    run again (True), or FAILED past COMPOSER_JOB_MAX_RESUMES, with what it left half-done
    undone (False). `by` says who noticed ("the lease sweep", "a redelivery"), for the log.

    Compare-and-set on the attempt and the expiry read: False, changing nothing, when the
    worker renewed meanwhile or someone else took the job first. The caller sends it.
    """
    now = now or timezone.now()
    if not job_lease_expired(job, now=now):
        return False
    holder = job.lease_owner or "its worker"
    expired = job.lease_expires_at or job.heartbeat_at or job.started_at
    when = f"{expired:%H:%M:%S} UTC" if expired else "an unknown time"
    fence = {"attempts": job.attempts, "lease_expires_at": job.lease_expires_at}
    limit = int(getattr(settings, "COMPOSER_JOB_MAX_RESUMES", 3))
    if job.resumes >= limit:
        return _give_up(job, holder, when, fence, limit, cut_short)
    try:
        job_transition(
            job,
            JobStatus.QUEUED,
            expect=fence,
            resumes=job.resumes + 1,
            lease_owner="",
            lease_expires_at=None,
            dispatched_at=None,  # not sent yet: the dispatch pass sends it if this send fails
            message=RESUMING,
        )
    except (StaleState, InvalidTransition):
        return False  # renewed at this very moment, or taken by someone else first
    _note(
        job,
        logging.WARNING,
        f"{RESUMING} ({holder}, lease expired at {when}; noticed by {by}): queued again to "
        f"resume from its last recorded step (resume {job.resumes} of {limit})",
        f"{RESUMING}; it resumes from its last recorded step.",
    )
    logger.warning(
        "job %s (%s): worker %s stopped renewing its lease (expired %s); resume %s of %s, by %s",
        job.pk,
        job.kind,
        holder,
        when,
        job.resumes,
        limit,
        by,
    )
    return True


def _give_up(
    job: Job, holder: str, when: str, fence: dict[str, Any], limit: int, cut_short: str = ""
) -> bool:
    """Fail `job` cut short once more after `limit` resumes; undo its half-work.

    `cut_short` says why the last run stopped when its worker did not die (it handed the
    job over itself): the error then says so rather than blaming a dead worker."""
    if cut_short:
        error = (
            f"Stopped: its run was cut short {limit + 1} times (resumed {limit} times), the "
            f"last time because {cut_short}; it is not tried again."
        )
    else:
        error = (
            f"Stopped: its worker died {limit + 1} times while running it (resumed {limit} "
            "times); it is not tried again."
        )
    try:
        job_transition(
            job,
            JobStatus.FAILED,
            expect=fence,
            finished_at=timezone.now(),
            lease_owner="",
            lease_expires_at=None,
            error=error,
            message="Its worker kept dying",
        )
    except (StaleState, InvalidTransition):
        return False
    _note(job, logging.ERROR, f"{error} Last worker: {holder}, lease expired at {when}.", error)
    logger.error("job %s (%s): %s", job.pk, job.kind, error)
    kind = job.get_kind_display().lower()
    _undo_half_done(
        job,
        f"Its {kind} job kept being cut short ({cut_short})."
        if cut_short
        else f"Its {kind} job's worker kept dying.",
    )
    return False


def _undo_half_done(job: Job, reason: str) -> None:
    """What a failed job's own rollback would have done, for a job whose worker died."""
    from composer.models import Composition

    if job.kind not in (JobKind.COMPOSE, JobKind.HEAL, JobKind.RESIZE) or job.target_id is None:
        return  # a decompose can be asked again; a sync leaves nothing half-done
    composition = Composition.objects.select_related("host__manager").filter(pk=job.target_id)
    target = composition.first()
    if target is None:
        return
    source = f"{job.kind} job {job.pk}"
    try:
        if job.kind == JobKind.COMPOSE:
            from composer.services.composition_jobs import composition_rollback

            composition_rollback(
                composition=target, driver=None, reason=f"{reason} Rolled back.", source=source
            )
        elif job.kind == JobKind.RESIZE:
            from composer.services.resize import resize_rollback

            resize_rollback(target, None, reason, source)
        else:
            from composer.services.heal.undo import heal_rollback

            heal_rollback(target, None, f"Self-heal rolled back: {reason}", source)
    except ComposerError:
        logger.exception("job %s: could not undo what it left half-done", job.pk)


def job_hand_over(job: Job, attempt: int, why: str) -> bool:
    """Give up the lease of `job`'s `attempt` now and take the job over at once, from the
    worker that holds it but cannot go on (its database connection was cut mid-step).

    What the lease sweep would do a lease later, without the wait: the job is queued again
    to resume from its last recorded step (counted as a resume) and sent. False when the
    attempt no longer holds the job, or when the database is still away (the lease then
    runs out and the sweep takes the job over as usual).
    """
    from composer.services.dispatch import job_enqueue

    now = timezone.now()
    expired = now - timedelta(milliseconds=1)
    if not Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, attempts=attempt).update(
        lease_expires_at=expired
    ):
        return False
    current = Job.objects.select_related("requested_by").get(pk=job.pk)
    if not job_take_over(job=current, by=f"its own worker ({why})", now=now, cut_short=why):
        return False
    job_enqueue(current)
    return True


def jobs_lease_sweep(*, now: datetime | None = None) -> int:
    """Take over every RUNNING job whose lease expired and send it again (`job_enqueue`);
    fail those past COMPOSER_JOB_MAX_RESUMES. Returns how many were taken over."""
    from composer.services.dispatch import job_enqueue

    now = now or timezone.now()
    expired = (
        Job.objects.select_related("requested_by")
        .annotate(last_sign=Coalesce("heartbeat_at", "started_at", "updated_at"))
        .filter(_expired(now))
        .order_by("pk")
    )
    taken = 0
    for job in expired:
        if job_take_over(job=job, by="the lease sweep", now=now):
            job_enqueue(job)
            taken += 1
    return taken
