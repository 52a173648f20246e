"""The simulator page: inject and clear faults in a simulated fabric (operators only)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from composer.forms.simulator import FaultForm
from composer.services.faults import simulator_fault
from fabric.choices import ChangeAction
from fabric.models import (
    ChangeRecord,
    Enclosure,
    FabricManager,
    PowerFeed,
    SimulatedElement,
    Switch,
)
from fabric.views.common import operator_required

logger = logging.getLogger(__name__)

RECENT_SHOWN = 20
# The element kinds a fault can target, as the simulator stores them.
FAULT_KINDS = ("device", "link", "switch", "enclosure", "power_feed")


def _active_faults(managers: list[FabricManager]) -> list[dict[str, object]]:
    """Every element that carries a fault now, with the manager it belongs to."""
    by_fabric = {str((m.settings or {}).get("fabric") or ""): m for m in managers}
    rows = (
        SimulatedElement.objects.filter(
            fabric__name__in=by_fabric, kind__in=FAULT_KINDS, is_present=True
        )
        .exclude(fault="")
        .select_related("fabric")
        .order_by("fabric__name", "kind", "external_id")
    )
    return [
        {
            "manager": by_fabric[row.fabric.name],
            "kind": row.kind,
            "external_id": row.external_id,
            "name": (row.data or {}).get("name") or row.external_id,
            "fault": row.fault,
        }
        for row in rows
    ]


def _suggestions(managers: list[FabricManager]) -> list[str]:
    """Names for the target field's autocomplete: the big failure domains, not every device."""
    names: set[str] = set()
    for model in (Switch, Enclosure, PowerFeed):
        names.update(
            model.objects.filter(manager__in=managers).values_list("name", flat=True)[:500]
        )
    return sorted(names)


@operator_required
def fault_injection(request: HttpRequest) -> HttpResponse:
    """GET: the form, the faults in force and the recent injections. POST: inject one."""
    form = FaultForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                done = simulator_fault(
                    manager=form.cleaned_data["manager"],
                    target_type=form.cleaned_data["target_type"],
                    target_id=form.target_id(),
                    action=form.cleaned_data["action"],
                    actor=request.user,
                    remote_addr=request.META.get("REMOTE_ADDR") or None,
                    source="simulator page",
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error("target" if field == "target_id" else field, errors)
            else:
                messages.success(
                    request,
                    f"{done.action.capitalize()} injected on {done.target_type.replace('_', ' ')} "
                    f"{done.target_name} ({done.before} → {done.after}); health poll queued.",
                )
                return redirect("composer:fault_injection")
        status = 400
    managers = list(FabricManager.objects.filter(driver="simulated").order_by("name"))
    recent = ChangeRecord.objects.filter(action=ChangeAction.FAULT).select_related("actor")[
        :RECENT_SHOWN
    ]
    return render(
        request,
        "composer/fault_injection.html",
        {
            "form": form,
            "managers": managers,
            "faults": _active_faults(managers),
            "recent": recent,
            "suggestions": _suggestions(managers),
        },
        status=status,
    )
