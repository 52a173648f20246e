"""Jobs: the list (filtered, sorted, exported), one job's page, and the progress partial that
page polls while it runs.

Every read starts from `Job.objects.for_user`: jobs without a tenant (inventory
sync) are for operators only; a job someone may not see is a 404, never a 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers

from composer.choices import TERMINAL_JOB_STATUSES
from composer.filters import JobFilterSet
from composer.forms.jobs import JobFilterForm
from composer.models import Job
from composer.selectors.jobs import job_log
from composer.views.lists import filter_words, list_problems, ordering_of
from fabric.permissions import is_operator
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, is_htmx_partial, paginate
from fabric.views.listing import Column, attr, export_query, export_response, headers

TABLE_TARGET = "job-table"
LOG_LINES_SHOWN = 500

# Where a job's target lives, by `Job.target_type`; fabric pages are for operators only.
_TARGET_URLS = {
    "fabric_manager": "fabric:manager_detail",
    "fabricmanager": "fabric:manager_detail",
    "manager": "fabric:manager_detail",
    "device": "fabric:device_detail",
    "host": "fabric:host_detail",
    "enclosure": "fabric:enclosure_detail",
    "switch": "fabric:switch_detail",
    "composition": "composer:composition_detail",
}
_TENANT_VISIBLE_TARGETS = {"device", "composition"}


def target_url(job: Job, *, operator: bool) -> str | None:
    """The page of the job's target, when there is one the viewer may open."""
    name = _TARGET_URLS.get(job.target_type)
    if not name or job.target_id is None:
        return None
    if not operator and job.target_type not in _TENANT_VISIBLE_TARGETS:
        return None
    try:
        return reverse(name, args=[job.target_id])
    except NoReverseMatch:
        return None


def _job_queryset(request: HttpRequest) -> Any:
    return Job.objects.for_user(request.user).select_related("tenant", "requested_by")


def _duration_s(job: Job) -> float | None:
    """Seconds it ran, or has run so far, as the table's Duration column shows it."""
    if not job.started_at:
        return None
    end = job.finished_at or timezone.now()
    return round(max(0.0, (end - job.started_at).total_seconds()), 3)


COLUMNS = (
    Column("Job", "id", attr("pk"), sort="id"),
    Column("Kind", "kind", attr("kind"), sort="kind"),
    Column("Target", "target", attr("target_label"), sort="target"),
    Column("Tenant", "tenant", attr("tenant.name"), sort="tenant"),
    Column("Requested by", "requested_by", attr("requested_by.username")),
    Column("Status", "status", attr("status"), sort="status"),
    Column("Progress", "progress_percent", attr("progress_percent"), numeric=True),
    Column("Message", "message", attr("message")),
    Column("Created", "created_at", attr("created_at"), sort="created"),
    Column("Duration", "duration_s", _duration_s, sort="duration", numeric=True),
)
# Exported besides the table's columns (the table shows an error in place of the message).
EXTRA_EXPORTED = (
    Column("Error", "error", attr("error")),
    Column("Started", "started_at", attr("started_at")),
    Column("Finished", "finished_at", attr("finished_at")),
)
DEFAULT_ORDERING = "-created"


@login_required
def job_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The jobs the viewer may see, newest first unless sorted otherwise, filtered by status
    and kind (the API's `JobFilterSet`); `?export=csv|json` gives every row they select."""
    form = JobFilterForm(request.GET)
    filterset = JobFilterSet(request.GET, queryset=_job_queryset(request))
    errors = list_problems(request, form, filterset.form)
    status = 400 if errors else 200
    page = None
    if not errors:
        jobs = filterset.qs
        jobs = jobs.order_by(*(jobs.query.order_by or ("-created_at", "-id")), "pk")
        export = request.GET.get("export")
        if export:
            exported = [*COLUMNS, *EXTRA_EXPORTED]
            return export_response(jobs, exported, export=export, filename="jobs")
        try:
            page = paginate(jobs, page=request.GET.get("page"), per_page=DEFAULT_PAGE_SIZE)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    # The table reloads on job events; it polls only while live updates are down, and only
    # when a job it shows can still change.
    unfinished = page is not None and any(j.status not in TERMINAL_JOB_STATUSES for j in page)
    context: dict[str, Any] = {
        "form": form,
        "page": page,
        "errors": errors,
        "unfinished": unfinished,
        "headers": headers(COLUMNS, ordering_of(request), default=DEFAULT_ORDERING),
        "export_query": export_query(request),
        "ordering": ordering_of(request),
    }
    if page is not None and not page.paginator.count:
        context["total"] = _job_queryset(request).count()
        context["active_filters"] = filter_words(form)
    template = "composer/_job_table.html" if is_htmx_partial(request, TABLE_TARGET) else None
    response = render(request, template or "composer/job_list.html", context, status=status)
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response


def _job_context(request: HttpRequest, pk: int) -> dict[str, Any]:
    job = get_object_or_404(_job_queryset(request), pk=pk)
    operator = is_operator(request.user)
    log = job_log(job=job, operator=operator, last=LOG_LINES_SHOWN)
    return {
        "job": job,
        "is_finished": job.status in TERMINAL_JOB_STATUSES,
        "log_lines": log.lines,
        "log_lines_hidden": log.hidden,
        "target_url": target_url(job, operator=operator),
        "operator": operator,  # the lease's holder names a worker: operators only
    }


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One job: status, progress, timings and log; polls its progress every 2 s until done."""
    return render(request, "composer/job_detail.html", _job_context(request, pk))


@login_required
def job_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """The part of the job page that changes while it runs (what htmx polls)."""
    return render(request, "composer/_job_progress.html", _job_context(request, pk))
