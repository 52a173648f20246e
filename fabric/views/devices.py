"""The device table and the device page.

The table is built for tens of thousands of rows: one COUNT and one page of rows, joined to
pool, enclosure, rack and bound host in the same query, whatever the page size.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers

from fabric.choices import ComponentState, DeviceState, Health
from fabric.filters import DeviceFilterSet
from fabric.holders import device_holders
from fabric.kinds import find
from fabric.models import Device, Enclosure, Port
from fabric.permissions import is_operator
from fabric.selectors import change_history, port_links
from fabric.views.common import (
    HISTORY_PAGE_SIZE,
    PAGE_SIZES,
    BadPage,
    display_settings,
    filtered_manager,
    is_htmx_partial,
    page_size,
    paginate,
    paginate_or_raise,
)
from fabric.views.health import health_context
from fabric.views.listing import (
    Column,
    attr,
    export_error,
    export_query,
    export_response,
    headers,
    visible,
)

TABLE_TARGET = "device-table"


COLUMNS = (
    Column("Name", "name", attr("name"), sort="name"),
    Column("Kind", "kind", attr("kind"), sort="kind"),
    Column("Model", "model", attr("model"), sort="model"),
    Column("Memory / capacity", "memory_gib", attr("memory_gib"), sort="memory", numeric=True),
    Column("Pool", "pool", attr("pool.name"), sort="pool"),
    Column("State", "state", attr("state"), sort="state"),
    Column("Health", "health", attr("health"), sort="health"),
    Column("Serial", "serial", attr("serial"), operator_only=True),
    Column("Enclosure", "enclosure", attr("enclosure.name"), sort="enclosure", operator_only=True),
    Column("Rack", "rack", attr("enclosure.rack.name"), operator_only=True),
    Column("Bound host", "bound_host", attr("bound_host.name"), operator_only=True),
)
# Exported besides the table's columns: the storage size and the slot.
EXTRA_EXPORTED = (
    Column("Capacity (GB)", "capacity_gb", attr("capacity_gb")),
    Column("Slot", "slot", attr("slot"), operator_only=True),
)


def _style_form(filterset: DeviceFilterSet) -> None:
    """Bootstrap classes and friendly empty labels on the shared FilterSet's form."""
    fields = filterset.form.fields
    labels = {"pool": "Any pool", "rack": "Any rack"}
    for name, empty_label in labels.items():
        if name in fields:
            fields[name].empty_label = empty_label
            fields[name].widget.attrs.update({"class": "form-select form-select-sm"})
    if "enclosure" in fields:
        fields["enclosure"].widget.attrs.update(
            {"class": "form-control form-control-sm", "placeholder": "Enclosure name or id"}
        )
    if "model" in fields:
        fields["model"].widget.attrs.update(
            {
                "class": "form-control form-control-sm",
                "placeholder": "Model",
                "list": "model-options",
            }
        )
    if "q" in fields:
        fields["q"].widget.attrs.update(
            {
                "class": "form-control form-control-sm",
                "placeholder": "Name, model, vendor, serial"
                if filterset.is_operator
                else "Name, model, vendor",
                "type": "search",
                "autocomplete": "off",
            }
        )


def _multi(filterset: DeviceFilterSet, name: str) -> dict[str, Any]:
    """A multiple-choice filter as checkboxes: its choices, which are checked, its errors."""
    bound = filterset.form[name]
    selected = [str(v) for v in (bound.value() or [])]
    choices = [(value, label, value in selected) for value, label in bound.field.choices]
    summary = ", ".join(label for _, label, checked in choices if checked)
    return {
        "name": name,
        "label": bound.label,
        "choices": choices,
        "summary": summary or "Any",
        "errors": bound.errors,
    }


def _active_filters(filterset: DeviceFilterSet) -> list[str]:
    """The filters applied, in words ("Kind: CXL memory", "Search: “h100”"), for the line
    that says why a table is empty."""
    form = filterset.form
    words = []
    for name, field in form.fields.items():
        value = form.cleaned_data.get(name)
        if name == "ordering" or value in (None, "", [], ()):
            continue
        if isinstance(value, list | tuple):
            labels = dict(getattr(field, "choices", ()))
            text = ", ".join(str(labels.get(v, v)) for v in value)
        elif name in ("q", "model"):
            text = f"“{value}”"
        else:
            text = str(value)
        words.append(f"{field.label or name.title()}: {text}")
    return words


