"""Enumerations of the logical world; each value carries a comment on what it means."""

from __future__ import annotations

from django.db import models


class Role(models.TextChoices):
    ADMIN = "admin", "Tenant admin"  # manages the tenant's compositions and members
    MEMBER = "member", "Member"  # requests and releases compositions
    READONLY = "readonly", "Read-only"  # sees, never changes


class JobKind(models.TextChoices):
    INVENTORY_SYNC = "inventory_sync", "Inventory sync"  # diff a manager's report into the tables


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"  # created, enqueued after commit
    RUNNING = "running", "Running"  # a worker claimed it (compare-and-set)
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"  # the error is recorded on the row
    CANCELLED = "cancelled", "Cancelled"  # abandoned before it ran, or swept as lost


TERMINAL_JOB_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})
