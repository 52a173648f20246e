"""The fabric as operators see it: everything a fabric manager reported, secrets masked."""

from __future__ import annotations

from rest_framework import serializers

from fabric.api.serializers.refs import (
    LinkEndSerializer,
    MaskedJSONField,
    NamedRefSerializer,
    PortSerializer,
)
from fabric.models import Enclosure, FabricManager, Host, Link, PowerFeed, Rack, Switch
from fabric.secrets import MASK, mask_endpoint

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
