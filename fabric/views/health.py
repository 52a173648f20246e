"""Health on the device, switch and enclosure pages, and the maintenance toggle (operators).

The pages show the latest sample's metrics, a few recent samples and the element's open
alerts (`health_context`, two queries). The maintenance button opens a confirmation that
lists what depends on the element (`maintenance_dependents`: the fabric graph once, plus
the holders of held devices); it is loaded on demand (htmx into a modal, or a plain page
without JavaScript), so the detail pages do not pay for the graph on every view.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from fabric.choices import AlertState
from fabric.models import Alert, Device, Enclosure, Switch
from fabric.services.alerts import health_samples_for
from fabric.services.maintenance import maintenance_dependents, maintenance_set
from fabric.views.common import operator_required
from fabric.views.responses import htmx_redirect, is_htmx

RECENT_SAMPLES = 10

# The maintenance form's `on`: into maintenance or back in service. Anything else (missing
# included) changes nothing.
MAINTENANCE_ON = {"1": True, "true": True, "on": True, "0": False, "false": False, "off": False}

# URL kind -> (model, detail URL name, label)
MAINTENANCE_TARGETS: dict[str, tuple[type[Device | Switch | Enclosure], str, str]] = {
    "device": (Device, "fabric:device_detail", "device"),
    "switch": (Switch, "fabric:switch_detail", "switch"),
    "enclosure": (Enclosure, "fabric:enclosure_detail", "enclosure"),
}


def health_context(target_type: str, target_id: int) -> dict[str, Any]:
    """`health_samples` (newest first, at most RECENT_SAMPLES), `health_latest` and the
    element's open `health_alerts`, for `fabric/_health.html`. Two queries."""
    samples = list(
        health_samples_for(target_type=target_type, target_id=target_id)[:RECENT_SAMPLES]
    )
    alerts = list(
        Alert.objects.filter(source_type=target_type, source_id=target_id, state=AlertState.OPEN)
        .select_related("acknowledged_by")
        .order_by("-opened_at", "-id")
    )
    return {
        "health_samples": samples,
        "health_latest": samples[0] if samples else None,
        "health_alerts": alerts,
    }


def _back(request: HttpRequest, url: str) -> HttpResponse:
    """Back to the element's page: `HX-Redirect` for htmx, a plain 302 otherwise."""
    return htmx_redirect(request, url)


@operator_required
@require_http_methods(["GET", "POST"])
def maintenance(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """GET: the confirmation, listing what depends on the element (a modal's content for
    htmx, a page otherwise). POST `on` (1 or 0, required) and `reason`: put it in
    maintenance or take it out, then back to its page with a message."""
    model, detail_name, label = MAINTENANCE_TARGETS[kind]
    # One of the three models (mypy would join the union of querysets to their base class).
    target = cast(
        "Device | Switch | Enclosure",
        get_object_or_404(model.objects.select_related("manager"), pk=pk),
    )
    detail_url = reverse(detail_name, args=[target.pk])
    if request.method == "POST":
        on = MAINTENANCE_ON.get(request.POST.get("on", ""))
        if on is None:  # the form always says which; nothing is assumed
            messages.error(
                request,
                f"Nothing changed: say whether {target.name} goes in maintenance or back in "
                "service.",
            )
            return _back(request, detail_url)
        try:
            changed = maintenance_set(
                target=target,
                on=on,
                actor=request.user,
                reason=request.POST.get("reason", ""),
                remote_addr=request.META.get("REMOTE_ADDR") or None,
            )
        except ValidationError as exc:
            messages.error(request, f"{target.name}: {' '.join(exc.messages)}")
        else:
            if not changed:
                messages.info(request, f"{target.name} already was {target.state}.")
            elif on:
                messages.success(
                    request, f"{target.name} is in maintenance: nothing new is placed on it."
                )
            else:
                messages.success(request, f"{target.name} is back in service ({target.state}).")
        return _back(request, detail_url)
    context = {
        "target": target,
        "kind": kind,
        "label": label,
        "detail_url": detail_url,
        "url_name": f"fabric:{kind}_maintenance",
        "in_maintenance": target.state == "maintenance",
        "dependents": maintenance_dependents(target=target, user=request.user),
    }
    if is_htmx(request):
        return render(request, "fabric/_maintenance_confirm.html", context)
    return render(request, "fabric/maintenance_confirm.html", {**context, "is_page": True})
