"""The fabric as operators see it: everything a fabric manager reported, secrets masked."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from fabric.api.serializers.refs import (
    LinkEndSerializer,
    MaskedJSONField,
    NamedRefSerializer,
    PortSerializer,
)
from fabric.models import Enclosure, FabricManager, Host, Link, PowerFeed, Rack, Switch
from fabric.secrets import MASK, mask_endpoint, mask_secrets
from fabric.services.managers.input import TLS_KEYS

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
    settings = serializers.SerializerMethodField(
        help_text=f"Driver options (the TLS ones apart); values of secret-looking keys read "
        f"{MASK!r}."
    )
    verify_tls = serializers.SerializerMethodField(
        help_text="Whether the manager's TLS certificate is verified."
    )
    ca_bundle = serializers.SerializerMethodField(
        help_text="The CA bundle the certificate is verified against; empty for the system's."
    )
    has_credentials = serializers.BooleanField(
        read_only=True, help_text="Whether credentials are stored (they are never returned)."
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
            "verify_tls",
            "ca_bundle",
            "has_credentials",
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

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_settings(self, manager: FabricManager) -> dict[str, Any]:
        options = {k: v for k, v in (manager.settings or {}).items() if k not in TLS_KEYS}
        masked: dict[str, Any] = mask_secrets(options)
        return masked

    def get_verify_tls(self, manager: FabricManager) -> bool:
        return (manager.settings or {}).get("verify_tls") is not False

    def get_ca_bundle(self, manager: FabricManager) -> str:
        return str((manager.settings or {}).get("ca_bundle") or "")
