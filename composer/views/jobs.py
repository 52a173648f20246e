"""Jobs: the list, one job's page, and the progress partial that page polls while it runs.

Every read starts from `Job.objects.for_user`: jobs without a tenant (inventory
sync) are for operators only; a job someone may not see is a 404, never a 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse
from django.utils.cache import patch_vary_headers

from composer.choices import TERMINAL_JOB_STATUSES
from composer.forms.jobs import JobFilterForm
from composer.models import Job
from composer.selectors.jobs import job_log
from fabric.permissions import is_operator
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, is_htmx_partial, paginate

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


@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    """The jobs the viewer may see, newest first, filtered by status and kind."""
    form = JobFilterForm(request.GET)
    status = 200
    errors: list[str] = []
    page = None
    if not form.is_valid():
        status = 400
        for name, messages in form.errors.items():
            errors.extend(f"{form.fields[name].label or name.capitalize()}: {m}" for m in messages)
    else:
        jobs = _job_queryset(request)
        if form.cleaned_data["status"]:
            jobs = jobs.filter(status__in=form.cleaned_data["status"])
        if form.cleaned_data["kind"]:
            jobs = jobs.filter(kind__in=form.cleaned_data["kind"])
        try:
            page = paginate(
                jobs.order_by("-created_at", "-id"),
                page=request.GET.get("page"),
                per_page=DEFAULT_PAGE_SIZE,
            )
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    # The table reloads on job events; it polls only while live updates are down, and only
    # when a job it shows can still change.
    unfinished = page is not None and any(j.status not in TERMINAL_JOB_STATUSES for j in page)
    context = {"form": form, "page": page, "errors": errors, "unfinished": unfinished}
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
