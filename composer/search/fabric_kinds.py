"""Search kinds of the fabric's elements: for operators only (hosts, enclosures, switches,
links, racks, power feeds, fabric managers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet

from composer.search.base import Finder, Hit, each, joined, page_url, serial_words, text_match
from fabric.models import (
    LINK_END_OWNERS,
    Enclosure,
    FabricManager,
    Host,
    Link,
    PowerFeed,
    Rack,
    Switch,
)


def _component_rows(model: Any, *related: str) -> Callable[[Any, str, bool], QuerySet[Any]]:
    def rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
        match = text_match(text, ("name", "model", "vendor", "serial")) | Q(
            external_id__iexact=text
        )
        return model.objects.filter(match).select_related(*related)

    return rows


def _host_hit(host: Host, operator: bool) -> Hit:
    return Hit(
        "host",
        host.pk,
        host.name,
        joined(
            host.get_state_display(),
            f"{host.cores} cores",
            f"{host.memory_gib} GiB",
            host.rack.name if host.rack else "",
            serial_words(host.serial),
        ),
        page_url("fabric:host_detail", host.pk),
    )


def _enclosure_hit(enclosure: Enclosure, operator: bool) -> Hit:
    return Hit(
        "enclosure",
        enclosure.pk,
        enclosure.name,
        joined(
            enclosure.get_kind_display(),
            enclosure.model,
            enclosure.get_state_display(),
            enclosure.rack.name if enclosure.rack else "",
            serial_words(enclosure.serial),
        ),
        page_url("fabric:enclosure_detail", enclosure.pk),
    )


def _switch_hit(switch: Switch, operator: bool) -> Hit:
    return Hit(
        "switch",
        switch.pk,
        switch.name,
        joined(
            switch.get_protocol_display(),
            switch.get_tier_display(),
            switch.model,
            switch.get_state_display(),
            serial_words(switch.serial),
        ),
        page_url("fabric:switch_detail", switch.pk),
    )


def _link_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    """Links by the name of what either end plugs into, or by id."""
    fields = tuple(f"{owner}__name" for owner in LINK_END_OWNERS)
    return Link.objects.filter(text_match(text, fields)).select_related(*LINK_END_OWNERS)


def _link_hit(link: Link, operator: bool) -> Hit:
    return Hit(
        "link",
        link.pk,
        f"{link.a_port} ↔ {link.b_port}",
        joined(
            link.get_state_display(), f"{link.bandwidth_gbps:g} GB/s", link.get_health_display()
        ),
        page_url("fabric:link_detail", link.pk),
    )


def _rack_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    return Rack.objects.filter(text_match(text, ("name", "location")) | Q(external_id__iexact=text))


def _rack_hit(rack: Rack, operator: bool) -> Hit:
    return Hit(
        "rack",
        rack.pk,
        rack.name,
        joined(rack.location, f"{rack.height_u} U", rack.get_health_display()),
        page_url("fabric:rack_detail", rack.pk),
    )


def _feed_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    return PowerFeed.objects.filter(
        text_match(text, ("name",)) | Q(external_id__iexact=text)
    ).select_related("rack")


def _feed_hit(feed: PowerFeed, operator: bool) -> Hit:
    return Hit(
        "power_feed",
        feed.pk,
        feed.name,
        joined(
            feed.rack.name if feed.rack else "",
            f"{feed.capacity_kw:g} kW",
            feed.get_health_display(),
        ),
        page_url("fabric:power_feed_detail", feed.pk),
    )


def _manager_rows(user: Any, text: str, operator: bool) -> QuerySet[Any]:
    return FabricManager.objects.filter(text_match(text, ("name", "driver")))


def _manager_hit(manager: FabricManager, operator: bool) -> Hit:
    return Hit(
        "manager",
        manager.pk,
        manager.name,
        joined(manager.driver, "enabled" if manager.is_enabled else "disabled"),
        page_url("fabric:manager_detail", manager.pk),
    )


FABRIC_FINDERS = (
    Finder(
        "host",
        "Hosts",
        "bi-pc-display",
        True,
        "name",
        _component_rows(Host, "rack"),
        each(_host_hit),
    ),
    Finder(
        "enclosure",
        "Enclosures",
        "bi-hdd-stack",
        True,
        "name",
        _component_rows(Enclosure, "rack"),
        each(_enclosure_hit),
    ),
    Finder(
        "switch",
        "Switches",
        "bi-diagram-2",
        True,
        "name",
        _component_rows(Switch),
        each(_switch_hit),
    ),
    Finder("link", "Links", "bi-link-45deg", True, None, _link_rows, each(_link_hit)),
    Finder("rack", "Racks", "bi-bricks", True, "name", _rack_rows, each(_rack_hit)),
    Finder("power_feed", "Power feeds", "bi-plug", True, "name", _feed_rows, each(_feed_hit)),
    Finder(
        "manager", "Fabric managers", "bi-router", True, "name", _manager_rows, each(_manager_hit)
    ),
)
