"""Operator pages of the fabric managers: how each is reached, when it last synchronised,
what it reports. Their settings are shown with secret-looking values masked."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from fabric.choices import DeviceState
from fabric.filters import FabricManagerFilterSet
from fabric.models import Device, FabricManager
from fabric.secrets import mask_endpoint
from fabric.selectors import ManagerCounts, change_history, manager_inventory_counts
from fabric.views.common import (
    DEFAULT_PAGE_SIZE,
    HISTORY_PAGE_SIZE,
    BadPage,
    display_settings,
    operator_required,
    paginate,
    paginate_or_raise,
)
from fabric.views.listing import (
    Column,
    attr,
    export_query,
    export_response,
    headers,
    list_errors,
)

MANAGER_COLUMNS = (
    Column("Name", "name", attr("name"), sort="name"),
    Column("Driver", "driver", attr("driver"), sort="driver"),
    Column("Endpoint", "endpoint", lambda m: mask_endpoint(m.endpoint) if m.endpoint else ""),
    Column("Enabled", "enabled", attr("is_enabled"), sort="enabled"),
    Column("Poll", "poll_interval_s", attr("poll_interval_s"), sort="poll", numeric=True),
    Column("Last sync", "last_synced_at", attr("last_synced_at"), sort="last_synced"),
    Column("Last error", "last_sync_error", attr("last_sync_error")),
    Column("Switches", "switches", attr("counts.switches"), numeric=True),
    Column("Hosts", "hosts", attr("counts.hosts"), numeric=True),
    Column("Enclosures", "enclosures", attr("counts.enclosures"), numeric=True),
    Column("Devices", "devices", attr("counts.devices"), numeric=True),
    Column("Links", "links", attr("counts.links"), numeric=True),
)


def _with_counts(managers: list[FabricManager]) -> list[FabricManager]:
    """The managers, each with its inventory `counts` (one query for all of them)."""
    counts = manager_inventory_counts(manager_ids=[m.pk for m in managers])
    for manager in managers:
        manager.counts = counts.get(manager.pk, ManagerCounts())  # type: ignore[attr-defined]
    return managers


@operator_required
def manager_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every fabric manager with its driver, endpoint (passwords masked), last sync and
    inventory counts; filtered, sorted, paged and exported like every list."""
    filterset = FabricManagerFilterSet(
        request.GET, queryset=FabricManager.objects.all(), request=request
    )
    errors = list_errors(filterset.form, request)
    managers: list[FabricManager] = []
    page = None
    status = 400 if errors else 200
    if not errors:
        rows = filterset.qs
        rows = rows.order_by(*(rows.query.order_by or ("name",)), "pk")
        export = request.GET.get("export")
        if export:
            return export_response(
                _with_counts(list(rows)), MANAGER_COLUMNS, export=export, filename="managers"
            )
        try:
            page = paginate(rows, page=request.GET.get("page"), per_page=DEFAULT_PAGE_SIZE)
        except BadPage as exc:
            errors.append(exc.message)
            status = exc.status
        else:
            managers = _with_counts(list(page.object_list))
    context = {
        "managers": managers,
        "page": page,
        "noun": "fabric managers",
        "filter": filterset,
        "errors": errors,
        "headers": headers(MANAGER_COLUMNS, request.GET.get("ordering", ""), default="name"),
        "export_query": export_query(request),
        "is_filtered": any(
            request.GET.get(name) for name in filterset.form.fields if name != "ordering"
        ),
        "any_manager": FabricManager.objects.exists(),
    }
    return render(request, "fabric/manager_list.html", context, status=status)


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