def _device_queryset(*, operator: bool) -> QuerySet[Device]:
    # Tenant members' rows show pool only; operators' also enclosure, rack and bound host.
    if operator:
        return Device.objects.select_related("pool", "enclosure__rack", "bound_host")
    return Device.objects.select_related("pool")


@login_required
def device_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The device table: filters, sorting and pagination from the query string."""
    operator = is_operator(request.user)
    filterset = DeviceFilterSet(
        request.GET, queryset=_device_queryset(operator=operator), request=request
    )
    _style_form(filterset)
    status = 200
    errors: list[str] = []
    page = None
    per_page = 50
    try:
        per_page = page_size(request.GET.get("per_page"))
    except BadRequest as exc:
        status = 400
        errors.append(str(exc))
    if not filterset.is_valid():
        status = 400
        for name, messages in filterset.form.errors.items():
            label = filterset.form.fields[name].label if name in filterset.form.fields else name
            errors.extend(f"{label or name}: {message}" for message in messages)
    bad_export = export_error(request)
    if bad_export:
        status = 400
        errors.append(bad_export)
    columns = visible(COLUMNS, operator=operator)
    if status == 200:
        queryset = filterset.qs
        # A stable order: pagination must not repeat or skip rows that tie on the sort key.
        queryset = queryset.order_by(*(queryset.query.order_by or Device._meta.ordering), "pk")
        export = request.GET.get("export")
        if export:
            exported = [*columns, *visible(EXTRA_EXPORTED, operator=operator)]
            return export_response(queryset, exported, export=export, filename="devices")
        try:
            page = paginate(queryset, page=request.GET.get("page"), per_page=per_page)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)

    is_filtered = any(request.GET.get(name) for name in filterset.form.fields if name != "ordering")
    context: dict[str, Any] = {
        "filter": filterset,
        "page": page,
        "errors": errors,
        # No ordering given: the table is in the model's default order, by name.
        "headers": headers(columns, request.GET.get("ordering", ""), default="name"),
        "export_query": export_query(request),
        "column_count": len(columns),
        "ordering": request.GET.get("ordering", ""),
        "per_page": per_page,
        "page_sizes": PAGE_SIZES,
        "multi_filters": [_multi(filterset, name) for name in ("kind", "state", "health")],
        "is_filtered": is_filtered,
        "filtered_manager": filtered_manager(filterset),
    }
    if page is not None and not page.paginator.count:
        # Nothing matches: say why, and how many there are without the filters.
        context["device_total"] = Device.objects.count()
        context["active_filters"] = _active_filters(filterset) if is_filtered else []
    if is_htmx_partial(request, TABLE_TARGET):
        response = render(
            request, "fabric/_device_table.html", {**context, "oob": True}, status=status
        )
    else:
        context["models"] = (
            Device.objects.exclude(model="")
            .order_by("model")
            .values_list("model", flat=True)
            .distinct()
        )
        response = render(request, "fabric/device_list.html", context, status=status)
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response


@login_required
def device_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One device. Tenant members see what it is and whether it is free; operators also where
    it sits, how it is cabled, and its history."""
    operator = is_operator(request.user)
    queryset = Device.objects.select_related("pool")
    if operator:
        queryset = queryset.select_related(
            "manager", "enclosure__rack", "enclosure__power_feed", "bound_host"
        )
    device = get_object_or_404(queryset, pk=pk)
    context: dict[str, Any] = {
        "device": device,
        # Operators see every holder; a member only their own tenants'.
        "holders": device_holders(device=device, user=request.user),
        # How big it is, as its kind declares (`fabric.kinds`): GiB of memory or GB.
        "device_kind": find(device.kind),
        # Free and healthy, and not in an enclosure an operator took out of service.
        "is_usable": device.is_usable
        and not (
            device.enclosure_id is not None
            and Enclosure.objects.filter(
                pk=device.enclosure_id, state=ComponentState.MAINTENANCE
            ).exists()
        ),
        "health_choices": Health,
        "state_choices": DeviceState,
    }
    if operator:
        uplinks = []
        if device.enclosure_id:
            uplinks = port_links(ports=Port.objects.filter(enclosure_id=device.enclosure_id))
        context.update(
            {
                **health_context("device", device.pk),
                "uplinks": uplinks,
                "failure_domains": list(device.failure_domains.order_by("kind", "name")),
                "attributes": display_settings(device.attributes),
                "history": paginate_or_raise(
                    change_history(target_type="device", target_id=device.pk),
                    page=request.GET.get("history_page"),
                    per_page=HISTORY_PAGE_SIZE,
                ),
            }
        )
    return render(request, "fabric/device_detail.html", context)
