"""Bulk actions from the composition and alert lists' ticked rows: decompose several
compositions (tenant members: their own, and not read-only), acknowledge several alerts
(operators).

GET shows the confirmation naming every one; POST does it (`composer.services.bulk`: the
decomposes all or none, each audited as its own) and goes back to the list it came from.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from composer.errors import ComposerError
from composer.forms.bulk import BulkAcknowledgeForm, BulkDecomposeForm
from composer.models import Composition
from composer.services.bulk import alerts_acknowledge_all, compositions_decompose_all
from composer.views.compositions import can_write
from fabric.permissions import is_operator
from fabric.services.alerts import alerts_visible_to
from fabric.views.responses import remote_addr


@login_required
@require_http_methods(["GET", "POST"])
def compositions_decompose_bulk(request: HttpRequest) -> HttpResponse:
    """Decompose the ticked compositions: the confirmation, then the jobs."""
    data = request.POST if request.method == "POST" else request.GET
    form = BulkDecomposeForm(
        data,
        rows=Composition.objects.for_user(request.user).select_related("tenant", "host"),
        host=request.get_host(),
        secure=request.is_secure(),
    )
    back = reverse("composer:composition_list")
    if not form.is_valid():
        context = {"errors": form.error_list(), "back": form.cleaned_data.get("next") or back}
        return render(request, "composer/bulk_decompose.html", context, status=400)
    back = form.cleaned_data["next"] or back
    if not all(can_write(request.user, c) for c in form.compositions):
        raise PermissionDenied("Read-only members cannot decompose compositions.")
    if request.method == "POST":
        try:
            jobs = compositions_decompose_all(
                compositions=form.compositions,
                actor=request.user,
                remote_addr=remote_addr(request),
            )
        except ComposerError as exc:
            messages.error(request, exc.message)
        else:
            count = len(jobs)
            messages.success(
                request, f"Decomposing {count} composition{'s' if count != 1 else ''}."
            )
        return HttpResponseRedirect(back)
    context = {
        "compositions": form.compositions,
        "operator": is_operator(request.user),
        "back": back,
    }
    return render(request, "composer/bulk_decompose.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def alerts_acknowledge_bulk(request: HttpRequest) -> HttpResponse:
    """Acknowledge the ticked alerts (operators): the confirmation, then the change."""
    if not is_operator(request.user):
        raise PermissionDenied("Only operators acknowledge alerts.")
    data = request.POST if request.method == "POST" else request.GET
    form = BulkAcknowledgeForm(
        data,
        rows=alerts_visible_to(request.user).select_related("acknowledged_by"),
        host=request.get_host(),
        secure=request.is_secure(),
    )
    back = reverse("composer:alert_list")
    if not form.is_valid():
        context = {"errors": form.error_list(), "back": form.cleaned_data.get("next") or back}
        return render(request, "composer/bulk_acknowledge.html", context, status=400)
    back = form.cleaned_data["next"] or back
    if request.method == "POST":
        done = alerts_acknowledge_all(
            alerts=form.alerts, user=request.user, remote_addr=remote_addr(request)
        )
        already = len(form.alerts) - len(done)
        text = f"{len(done)} alert{'s' if len(done) != 1 else ''} acknowledged."
        if already:
            text += f" {already} already {'were' if already > 1 else 'was'}."
        messages.success(request, text)
        return HttpResponseRedirect(back)
    return render(request, "composer/bulk_acknowledge.html", {"alerts": form.alerts, "back": back})
