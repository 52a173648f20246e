"""Serializers of the fabric API (read-only: the fabric is written by inventory sync).

Two audiences, two shapes. Operators see everything a fabric manager reported. Tenant
members see pools with their availability and devices as the device table shows them:
what a device is and whether it is free, never where it sits or how it is wired (serial,
firmware, external id, enclosure, rack, bound host, manager). The tenant shapes are
separate classes rather than fields removed at run time, so the schema documents both and a
field added to the operator shape can never leak to tenants by default.

Every serializer reads only what the viewsets load with select_related/prefetch_related:
serializing a page must not add queries per row.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from fabric.models import (
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Pool,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.secrets import MASK, mask_endpoint, mask_secrets


class MaskedJSONField(serializers.JSONField):
    """A read-only JSON object whose secret-looking values are masked (see mask_secrets)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("read_only", True)
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> Any:
        return mask_secrets(value or {})


# --- References to related rows ---------------------------------------------------------------


class NamedRefSerializer(serializers.Serializer):
    """A related row by id and name (rack, enclosure, host, manager, ...)."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)


class PoolRefSerializer(serializers.Serializer):
    """A pool by id, slug (its key in URLs and filters) and name."""

    id = serializers.IntegerField(read_only=True)
    slug = serializers.SlugField(read_only=True)
    name = serializers.CharField(read_only=True)


class PortOwnerSerializer(serializers.Serializer):
    """What a port belongs to: a switch, a host or an enclosure."""

    type = serializers.ChoiceField(choices=["switch", "host", "enclosure"], read_only=True)
    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)


class PortSerializer(serializers.ModelSerializer):
    """A port as listed under its switch, host or enclosure."""

    class Meta:
        model = Port
        fields = ["id", "name", "number", "role", "lanes", "speed_gts", "health", "is_present"]
        read_only_fields = fields


class LinkEndSerializer(serializers.ModelSerializer):
    """One end of a link: the port and what it belongs to."""

    owner = serializers.SerializerMethodField()

    class Meta:
        model = Port
        fields = ["id", "name", "role", "owner"]
        read_only_fields = fields

    @extend_schema_field(PortOwnerSerializer)
    def get_owner(self, port: Port) -> dict[str, Any] | None:
        # The viewset select_related()s all three owners: reading them costs no query.
        for kind in ("switch", "host", "enclosure"):
            owner = getattr(port, kind)
            if owner is not None:
                return {"type": kind, "id": owner.pk, "name": owner.name}
        return None


# --- Operator shapes ----------------------------------------------------------------------------

DISCOVERED_FIELDS = [
    "health",
    "manager",
    "external_id",
    "attributes",
    "first_seen_at",
    "last_seen_at",
    "created_at",
    "updated_at",
]


class DiscoveredSerializer(serializers.HyperlinkedModelSerializer):
    """Fields every discovered thing has: which manager reported it, as what, and when."""

    id = serializers.IntegerField(read_only=True)
    manager = NamedRefSerializer(read_only=True)
    attributes = MaskedJSONField(
        help_text=f"What the manager reported; values of secret-looking keys read {MASK!r}."
    )


class RackSerializer(DiscoveredSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:rack_detail")

    class Meta:
        model = Rack
        fields = ["id", "url", "name", "location", *DISCOVERED_FIELDS]
        read_only_fields = fields


class PowerFeedSerializer(DiscoveredSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:power_feed_detail")
    rack = NamedRefSerializer(read_only=True, allow_null=True)

    class Meta:
        model = PowerFeed
        fields = ["id", "url", "name", "rack", "capacity_kw", *DISCOVERED_FIELDS]
        read_only_fields = fields


class HostSerializer(DiscoveredSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:host_detail")
    rack = NamedRefSerializer(read_only=True, allow_null=True)
    power_feed = NamedRefSerializer(read_only=True, allow_null=True)
    ports = PortSerializer(many=True, read_only=True)

    class Meta:
        model = Host
        fields = [
            "id",
            "url",
            "name",
            "vendor",
            "model",
            "serial",
            "cores",
            "memory_gib",
            "rack",
            "power_feed",
            "state",
            "ports",
            *DISCOVERED_FIELDS,
        ]
        read_only_fields = fields


class EnclosureSerializer(DiscoveredSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:enclosure_detail")
    rack = NamedRefSerializer(read_only=True, allow_null=True)
    power_feed = NamedRefSerializer(read_only=True, allow_null=True)
    ports = PortSerializer(many=True, read_only=True)

    class Meta:
        model = Enclosure
        fields = [
            "id",
            "url",
            "name",
            "kind",
            "vendor",
            "model",
            "serial",
            "slots",
            "rack",
            "power_feed",
            "state",
            "ports",
            *DISCOVERED_FIELDS,
        ]
        read_only_fields = fields


class SwitchSerializer(DiscoveredSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:switch_detail")
    rack = NamedRefSerializer(read_only=True, allow_null=True)
    power_feed = NamedRefSerializer(read_only=True, allow_null=True)
    ports = PortSerializer(many=True, read_only=True)

    class Meta:
        model = Switch
        fields = [
            "id",
            "url",
            "name",
            "vendor",
            "model",
            "serial",
            "firmware",
            "protocol",
            "tier",
            "rack",
            "power_feed",
            "state",
            "ports",
            *DISCOVERED_FIELDS,
        ]
        read_only_fields = fields


class LinkSerializer(DiscoveredSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:link_detail")
    a_port = LinkEndSerializer(read_only=True)
    b_port = LinkEndSerializer(read_only=True)

    class Meta:
        model = Link
        fields = [
            "id",
            "url",
            "a_port",
            "b_port",
            "latency_ns",
            "bandwidth_gbps",
            "state",
            "is_present",
            *DISCOVERED_FIELDS,
        ]
        read_only_fields = fields


ALLOCATED_GIB_HELP = (
    "CXL memory: GiB held by compositions' slices (counted as allocated in its pool); "
    "0 for a device bound whole."
)
FREE_GIB_HELP = (
    "CXL memory: GiB a new slice may take now (0 when the device is failed, critical or in "
    "maintenance); null for a device bound whole."
)


class DeviceSerializer(DiscoveredSerializer):
    """A device as operators see it: everything, including where it sits and what holds it."""

    url = serializers.HyperlinkedIdentityField(view_name="api:device_detail")
    pool = PoolRefSerializer(read_only=True, allow_null=True)
    enclosure = NamedRefSerializer(read_only=True, allow_null=True)
    rack = NamedRefSerializer(
        source="enclosure.rack",
        read_only=True,
        allow_null=True,
        help_text="The rack of the device's enclosure.",
    )
    bound_host = NamedRefSerializer(read_only=True, allow_null=True)
    is_partitionable = serializers.BooleanField(read_only=True)
    allocated_gib = serializers.IntegerField(read_only=True, help_text=ALLOCATED_GIB_HELP)
    free_gib = serializers.IntegerField(read_only=True, allow_null=True, help_text=FREE_GIB_HELP)

    class Meta:
        model = Device
        fields = [
            "id",
            "url",
            "name",
            "kind",
            "vendor",
            "model",
            "serial",
            "firmware",
            "memory_gib",
            "capacity_gb",
            "is_partitionable",
            "allocated_gib",
            "free_gib",
            "state",
            "pool",
            "enclosure",
            "slot",
            "rack",
            "bound_host",
            *DISCOVERED_FIELDS,
        ]
        read_only_fields = fields


class FabricManagerSerializer(serializers.HyperlinkedModelSerializer):
    """A fabric manager; secret-looking settings and endpoint credentials are masked."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:fabric_manager_detail")
    endpoint = serializers.SerializerMethodField(
        help_text=f"Where the manager listens; a password in the URL reads {MASK!r}."
    )
    settings = MaskedJSONField(
        help_text=f"Driver options; values of secret-looking keys read {MASK!r}."
    )

    class Meta:
        model = FabricManager
        fields = [
            "id",
            "url",
            "name",
            "driver",
            "endpoint",
            "settings",
            "is_enabled",
            "poll_interval_s",
            "last_synced_at",
            "last_sync_error",
            "health_poll_interval_s",
            "last_health_poll_at",
            "last_health_poll_error",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_endpoint(self, manager: FabricManager) -> str:
        return mask_endpoint(manager.endpoint) if manager.endpoint else ""


# --- Shapes for everyone (tenant members and operators) -----------------------------------------


class TenantDeviceSerializer(serializers.HyperlinkedModelSerializer):
    """A device as tenant members see it: what it is and whether it is available.

    Deliberately no serial, firmware, external id, enclosure, slot, rack, bound host,
    manager or raw attributes: those are fabric internals (STYLE §8).
    """

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:device_detail")
    pool = PoolRefSerializer(read_only=True, allow_null=True)
    is_partitionable = serializers.BooleanField(read_only=True)
    allocated_gib = serializers.IntegerField(read_only=True, help_text=ALLOCATED_GIB_HELP)
    free_gib = serializers.IntegerField(read_only=True, allow_null=True, help_text=FREE_GIB_HELP)

    class Meta:
        model = Device
        fields = [
            "id",
            "url",
            "name",
            "kind",
            "vendor",
            "model",
            "memory_gib",
            "capacity_gb",
            "is_partitionable",
            "allocated_gib",
            "free_gib",
            "state",
            "health",
            "pool",
        ]
        read_only_fields = fields


UNIT_CHOICES = [("devices", "devices"), ("GiB", "GiB")]


class PoolSerializer(serializers.HyperlinkedModelSerializer):
    """A pool with its availability, as every signed-in user sees it.

    The numbers come from `fabric.selectors.pool_capacities`, which the viewset attaches to
    each pool as `availability` (two queries per page, whatever the device count).
    """

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:pool_detail", lookup_field="slug")
    unit = serializers.ChoiceField(
        choices=UNIT_CHOICES,
        source="availability.unit",
        read_only=True,
        help_text="`GiB` for partitionable memory pools, else `devices`.",
    )
    capacity = serializers.IntegerField(
        source="availability.capacity",
        read_only=True,
        help_text="allocated + free + unavailable; absent devices count nowhere.",
    )
    allocated = serializers.IntegerField(
        source="availability.allocated",
        read_only=True,
        help_text="Reserved or bound devices; in a memory pool, the GiB its slices hold.",
    )
    free = serializers.IntegerField(source="availability.free", read_only=True)
    unavailable = serializers.IntegerField(
        source="availability.unavailable",
        read_only=True,
        help_text="Failed, in maintenance, or critical health (in a memory pool, the GiB of "
        "such devices that no slice holds).",
    )

    class Meta:
        model = Pool
        fields = [
            "id",
            "url",
            "slug",
            "name",
            "kind",
            "model",
            "description",
            "unit",
            "capacity",
            "allocated",
            "free",
            "unavailable",
        ]
        read_only_fields = fields


class OperatorPoolSerializer(PoolSerializer):
    """A pool as operators see it: also the rack its membership rule is limited to."""

    rack = NamedRefSerializer(read_only=True, allow_null=True)

    class Meta(PoolSerializer.Meta):
        fields = [*PoolSerializer.Meta.fields, "rack"]
        read_only_fields = fields


__all__ = [
    "DeviceSerializer",
    "EnclosureSerializer",
    "FabricManagerSerializer",
    "HostSerializer",
    "LinkSerializer",
    "OperatorPoolSerializer",
    "PoolSerializer",
    "PowerFeedSerializer",
    "RackSerializer",
    "SwitchSerializer",
    "TenantDeviceSerializer",
]
