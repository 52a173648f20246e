"""The simulator page: inject and clear faults in a simulated fabric (operators only).

In the optional simulator app because it reads the simulated manager's own state (which
elements carry a fault) and writes it; its route is `fabric.simulator.console.urls`.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from fabric.choices import ChangeAction
from fabric.models import ChangeRecord, FabricManager
from fabric.services.fault_targets import FaultTargetOption, fault_targets
from fabric.simulator.console.faults import simulator_fault
from fabric.simulator.console.forms import REMEMBERED, FaultForm
from fabric.simulator.models import SimulatedElement
from fabric.views.common import operator_required

logger = logging.getLogger(__name__)

RECENT_SHOWN = 20
# The element kinds a fault can target, as the simulator stores them.
FAULT_KINDS = ("device", "link", "switch", "enclosure", "power_feed")


def _active_faults(
    managers: list[FabricManager], targets: dict[str, list[FaultTargetOption]]
) -> list[dict[str, object]]:
    """Every element that carries a fault now, with the manager it belongs to and the name
    the console knows it by (what its Recover button sends)."""
    by_fabric = {str((m.settings or {}).get("fabric") or ""): m for m in managers}
    names = {(o.kind, o.external_id): o.name for options in targets.values() for o in options}
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
            "name": names.get((row.kind, row.external_id))
            or (row.data or {}).get("name")
            or row.external_id,
            "fault": row.fault,
        }
        for row in rows
    ]


@operator_required
def fault_injection(request: HttpRequest) -> HttpResponse:
    """GET: the form (with what the last injection used), the faults in force and the
    recent injections. POST: inject one, then back to the page with the same values."""
    if request.method == "POST":
        form = FaultForm(request.POST)
    else:
        form = FaultForm(initial=FaultForm.remembered(request.GET))
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                done = simulator_fault(
                    manager=form.cleaned_data["manager"],
                    target_type=form.cleaned_data["target_type"],
                    target_id=form.cleaned_data["target"],
                    action=form.cleaned_data["action"],
                    actor=request.user,
                    remote_addr=request.META.get("REMOTE_ADDR") or None,
                    source="simulator page",
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error("target" if field == "target_id" else field, errors)
            else:
                (messages.success if done.changed else messages.info)(request, done.message())
                kept = {name: str(form.cleaned_data[name]) for name in REMEMBERED}
                kept["manager"] = str(form.cleaned_data["manager"].pk)
                url = reverse("composer:fault_injection")
                return HttpResponseRedirect(f"{url}?{urlencode(kept)}")
        status = 400
    managers = list(FabricManager.objects.filter(driver="simulated").order_by("name"))
    targets = fault_targets(managers=managers)
    recent = ChangeRecord.objects.filter(action=ChangeAction.FAULT).select_related("actor")[
        :RECENT_SHOWN
    ]
    return render(
        request,
        "simulator/fault_injection.html",
        {
            "form": form,
            "managers": managers,
            "faults": _active_faults(managers, targets),
            "recent": recent,
            "targets": targets,
            "target_kind": form.target_kind(),
            "target_example": next(
                (option.name for option in targets.get(form.target_kind(), [])[:1]), ""
            ),
        },
        status=status,
    )
