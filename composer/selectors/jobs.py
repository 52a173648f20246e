"""A job's log and result as its reader may see them: the one read path for pages, API and
live updates.

Operators read every line as it was logged, with the logger that wrote it. A job's tenant
reads the lines written for it (`JobLogLine.tenant_message`, set by `composer.runner` where
the line is logged) in those words, and no logger: a driver's lines, binding ids and the
fabric's element names stay with operators.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from composer.models import Job, JobLogLine

__all__ = ["JobLog", "LogLine", "job_log", "job_result"]


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a job's log in its reader's words; `logger` is "" for tenants."""

    id: int
    at: datetime
    level: str
    logger: str
    message: str


@dataclass(frozen=True, slots=True)
class JobLog:
    """The lines shown, oldest first, and how many earlier ones were left out."""

    lines: list[LogLine]
    hidden: int


def _lines(job: Job, *, operator: bool) -> QuerySet[JobLogLine]:
    lines = JobLogLine.objects.filter(job_id=job.pk)
    if operator:
        return lines.defer("tenant_message")
    return lines.exclude(tenant_message="").defer("message", "logger")


def job_log(*, job: Job, operator: bool, last: int | None = None) -> JobLog:
    """`job`'s log for an operator (`operator`) or for a member of its tenant: every line
    it may read, or only the `last` ones. One query (and a count when there are more).

    The caller has already checked that the reader may see the job (`Job.objects.for_user`).
    """
    rows = _lines(job, operator=operator)
    if last is None:
        picked = list(rows.order_by("at", "id"))
        hidden = 0
    else:
        picked = list(reversed(rows.order_by("-at", "-id")[:last]))
        hidden = max(0, rows.count() - last) if len(picked) == last else 0
    return JobLog(
        lines=[
            LogLine(
                id=row.pk,
                at=row.at,
                level=row.level,
                logger=row.logger if operator else "",
                message=row.message if operator else row.tenant_message,
            )
            for row in picked
        ],
        hidden=hidden,
    )


# What a job's result tells a member of its tenant: the composition, where it stands, its host
# and which of its devices a heal replaced. Binding ids (the manager's handles) and what is
# still to unbind are fabric internals, for operators only.
_TENANT_RESULT_KEYS = frozenset({"composition", "state", "host", "replaced"})
_TENANT_REPLACED_KEYS = frozenset({"failed", "replacement"})


def job_result(*, job: Job, operator: bool) -> dict[str, object]:
    """`job.result` for an operator (all of it) or for a member of its tenant (the keys above,
    and of each replaced device, what failed and what replaced it). No query."""
    result = dict(job.result or {})
    if operator:
        return result
    cut = {key: value for key, value in result.items() if key in _TENANT_RESULT_KEYS}
    if isinstance(cut.get("replaced"), list):
        cut["replaced"] = [
            {k: v for k, v in item.items() if k in _TENANT_REPLACED_KEYS}
            for item in cut["replaced"]
            if isinstance(item, dict)
        ]
    return cut
