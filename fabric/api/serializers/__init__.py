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

from drf_spectacular.utils import PolymorphicProxySerializer

from fabric.api.serializers.devices import (
    DeviceSerializer,
    OperatorPoolSerializer,
    PoolSerializer,
    TenantDeviceSerializer,
)
from fabric.api.serializers.inventory import (
    EnclosureSerializer,
    FabricManagerSerializer,
    HostSerializer,
    LinkSerializer,
    PowerFeedSerializer,
    RackSerializer,
    SwitchSerializer,
)
from fabric.api.serializers.refs import (
    LinkEndSerializer,
    MaskedJSONField,
    NamedRefSerializer,
    PoolRefSerializer,
    PortOwnerSerializer,
    PortSerializer,
)


def for_caller(name: str, operator: Any, tenant: Any, *, many: bool = False) -> Any:
    """For the schema: a response in one shape for operators and another for everyone else,
    `oneOf` the two (the tenant shape holds its own fields and no other)."""
    return PolymorphicProxySerializer(
        component_name=name,
        serializers=[operator, tenant],
        resource_type_field_name=None,
        many=many,
    )


__all__ = [
    "DeviceSerializer",
    "EnclosureSerializer",
    "FabricManagerSerializer",
    "HostSerializer",
    "LinkEndSerializer",
    "LinkSerializer",
    "MaskedJSONField",
    "NamedRefSerializer",
    "OperatorPoolSerializer",
    "PoolRefSerializer",
    "PoolSerializer",
    "PortOwnerSerializer",
    "PortSerializer",
    "PowerFeedSerializer",
    "RackSerializer",
    "SwitchSerializer",
    "TenantDeviceSerializer",
    "for_caller",
]
