"""Read-only endpoints of the physical world: pools, devices, and (operators only) the fabric.

Each viewset loads its related rows up front (select_related / prefetch_related), so a page
costs the same number of queries whether it holds 2 rows or 500; each has a query-count test.
Every queryset has a total order ending in the primary key, so pagination is stable.

Pools and devices are for every signed-in user, in two shapes (see serializers). Everything
else is operator-only: tenant members get 404, as if it did not exist.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import BaseSerializer

from fabric import filters
from fabric.api import serializers
from fabric.api.health import DeviceHealthActions
from fabric.api.maintenance import MaintenanceActions
from fabric.api.permissions import IsOperatorOr404
from fabric.models import (
    Device,
    Enclosure,
    Host,
    Link,
    Pool,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.permissions import is_operator
from fabric.selectors import pool_capacities

TENANT_DEVICE_NOTE = (
    "Operators get every field below. Tenant members get the `TenantDevice` subset: id, url, "
    "name, kind, vendor, model, memory_gib, capacity_gb, is_partitionable, state, health, pool "
    "— never serial, firmware, external_id, enclosure, slot, rack, bound_host, manager or "
    "attributes; and the `enclosure`, `rack` and `manager` filters and the `enclosure` sort "
    "are operators' only."
)

TENANT_POOL_NOTE = "Operators also get `rack`, the rack the pool's membership rule is limited to."


def _ports() -> Prefetch[Any]:
    return Prefetch("ports", queryset=Port.objects.order_by("number", "name", "pk"))


class ReadOnlyViewSet(viewsets.ReadOnlyModelViewSet):
    """A read-only viewset whose rows are in a total order, so pages never repeat or skip.

    `?ordering=kind` replaces the queryset's order; thousands of rows tie on a kind, and the
    database may return ties in any order from one page to the next. Appending the primary
    key (as the HTML device table does) makes the order total.
    """

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        queryset = super().filter_queryset(queryset)
        order = list(queryset.query.order_by or queryset.model._meta.ordering)
        if not order or str(order[-1]).lstrip("-") not in ("pk", "id"):
            queryset = queryset.order_by(*order, "pk")
        return queryset


class OperatorViewSet(ReadOnlyViewSet):
    """Base of the fabric's operator-only resources: 401 anonymous, 404 tenant members."""

    permission_classes = [IsOperatorOr404]


@extend_schema_view(
    list=extend_schema(
        summary="List pools with their availability",
        description=(
            "Every pool with capacity, allocated, free and unavailable amounts, in `unit` "
            "(`devices`, or `GiB` for CXL memory pools). Pools are addressed by slug: "
            "`/api/v1/pools/h100/`, the same key as the devices filter `?pool=h100`. "
            + TENANT_POOL_NOTE
        ),
        responses=serializers.for_caller(
            "PoolForCaller",
            serializers.OperatorPoolSerializer,
            serializers.PoolSerializer,
            many=True,
        ),
        examples=[
            OpenApiExample(
                "A GPU pool",
                response_only=True,
                value={
                    "id": 1,
                    "url": "https://composer.example/api/v1/pools/h100/",
                    "slug": "h100",
                    "name": "H100 GPUs",
                    "kind": "gpu",
                    "model": "H100 SXM",
                    "description": "",
                    "unit": "devices",
                    "capacity": 64,
                    "allocated": 40,
                    "free": 22,
                    "unavailable": 2,
                    "rack": None,
                },
            )
        ],
    ),
    retrieve=extend_schema(
        summary="One pool with its availability",
        description="Addressed by slug. " + TENANT_POOL_NOTE,
        responses=serializers.for_caller(
            "PoolForCaller", serializers.OperatorPoolSerializer, serializers.PoolSerializer
        ),
    ),
)
class PoolViewSet(ReadOnlyViewSet):
    """Pools, by slug (the key tenants and filters use), with capacity/allocated/free."""

    queryset = Pool.objects.select_related("rack").order_by("name", "pk")
    filterset_class = filters.PoolFilterSet
    lookup_field = "slug"

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if is_operator(self.request.user) or getattr(self, "swagger_fake_view", False):
            return serializers.OperatorPoolSerializer
        return serializers.PoolSerializer

    def paginate_queryset(self, queryset: QuerySet[Any]) -> list[Any] | None:
        page: list[Pool] | None = super().paginate_queryset(queryset)
        if page is not None:
            _attach_availability(page)
        return page

    def get_object(self) -> Pool:
        pool: Pool = super().get_object()
        _attach_availability([pool])
        return pool


def _attach_availability(pools: list[Pool]) -> None:
    """Set `pool.availability` (a PoolCapacity) on each pool: two queries for the lot."""
    if not pools:
        return
    capacities = {
        capacity.pool.pk: capacity
        for capacity in pool_capacities(pools=Pool.objects.filter(pk__in=[p.pk for p in pools]))
    }
    for pool in pools:
        # Not a model field: an attribute for the serializer's `availability.*` sources.
        pool.availability = capacities[pool.pk]  # type: ignore[attr-defined]


