"""Bulk maintenance: several devices, enclosures or switches into maintenance (or back in
service) at once, from their list's ticked rows.

GET shows the confirmation: every element named, and what they take down together
(`maintenance_dependents_all`: a device two ticked switches both reach is lost only when
both are out). POST changes all of them or none (`maintenance_set_all`) and goes back to the
list it came from with what changed. Operators only.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from fabric.forms.maintenance import BULK_KINDS, BulkMaintenanceForm
from fabric.services.maintenance import maintenance_dependents_all, maintenance_set_all
from fabric.views.common import operator_required

_LISTS = {
    "device": "fabric:device_list",
    "enclosure": "fabric:enclosure_list",
    "switch": "fabric:switch_list",
}


@operator_required
@require_http_methods(["GET", "POST"])
def bulk_maintenance(request: HttpRequest) -> HttpResponse:
    """GET: the confirmation; POST: the change, then back to the list."""
    data = request.POST if request.method == "POST" else request.GET
    form = BulkMaintenanceForm(data, host=request.get_host(), secure=request.is_secure())
    if not form.is_valid():
        context = {"form": form, "errors": form.error_list(), "back": _back(form)}
        return render(request, "fabric/bulk_maintenance.html", context, status=400)
    kind, on = form.cleaned_data["kind"], form.cleaned_data["on"]
    back = _back(form)
    if request.method == "POST":
        try:
            changed = maintenance_set_all(
                targets=form.targets,
                on=on,
                actor=request.user,
                reason=form.cleaned_data["reason"],
                remote_addr=request.META.get("REMOTE_ADDR") or None,
            )
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            _, singular, plural = BULK_KINDS[kind]
            unchanged = len(form.targets) - len(changed)
            done = "in maintenance: nothing new is placed on them" if on else "back in service"
            text = f"{len(changed)} {singular if len(changed) == 1 else plural} {done}."
            if unchanged:
                text += f" {unchanged} already {'were' if unchanged > 1 else 'was'}."
            messages.success(request, text)
        return HttpResponseRedirect(back)
    context = {
        "form": form,
        "kind": kind,
        "on": on,
        "noun": BULK_KINDS[kind][1 if len(form.targets) == 1 else 2],
        "targets": form.targets,
        "dependents": maintenance_dependents_all(targets=form.targets, user=request.user),
        "back": back,
    }
    return render(request, "fabric/bulk_maintenance.html", context)


def _back(form: BulkMaintenanceForm) -> str:
    """The list the operator came from, or the kind's list."""
    data = form.cleaned_data if hasattr(form, "cleaned_data") else {}
    if data.get("next"):
        return str(data["next"])
    return reverse(_LISTS.get(str(data.get("kind") or form.data.get("kind")), "fabric:device_list"))
