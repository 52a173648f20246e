"""Composer's models, re-exported through `__all__`."""

from __future__ import annotations

from composer.models.jobs import Job, JobLogLine
from composer.models.tenancy import Membership, Tenant

__all__ = ["Job", "JobLogLine", "Membership", "Tenant"]