@extend_schema_view(
    list=extend_schema(
        summary="List devices (the device table)",
        description=(
            "The same filters and sorts as the HTML device table (`/fabric/devices/`), from "
            "the same FilterSet. `ordering` takes `name`, `kind`, `model`, `state`, `health`, "
            "`pool`, `enclosure`, `memory`, each optionally prefixed with `-`; ties are broken "
            "by id. " + TENANT_DEVICE_NOTE
        ),
        responses=serializers.for_caller(
            "DeviceForCaller",
            serializers.DeviceSerializer,
            serializers.TenantDeviceSerializer,
            many=True,
        ),
    ),
    retrieve=extend_schema(
        summary="One device",
        description=TENANT_DEVICE_NOTE,
        responses=serializers.for_caller(
            "DeviceForCaller", serializers.DeviceSerializer, serializers.TenantDeviceSerializer
        ),
    ),
)
class DeviceViewSet(DeviceHealthActions, MaintenanceActions, ReadOnlyViewSet):
    """Devices for everyone signed in; operators in full, tenant members without internals.

    Operators also read a device's health samples (.../health/) and put it in or out of
    maintenance (.../maintenance/); tenant members get 404 there.
    """

    filterset_class = filters.DeviceFilterSet

    def get_queryset(self) -> QuerySet[Device]:
        queryset = Device.objects.select_related("pool").order_by("name", "pk")
        if is_operator(self.request.user):
            queryset = queryset.select_related("enclosure__rack", "bound_host", "manager")
        return queryset

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if is_operator(self.request.user) or getattr(self, "swagger_fake_view", False):
            return serializers.DeviceSerializer
        return serializers.TenantDeviceSerializer

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """A member's FilterSet has no operators' filters (the page does not offer them); in
        the API, asking for one is a 400 naming it rather than a list silently unfiltered."""
        if not is_operator(self.request.user):
            for name in filters.OPERATOR_ONLY_FILTERS:
                if self.request.query_params.get(name, "").strip():
                    raise ValidationError({name: [f"Filtering by {name} is for operators."]})
        return super().filter_queryset(queryset)


@extend_schema_view(
    list=extend_schema(summary="List hosts (operators)"),
    retrieve=extend_schema(summary="One host with its ports (operators)"),
)
class HostViewSet(OperatorViewSet):
    """Compute nodes with their uplink ports."""

    queryset = (
        Host.objects.select_related("rack", "power_feed", "manager")
        .prefetch_related(_ports())
        .order_by("name", "pk")
    )
    serializer_class = serializers.HostSerializer
    filterset_class = filters.HostFilterSet


@extend_schema_view(
    list=extend_schema(summary="List enclosures (operators)"),
    retrieve=extend_schema(summary="One enclosure with its ports (operators)"),
)
class EnclosureViewSet(MaintenanceActions, OperatorViewSet):
    """Boxes of devices (GPU chassis, CXL memory boxes, JBOFs, I/O chassis)."""

    queryset = (
        Enclosure.objects.select_related("rack", "power_feed", "manager")
        .prefetch_related(_ports())
        .order_by("name", "pk")
    )
    serializer_class = serializers.EnclosureSerializer
    filterset_class = filters.EnclosureFilterSet


@extend_schema_view(
    list=extend_schema(summary="List switches (operators)"),
    retrieve=extend_schema(summary="One switch with its ports (operators)"),
)
class SwitchViewSet(MaintenanceActions, OperatorViewSet):
    """PCIe/CXL switches with their ports."""

    queryset = (
        Switch.objects.select_related("rack", "power_feed", "manager")
        .prefetch_related(_ports())
        .order_by("name", "pk")
    )
    serializer_class = serializers.SwitchSerializer
    filterset_class = filters.SwitchFilterSet


_LINK_END_RELATIONS = [
    f"{end}__{owner}" for end in ("a_port", "b_port") for owner in ("switch", "host", "enclosure")
]


@extend_schema_view(
    list=extend_schema(summary="List links (operators)"),
    retrieve=extend_schema(summary="One link (operators)"),
)
class LinkViewSet(OperatorViewSet):
    """Links between ports, each end with what it belongs to."""

    queryset = Link.objects.select_related("manager", *_LINK_END_RELATIONS).order_by("pk")
    serializer_class = serializers.LinkSerializer
    filterset_class = filters.LinkFilterSet


@extend_schema_view(
    list=extend_schema(summary="List racks (operators)"),
    retrieve=extend_schema(summary="One rack (operators)"),
)
class RackViewSet(OperatorViewSet):
    """Racks: failure domains with a floor position."""

    queryset = Rack.objects.select_related("manager").order_by("name", "pk")
    serializer_class = serializers.RackSerializer
    filterset_class = filters.RackFilterSet


@extend_schema_view(
    list=extend_schema(summary="List power feeds (operators)"),
    retrieve=extend_schema(summary="One power feed (operators)"),
)
class PowerFeedViewSet(OperatorViewSet):
    """Power feeds (PDU circuits): failure domains that take a rack's gear down."""

    queryset = PowerFeed.objects.select_related("rack", "manager").order_by("name", "pk")
    serializer_class = serializers.PowerFeedSerializer
    filterset_class = filters.PowerFeedFilterSet
