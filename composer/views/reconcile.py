"""The Reconcile page (operators): the reconciler's recent runs, what each found and did,
the bindings still being cleaned up, and a "Reconcile now" button.

Tenant members get 404 (`operator_required`), like every fabric page: the findings name
managers, hosts and binding ids.
"""

from __future__ import annotations

import logging

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from composer.models import ReconcileFinding, ReconcileRun, UnbindPending
from composer.services.reconcile import reconcile_request
from fabric.views.common import operator_required, paginate_or_raise

logger = logging.getLogger(__name__)

RUNS_PER_PAGE = 20


@operator_required
@require_GET
def reconcile_list(request: HttpRequest) -> HttpResponse:
    """Recent runs with their findings (repaired, still pending, reported), and what is
    still being cleaned up."""
    findings = ReconcileFinding.objects.select_related(
        "manager", "device", "host", "composition"
    ).order_by("pk")
    runs = (
        ReconcileRun.objects.select_related("requested_by")
        .prefetch_related(Prefetch("findings", queryset=findings))
        .order_by("-created_at", "-id")
    )
    page = paginate_or_raise(runs, page=request.GET.get("page"), per_page=RUNS_PER_PAGE)
    pending = list(
        UnbindPending.objects.filter(undone_at__isnull=True)
        .select_related("device", "host__manager", "composition")
        .order_by("since", "pk")
    )
    return render(
        request,
        "composer/reconcile_list.html",
        {"page": page, "pending": pending, "section": "reconcile"},
    )


@operator_required
@require_POST
def reconcile_now(request: HttpRequest) -> HttpResponse:
    """The "Reconcile now" button: queue a run (audited on its row) and show the page."""
    run = reconcile_request(
        requested_by=request.user, remote_addr=request.META.get("REMOTE_ADDR") or None
    )
    logger.info("reconcile run %s requested from the page by user %s", run.pk, request.user.pk)
    messages.success(request, f"Reconcile run {run.pk} queued.")
    return redirect("composer:reconcile_list")
