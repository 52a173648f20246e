"""Operator pages of hosts, enclosures and switches: lists, and each one with its ports, links,
devices and change history. Tenant members get 404."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from fabric.filters import EnclosureFilterSet, HostFilterSet, SwitchFilterSet
from fabric.models import Enclosure, Host, Port, Switch
from fabric.selectors import port_links
from fabric.views.common import display_settings, operator_required
from fabric.views.health import health_context
from fabric.views.listing import Column, attr
from fabric.views.lists import filtered_list, history_page

_NAME = Column("Name", "name", attr("name"), sort="name")
_MODEL = Column("Vendor / model", "model", attr("model"), sort="model")
_RACK = Column("Rack", "rack", attr("rack.name"), sort="rack")
_UNIT = Column("Unit", "rack_unit", attr("rack_unit"))
_STATE = Column("State", "state", attr("state"), sort="state")
_HEALTH = Column("Health", "health", attr("health"), sort="health")
_SERIAL = Column("Serial", "serial", attr("serial"))
_VENDOR = Column("Vendor", "vendor", attr("vendor"))
_MANAGER = Column("Manager", "manager", attr("manager.name"))
HOST_COLUMNS = (
    _NAME,
    _MODEL,
    Column("Cores", "cores", attr("cores"), sort="cores", numeric=True),
    Column("Memory", "memory_gib", attr("memory_gib"), sort="memory", numeric=True),
    _RACK,
    Column("Bound devices", "bound_devices", attr("bound_count"), numeric=True),
    _STATE,
    _HEALTH,
    _SERIAL,
    _MANAGER,
)
ENCLOSURE_COLUMNS = (
    _NAME,
    Column("Kind", "kind", attr("kind"), sort="kind"),
    _MODEL,
    _RACK,
    Column("Power feed", "power_feed", attr("power_feed.name")),
    Column("Devices / slots", "devices", attr("device_count"), numeric=True),
    _STATE,
    _HEALTH,
    _SERIAL,
)
SWITCH_COLUMNS = (
    _NAME,
    Column("Protocol", "protocol", attr("protocol")),
    Column("Tier", "tier", attr("tier"), sort="tier"),
    _MODEL,
    Column("Firmware", "firmware", attr("firmware")),
    _RACK,
    Column("Ports", "ports", attr("port_count"), numeric=True),
    _STATE,
    _HEALTH,
    _SERIAL,
)
# Exported after the table's columns (the table shows vendor and model in one cell).
HOST_EXPORTED = (_VENDOR, _UNIT)
ENCLOSURE_EXPORTED = (_VENDOR, _UNIT, Column("Slots", "slots", attr("slots")), _MANAGER)
SWITCH_EXPORTED = (_VENDOR, _UNIT, _MANAGER)


@operator_required
def host_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every host with its rack, size, health, state and how many devices are bound to it."""
    queryset = Host.objects.select_related("rack", "manager").annotate(
        bound_count=Count("bound_devices", distinct=True)
    )
    return filtered_list(
        request,
        filterset_class=HostFilterSet,
        queryset=queryset,
        template="fabric/host_list.html",
        noun="hosts",
        columns=HOST_COLUMNS,
        exported=HOST_EXPORTED,
    )


@operator_required
def host_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A host: what it is, where it is, its uplinks, the devices bound to it, its history."""
    host = get_object_or_404(Host.objects.select_related("rack", "power_feed", "manager"), pk=pk)
    context = {
        "host": host,
        "ports": port_links(ports=Port.objects.filter(host=host)),
        "devices": host.bound_devices.select_related("pool", "enclosure").order_by("name", "pk"),
        "attributes": display_settings(host.attributes),
        "history": history_page(request, "host", host.pk),
    }
    return render(request, "fabric/host_detail.html", context)


@operator_required
def enclosure_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every enclosure with its kind, rack, power feed, slots and devices."""
    queryset = Enclosure.objects.select_related("rack", "power_feed", "manager").annotate(
        device_count=Count("devices", distinct=True)
    )
    return filtered_list(
        request,
        filterset_class=EnclosureFilterSet,
        queryset=queryset,
        template="fabric/enclosure_list.html",
        noun="enclosures",
        columns=ENCLOSURE_COLUMNS,
        exported=ENCLOSURE_EXPORTED,
    )


@operator_required
def enclosure_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """An enclosure (a failure domain): its uplinks, every device in it, its history."""
    enclosure = get_object_or_404(
        Enclosure.objects.select_related("rack", "power_feed", "manager"), pk=pk
    )
    devices = list(enclosure.devices.select_related("pool", "bound_host").order_by("slot", "name"))
    context = {
        "enclosure": enclosure,
        "ports": port_links(ports=Port.objects.filter(enclosure=enclosure)),
        "devices": devices,
        "bound_count": sum(1 for d in devices if d.bound_host_id),
        **health_context("enclosure", enclosure.pk),
        "attributes": display_settings(enclosure.attributes),
        "history": history_page(request, "enclosure", enclosure.pk),
    }
    return render(request, "fabric/enclosure_detail.html", context)


@operator_required
def switch_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every switch with its protocol, tier, rack and port count."""
    queryset = Switch.objects.select_related("rack", "manager").annotate(
        port_count=Count("ports", distinct=True)
    )
    return filtered_list(
        request,
        filterset_class=SwitchFilterSet,
        queryset=queryset,
        template="fabric/switch_list.html",
        noun="switches",
        columns=SWITCH_COLUMNS,
        exported=SWITCH_EXPORTED,
    )


@operator_required
def switch_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A switch: its ports and what each is cabled to, and its history."""
    switch = get_object_or_404(
        Switch.objects.select_related("rack", "power_feed", "manager"), pk=pk
    )
    ports = port_links(ports=Port.objects.filter(switch=switch))
    link_states: dict[str, int] = {}
    for row in ports:
        if row.link is not None:
            link_states[row.link.state] = link_states.get(row.link.state, 0) + 1
    context = {
        "switch": switch,
        "ports": ports,
        "link_states": sorted(link_states.items()),
        **health_context("switch", switch.pk),
        "attributes": display_settings(switch.attributes),
        "history": history_page(request, "switch", switch.pk),
    }
    return render(request, "fabric/switch_detail.html", context)
