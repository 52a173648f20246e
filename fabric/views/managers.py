"""Operator pages of the fabric managers: how each is reached, when it last synchronised,
what it reports. Their settings are shown with secret-looking values masked."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from fabric.choices import DeviceState
from fabric.models import Device, FabricManager
from fabric.selectors import ManagerCounts, change_history, manager_inventory_counts
from fabric.views.common import (
    HISTORY_PAGE_SIZE,
    display_settings,
    operator_required,
    paginate_or_raise,
)


@operator_required
def manager_list(request: HttpRequest) -> HttpResponse:
    """Every fabric manager with its driver, endpoint, last sync and inventory counts."""
    managers = list(FabricManager.objects.order_by("name"))
    counts = manager_inventory_counts(manager_ids=[m.pk for m in managers])
    rows = [(m, counts.get(m.pk, ManagerCounts())) for m in managers]
    return render(request, "fabric/manager_list.html", {"rows": rows})


@operator_required
def manager_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One fabric manager: its settings (secrets masked), sync state, counts and history."""
    manager = get_object_or_404(FabricManager, pk=pk)
    counts = manager_inventory_counts(manager_ids=[manager.pk]).get(manager.pk, ManagerCounts())
    absent_devices = Device.objects.filter(manager=manager, state=DeviceState.ABSENT).count()
    context = {
        "manager": manager,
        "counts": counts,
        "absent_devices": absent_devices,
        "settings_rows": display_settings(manager.settings),
        "history": paginate_or_raise(
            change_history(target_type="fabric_manager", target_id=manager.pk),
            page=request.GET.get("history_page"),
            per_page=HISTORY_PAGE_SIZE,
        ),
    }
    return render(request, "fabric/manager_detail.html", context)
