"""Operator pages of links: every cable between two ports, filtered by state, health, rack
or switch, and a link's page with both its ends (the switch port and the host, enclosure or
switch across it), its width, speed, latency and bandwidth, its health samples and alerts,
and its history. Tenant members get 404. A page costs a fixed number of queries: the ends,
their owners and racks come with the link in one SELECT."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from fabric.filters import LinkFilterSet
from fabric.models import LINK_END_OWNERS, Enclosure, Host, Link, Port, Switch
from fabric.views.common import display_settings, operator_required
from fabric.views.health import health_context
from fabric.views.listing import Column, attr
from fabric.views.lists import filtered_list, history_page

# Each end's port, what it belongs to, and (on the link's page) where that sits.
_OWNERS = list(LINK_END_OWNERS)


@dataclass(frozen=True, slots=True)
class LinkEnd:
    """One end of a link: its port and what owns the port (a switch, host or enclosure)."""

    label: str  # "A" or "B"
    port: Port
    kind: str
    owner: Switch | Host | Enclosure | None


def _end(label: str, port: Port) -> LinkEnd:
    for kind in ("switch", "host", "enclosure"):
        owner = getattr(port, kind)
        if owner is not None:
            return LinkEnd(label=label, port=port, kind=kind, owner=owner)
    return LinkEnd(label=label, port=port, kind="", owner=None)


LINK_COLUMNS = (
    Column("Link", "id", attr("pk"), sort="id"),
    Column("End A", "end_a", lambda link: str(link.a_port)),
    Column("End B", "end_b", lambda link: str(link.b_port)),
    Column("Width", "lanes", lambda link: min(link.a_port.lanes, link.b_port.lanes), numeric=True),
    Column("Latency", "latency_ns", attr("latency_ns"), sort="latency", numeric=True),
    Column("Bandwidth", "bandwidth_gbps", attr("bandwidth_gbps"), sort="bandwidth", numeric=True),
    Column("State", "state", attr("state"), sort="state"),
    Column("Health", "health", attr("health"), sort="health"),
    Column("Manager", "manager", attr("manager.name")),
)
LINK_EXPORTED = (Column("Present", "present", attr("is_present")),)


@operator_required
def link_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every link with its two ends, width, latency, bandwidth, state and health."""
    queryset = Link.objects.select_related("manager", *_OWNERS)
    return filtered_list(
        request,
        filterset_class=LinkFilterSet,
        queryset=queryset,
        template="fabric/link_list.html",
        noun="links",
        columns=LINK_COLUMNS,
        exported=LINK_EXPORTED,
        order=("id",),
        placeholder="Switch, host, enclosure or port",
    )


@operator_required
def link_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A link: both ends and where they sit, what it carries, its health and history."""
    link = get_object_or_404(
        Link.objects.select_related("manager", *(f"{owner}__rack" for owner in _OWNERS)), pk=pk
    )
    ends = [_end("A", link.a_port), _end("B", link.b_port)]
    context = {
        "link": link,
        "ends": ends,
        # What the link can carry is what its narrower end can: lanes and rate per lane.
        "lanes": min(link.a_port.lanes, link.b_port.lanes),
        "speed_gts": min(link.a_port.speed_gts, link.b_port.speed_gts),
        **health_context("link", link.pk),
        "attributes": display_settings(link.attributes),
        "history": history_page(request, "link", link.pk),
    }
    return render(request, "fabric/link_detail.html", context)
