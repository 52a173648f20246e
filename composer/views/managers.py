"""Actions on fabric managers that start composer jobs (the pages are `fabric.views.managers`)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from composer.errors import ComposerError
from fabric.models import FabricManager
from fabric.views.common import operator_required

logger = logging.getLogger(__name__)


@operator_required
@require_POST
def manager_sync(request: HttpRequest, pk: int) -> HttpResponse:
    """The "Sync now" button: queue an inventory sync of one manager and show its job."""
    # Imported here: the service module belongs to the jobs work and loads Celery tasks.
    from composer.services.jobs import inventory_sync_request

    manager = get_object_or_404(FabricManager, pk=pk)
    try:
        job = inventory_sync_request(manager=manager, requested_by=request.user)
    except ComposerError as exc:
        messages.error(request, f"Could not start a sync of {manager}: {exc.message}")
        return redirect("fabric:manager_detail", pk=manager.pk)
    logger.info("sync of manager %s requested as job %s", manager.pk, job.pk)
    messages.success(request, f"Inventory sync of {manager} queued as job {job.pk}.")
    return redirect("composer:job_detail", pk=job.pk)
