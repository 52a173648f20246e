"""Devices and pools, in the operators' shape and in the shape for everyone."""

from __future__ import annotations

from rest_framework import serializers

from fabric.api.serializers.inventory import DISCOVERED_FIELDS, DiscoveredSerializer
from fabric.api.serializers.refs import NamedRefSerializer, PoolRefSerializer
from fabric.models import Device, Pool

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


class TenantDeviceSerializer(serializers.HyperlinkedModelSerializer):
    """A device as tenant members see it: what it is and whether it is available.

    Deliberately no serial, firmware, external id, enclosure, slot, rack, bound host,
    manager or raw attributes: those are fabric internals.
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
    """A pool with its availability, as every signed-in user sees it."""

    # The numbers come from fabric.selectors.pool_capacities, which the viewset attaches to
    # each pool as `availability` (two queries per page, whatever the device count).

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
