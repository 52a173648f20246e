"""Jobs: one run of a background task, with its progress and its log."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from composer.choices import JobKind, JobStatus
from composer.monitoring.requestid import request_id
from composer.querysets import TenantScopedQuerySet
from fabric.models.base import TimeStampedModel


class Job(TimeStampedModel):
    """One run of a background task (inventory sync; compose and decompose later).

    Lifecycle: QUEUED -> RUNNING -> SUCCEEDED | FAILED; RUNNING -> QUEUED for a retry, or
    when its worker died (its lease expired: the lease sweep or the next delivery takes it
    over, and it resumes from its last recorded step); QUEUED -> CANCELLED by an operator.
    Changes go through `composer.states.job_transition` (compare-and-set), so a redelivered
    task cannot run a job twice.

    The lease: a RUNNING job is held by one worker process (`lease_owner`) until
    `lease_expires_at`, which its heartbeat keeps pushing forward (`composer.lease`). The
    attempt number is the fencing token: every write of a run (progress, the end, the
    renewal) requires `attempts` to be the one it claimed, so a worker that lost its lease
    cannot overwrite the worker that took over.

    The row is also the outbox of the task queue (`composer.services.dispatch`):
    `dispatched_at` stays empty until the broker took the job's message, and a QUEUED job
    the broker does not hold (never sent while Redis was away, or lost with a Redis restart)
    is sent again by beat's dispatch pass. Between them, no job is ever given up as lost.
    """

    kind = models.CharField(max_length=30, choices=JobKind.choices)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    tenant = models.ForeignKey(
        "composer.Tenant", null=True, blank=True, on_delete=models.PROTECT, related_name="jobs"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target_type = models.CharField(max_length=30, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    target_label = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(
        default=timezone.now,
        help_text="When it last entered the queue (created, retried or taken over): how long "
        "it has waited counts from here, not from its creation.",
    )
    dispatched_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the task queue last accepted the job's message; empty until it did.",
    )
    lease_owner = models.CharField(
        max_length=200, blank=True, help_text="The worker process that runs it (operators only)."
    )
    lease_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Past this, its worker is taken as dead: it resumes."
    )
    resumes = models.PositiveSmallIntegerField(
        default=0, help_text="How many times it was taken over after its worker died."
    )

    # Jobs without a tenant (fabric work such as inventory sync) are for operators only.
    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "kind"], name="composer_job_status_kind"),
            # The jobs page and the API list newest first: a page of them without a sort
            # of every job.
            models.Index(fields=["-created_at", "-id"], name="composer_job_newest"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} {self.kind} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """A job made during a request keeps the request's id in its params, so that the
        dispatch pass, sending it later (the broker was away), carries the same id into
        the worker's log lines (`composer.services.dispatch`)."""
        if self._state.adding and "request_id" not in self.params:
            rid = request_id()
            if rid:
                self.params = {**self.params, "request_id": rid}
        super().save(*args, **kwargs)

    @property
    def progress_percent(self) -> int:
        """0-100; a finished job is at 100 whatever its counters say."""
        if self.status == JobStatus.SUCCEEDED:
            return 100
        if not self.progress_total:
            return 0
        return min(100, round(100 * self.progress_done / self.progress_total))

    @property
    def duration_s(self) -> float | None:
        if not self.started_at:
            return None
        end = self.finished_at or self.heartbeat_at or self.started_at
        return (end - self.started_at).total_seconds()


class JobLogLine(models.Model):
    """One log line of a job, captured from the logging calls made while it ran.

    Two audiences: `message` is the operators' line as it was logged (it may name the fabric
    manager, switches, binding ids, or be a driver's own line); `tenant_message` is the same
    step in the words the job's tenant reads, and blank when the line is for operators only.
    `composer.runner` decides which at capture; `composer.selectors.jobs.job_log` is the one
    read path.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="log_lines")
    at = models.DateTimeField()
    level = models.CharField(max_length=10)
    logger = models.CharField(max_length=100, blank=True)
    message = models.TextField()
    tenant_message = models.TextField(
        blank=True,
        help_text="The line in the tenant's words; blank: for operators only.",
    )

    class Meta:
        ordering = ["job_id", "at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%H:%M:%S} {self.level} {self.message[:60]}"
