"""Serializers of composer's API: jobs, the token exchange, templates, quotas, compositions.

Tenant members never get fabric internals here: devices come as id, name, kind, model and
size (no serial, slot or enclosure), and a placement without the snapshot ids.
"""

from __future__ import annotations

from composer.api.serializers.auth import TokenRequestSerializer, TokenSerializer
from composer.api.serializers.compositions import (
    AllocationSerializer,
    CompositionDetailSerializer,
    CompositionRequestSerializer,
    CompositionSerializer,
    DeviceRefSerializer,
    HostRefSerializer,
    PathSerializer,
    PlacementRejectedSerializer,
    PlanSerializer,
    StateChangeSerializer,
    plan_public,
)
from composer.api.serializers.jobs import (
    JobDetailSerializer,
    JobLogLineSerializer,
    JobSerializer,
    TenantJobLogLineSerializer,
    TenantRefSerializer,
)
from composer.api.serializers.spec import SpecField
from composer.api.serializers.templates import (
    QuotaSerializer,
    QuotaUsageSerializer,
    TemplateSerializer,
)

__all__ = [
    "AllocationSerializer",
    "CompositionDetailSerializer",
    "CompositionRequestSerializer",
    "CompositionSerializer",
    "DeviceRefSerializer",
    "HostRefSerializer",
    "JobDetailSerializer",
    "JobLogLineSerializer",
    "JobSerializer",
    "PathSerializer",
    "PlacementRejectedSerializer",
    "PlanSerializer",
    "QuotaSerializer",
    "QuotaUsageSerializer",
    "SpecField",
    "StateChangeSerializer",
    "TemplateSerializer",
    "TenantJobLogLineSerializer",
    "TenantRefSerializer",
    "TokenRequestSerializer",
    "TokenSerializer",
    "plan_public",
]
