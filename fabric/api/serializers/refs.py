"""Related rows by reference (id and name), ports and link ends, and the masked JSON field."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from fabric.models import Port
from fabric.secrets import mask_secrets


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
