"""The admin of how the fabric is cabled and what fails together: ports and links (discovered),
failure domains and which devices they hold (derived at every inventory sync).
"""

from __future__ import annotations

from django.contrib import admin

from fabric.admin.base import DerivedAdmin, DiscoveredAdmin
from fabric.models import DeviceDomain, FailureDomain, Link, Port


@admin.register(Port)
class PortAdmin(DiscoveredAdmin):
    list_display = (
        "external_id",
        "name",
        "role",
        "switch",
        "host",
        "enclosure",
        "lanes",
        "speed_gts",
        "health",
        "is_present",
    )
    list_filter = ("manager", "role", "health", "is_present")
    search_fields = ("external_id", "name", "switch__name", "host__name", "enclosure__name")
    list_select_related = ("switch", "host", "enclosure")


@admin.register(Link)
class LinkAdmin(DiscoveredAdmin):
    list_display = ("external_id", "latency_ns", "bandwidth_gbps", "state", "health", "is_present")
    list_filter = ("manager", "state", "health", "is_present")
    search_fields = ("external_id", "a_port__external_id", "b_port__external_id")


@admin.register(FailureDomain)
class FailureDomainAdmin(DerivedAdmin):
    list_display = ("name", "kind", "key", "manager", "device_count", "host_count", "updated_at")
    list_filter = ("kind", "manager")
    search_fields = ("name", "key")
    list_select_related = ("manager",)


@admin.register(DeviceDomain)
class DeviceDomainAdmin(DerivedAdmin):
    list_display = ("device", "domain")
    list_filter = ("domain__kind",)
    search_fields = ("device__name", "domain__name", "domain__key")
    list_select_related = ("device", "domain")
    raw_id_fields = ("device", "domain")
