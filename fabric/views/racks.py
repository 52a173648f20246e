"""Operator pages of racks and power feeds: lists, a rack's elevation (what sits at which
unit, coloured by health) with its feeds and the health of what it holds, a feed's load of
switches, hosts and enclosures, and each one's change history. Tenant members get 404.

Every page costs a fixed number of queries however full the rack: the lists count what each
rack or feed holds in subqueries of their one SELECT, the rack page reads its boxes in one
query per kind (`fabric.elevation`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from fabric.choices import AlertState, ComponentState, DeviceState, Health
from fabric.elevation import elevation, rack_occupants
from fabric.filters import PowerFeedFilterSet, RackFilterSet
from fabric.models import Alert, Device, Enclosure, Host, PowerFeed, Rack, Switch
from fabric.views.common import display_settings, operator_required
from fabric.views.health import health_context
from fabric.views.listing import Column, attr
from fabric.views.lists import filtered_list, history_page

_MANAGER = Column("Manager", "manager", attr("manager.name"))
_HEALTH = Column("Health", "health", attr("health"), sort="health")
RACK_COLUMNS = (
    Column("Name", "name", attr("name"), sort="name"),
    Column("Location", "location", attr("location"), sort="location"),
    Column("Units taken", "units_taken", attr("used_u"), numeric=True),
    Column("Switches", "switches", attr("switch_count"), numeric=True),
    Column("Hosts", "hosts", attr("host_count"), numeric=True),
    Column("Enclosures", "enclosures", attr("enclosure_count"), numeric=True),
    Column("Power feeds", "power_feeds", attr("feed_count"), numeric=True),
    _HEALTH,
    _MANAGER,
)
RACK_EXPORTED = (
    Column("Height (U)", "height_u", attr("height_u")),
    Column("Present", "present", attr("is_present")),
)
FEED_COLUMNS = (
    Column("Name", "name", attr("name"), sort="name"),
    Column("Rack", "rack", attr("rack.name"), sort="rack"),
    Column("Capacity", "capacity_kw", attr("capacity_kw"), sort="capacity", numeric=True),
    Column("Supplies", "supplies", attr("fed_count"), numeric=True),
    _HEALTH,
    _MANAGER,
)
FEED_EXPORTED = (Column("Present", "present", attr("is_present")),)

# What sits in a rack or on a feed, by the foreign key that says so.
_BOXES = (Switch, Host, Enclosure)
_HEALTH_ORDER = [Health.CRITICAL, Health.WARNING, Health.UNKNOWN, Health.OK]


def _per(model: type[Switch | Host | Enclosure], key: str, *, units: bool = False) -> Coalesce:
    """How many present boxes of `model` point at the outer row through `key` (or how many
    units those with a unit take), as a subquery: no join multiplies the outer rows."""
    rows: QuerySet[Any] = (
        model.objects.filter(**{key: OuterRef("pk")})
        .exclude(state=ComponentState.ABSENT)
        .order_by()
        .values(key)
    )
    if units:
        rows = rows.filter(rack_unit__isnull=False).annotate(n=Sum("height_u"))
    else:
        rows = rows.annotate(n=Count("pk"))
    return Coalesce(Subquery(rows.values("n")[:1], output_field=IntegerField()), Value(0))


def _feeds_per_rack() -> Coalesce:
    rows = (
        PowerFeed.objects.filter(rack=OuterRef("pk"), is_present=True)
        .order_by()
        .values("rack")
        .annotate(n=Count("pk"))
    )
    return Coalesce(Subquery(rows.values("n")[:1], output_field=IntegerField()), Value(0))


def _fed_count() -> Any:
    """How many present switches, hosts and enclosures a power feed supplies."""
    switches, hosts, enclosures = (_per(m, "power_feed") for m in _BOXES)
    return switches + hosts + enclosures


@operator_required
def rack_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every rack with its location, how many of its units are taken, what it holds and its
    feeds."""
    switches, hosts, enclosures = (_per(m, "rack") for m in _BOXES)
    used = [_per(m, "rack", units=True) for m in _BOXES]
    queryset = Rack.objects.select_related("manager").annotate(
        switch_count=switches,
        host_count=hosts,
        enclosure_count=enclosures,
        feed_count=_feeds_per_rack(),
        used_u=used[0] + used[1] + used[2],
    )
    return filtered_list(
        request,
        filterset_class=RackFilterSet,
        queryset=queryset,
        template="fabric/rack_list.html",
        noun="racks",
        columns=RACK_COLUMNS,
        exported=RACK_EXPORTED,
        placeholder="Name, location",
    )


def _health_summary(occupants: list[Any]) -> list[tuple[str, int]]:
    counts = Counter(o.health for o in occupants)
    return [(health, counts[health]) for health in _HEALTH_ORDER if counts[health]]


@operator_required
def rack_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A rack: its elevation, its power feeds, the health of what it holds, its history."""
    rack = get_object_or_404(Rack.objects.select_related("manager"), pk=pk)
    occupants = rack_occupants(rack)
    drawing = elevation(rack.height_u, occupants)
    present = [o for o in occupants if o.state != ComponentState.ABSENT]
    devices = (
        Device.objects.filter(enclosure__rack=rack)
        .exclude(state=DeviceState.ABSENT)
        .order_by()
        .values_list("health")
        .annotate(n=Count("pk"))
    )
    device_counts = dict(devices)
    context = {
        "rack": rack,
        "elevation": drawing,
        "feeds": list(
            PowerFeed.objects.filter(rack=rack).annotate(fed_count=_fed_count()).order_by("name")
        ),
        "box_health": _health_summary(present),
        "troubled": [o for o in present if o.health != Health.OK],
        "device_health": [(h, device_counts[h]) for h in _HEALTH_ORDER if device_counts.get(h)],
        "alerts": list(
            Alert.objects.filter(source_type="rack", source_id=rack.pk, state=AlertState.OPEN)
            .select_related("acknowledged_by")
            .order_by("-opened_at", "-id")
        ),
        "attributes": display_settings(rack.attributes),
        "history": history_page(request, "rack", rack.pk),
    }
    return render(request, "fabric/rack_detail.html", context)


@operator_required
def power_feed_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every power feed with its rack, capacity and how many boxes it supplies."""
    queryset = PowerFeed.objects.select_related("rack", "manager").annotate(fed_count=_fed_count())
    return filtered_list(
        request,
        filterset_class=PowerFeedFilterSet,
        queryset=queryset,
        template="fabric/power_feed_list.html",
        noun="power feeds",
        columns=FEED_COLUMNS,
        exported=FEED_EXPORTED,
        placeholder="Name",
    )


@operator_required
def power_feed_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A power feed (a failure domain): its rack, what it supplies, its health, its history."""
    feed = get_object_or_404(PowerFeed.objects.select_related("rack", "manager"), pk=pk)
    fed = [
        (kind, row)
        for kind, model in (("switch", Switch), ("host", Host), ("enclosure", Enclosure))
        for row in model.objects.filter(power_feed=feed)
        .select_related("rack")
        .order_by("name", "pk")
    ]
    context = {
        "feed": feed,
        "fed": fed,
        "fed_present": sum(1 for _, row in fed if row.state != ComponentState.ABSENT),
        **health_context("power_feed", feed.pk),
        "attributes": display_settings(feed.attributes),
        "history": history_page(request, "power_feed", feed.pk),
    }
    return render(request, "fabric/power_feed_detail.html", context)
