"""Topology, failure domains, what-if and paths: operator-only endpoints over the graph.

Every endpoint loads the fabric graph once (a fixed number of queries) and answers with
pure functions over it; nothing here changes state, and a what-if injects nothing.
Parameters are validated by small serializers, so a bad one is a 400 naming it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fabric import filters
from fabric.api.permissions import IsOperatorOr404
from fabric.choices import ComponentState, DeviceState
from fabric.forms import MAX_WHAT_IF_DOMAINS, BadIds, parse_domain_ids
from fabric.models import Device, FabricManager, FailureDomain, Host, Rack
from fabric.selectors import failure_domain_impact, host_paths, topology_payload


class TopologyQuery(serializers.Serializer):
    """`?manager=<id>&rack=<id>&collapse=auto|true|false`."""

    manager = serializers.PrimaryKeyRelatedField(
        queryset=FabricManager.objects.all(), required=False, help_text="Only this fabric."
    )
    rack = serializers.PrimaryKeyRelatedField(
        queryset=Rack.objects.all(), required=False, help_text="Only this rack."
    )
    collapse = serializers.ChoiceField(
        choices=["auto", "true", "false"],
        default="auto",
        help_text="Draw enclosures as single nodes with counts; `auto` above 2,000 nodes.",
    )


class TopologyView(APIView):
    """The whole fabric as a graph: the JSON the topology page draws."""

    permission_classes = [IsOperatorOr404]

    @extend_schema(
        summary="The fabric as a graph (operators)",
        parameters=[TopologyQuery],
        responses={200: OpenApiTypes.OBJECT},
        description=(
            "Cytoscape.js elements: `nodes` (racks, hosts, switches, enclosures, devices; "
            "`parent` makes racks and enclosures compound), `edges` (links with latency_ns, "
            "latency_estimated (true where the fabric manager gives no latency and a per-hop "
            "estimate stands in), bandwidth_gbps, state), `collapsed`, `counts` and `legend`."
        ),
    )
    def get(self, request: Request) -> Response:
        query = TopologyQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        collapse = {"auto": None, "true": True, "false": False}[data["collapse"]]
        payload = topology_payload(
            managers=[data["manager"].pk] if "manager" in data else None,
            racks=[data["rack"].pk] if "rack" in data else None,
            collapse=collapse,
        )
        return Response(payload)


class FailureDomainSerializer(serializers.ModelSerializer):
    """A failure domain and its blast radius: `device_count` / `host_count` are what its
    failure loses, `devices_degraded_count` / `hosts_degraded_count` what it degrades, and
    `headline` says both in the words the pages use (the figures of its impact endpoint)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:failure_domain_detail")
    impact_url = serializers.HyperlinkedIdentityField(view_name="api:failure_domain_impact")
    headline = serializers.CharField(read_only=True)
    counts_outdated = serializers.BooleanField(
        read_only=True,
        help_text="True while its figures follow an earlier definition of the blast radius "
        "(stored before an upgrade that changed it); they are recounted within a minute.",
    )

    class Meta:
        model = FailureDomain
        fields = [
            "id",
            "url",
            "impact_url",
            "key",
            "kind",
            "name",
            "manager",
            "device_count",
            "host_count",
            "devices_degraded_count",
            "hosts_degraded_count",
            "headline",
            "counts_outdated",
            "updated_at",
        ]
        read_only_fields = fields


class WhatIfQuery(serializers.Serializer):
    """`?ids=1,2,3`: the failure domains that fail together."""

    ids = serializers.CharField(
        help_text=f"Comma-separated failure-domain ids (at most {MAX_WHAT_IF_DOMAINS})."
    )

    def validate_ids(self, value: str) -> list[FailureDomain]:
        try:
            wanted = parse_domain_ids([value])
        except BadIds as exc:
            raise serializers.ValidationError(str(exc)) from None
        domains = {d.pk: d for d in FailureDomain.objects.filter(pk__in=wanted)}
        missing = [str(pk) for pk in wanted if pk not in domains]
        if missing:
            raise serializers.ValidationError(f"No failure domain with id {', '.join(missing)}.")
        return [domains[pk] for pk in wanted]


@extend_schema_view(
    list=extend_schema(summary="List failure domains (operators)"),
    retrieve=extend_schema(summary="One failure domain (operators)"),
)
class FailureDomainViewSet(viewsets.ReadOnlyModelViewSet):
    """Racks, power feeds, enclosures, memory boxes, switches, links and fabric managers whose
    loss takes several things with it; derived from the inventory after every sync."""

    permission_classes = [IsOperatorOr404]
    serializer_class = FailureDomainSerializer
    filterset_class = filters.FailureDomainFilterSet
    queryset = FailureDomain.objects.order_by("kind", "name", "pk")
    lookup_value_regex = r"\d+"

    @extend_schema(
        summary="Blast radius of one failure domain",
        operation_id="failure_domain_impact",
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"], url_path="impact", url_name="impact")
    def impact(self, request: Request, pk: str | None = None) -> Response:
        """What fails, what is lost and what is degraded if this domain fails (nothing is
        injected): the same figures as its row in the list and its alert."""
        return Response(failure_domain_impact(domains=[self.get_object()]))

    @extend_schema(
        summary="What if several domains fail together",
        operation_id="failure_domains_what_if",
        parameters=[WhatIfQuery],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(
        detail=False, methods=["get"], url_path="impact", url_name="what_if", filterset_class=None
    )
    def what_if(self, request: Request) -> Response:
        """The blast radius of the listed domains failing at once (nothing is injected)."""
        query = WhatIfQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(failure_domain_impact(domains=query.validated_data["ids"]))


class PathsQuery(serializers.Serializer):
    """`?host=<id>&device=<id>`, or `?host=<id>&max_latency_ns=<n>` for everything it reaches."""

    # Absent hosts and devices are no longer in the fabric: there is no path to speak of.
    host = serializers.PrimaryKeyRelatedField(
        queryset=Host.objects.exclude(state=ComponentState.ABSENT)
    )
    device = serializers.PrimaryKeyRelatedField(
        queryset=Device.objects.exclude(state=DeviceState.ABSENT),
        required=False,
        help_text="Omit to list every device the host reaches.",
    )
    max_latency_ns = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        device = attrs.get("device")
        if device is not None and device.manager_id != attrs["host"].manager_id:
            raise serializers.ValidationError(
                {"device": "The device and the host are in different fabrics: no path exists."}
            )
        return attrs


class PathsView(APIView):
    """Paths through the fabric from a host to a device, or every device a host reaches."""

    permission_classes = [IsOperatorOr404]

    @extend_schema(
        summary="Paths from a host (operators)",
        parameters=[PathsQuery],
        responses={200: OpenApiTypes.OBJECT},
        description=(
            "With `device`: every usable path, best (lowest latency) first, with hops, "
            "latency_ns and bottleneck_gbps, and the links and switches whose loss alone "
            "would cut the device off. Without it: every device the host reaches, nearest "
            "first, optionally within `max_latency_ns`."
        ),
    )
    def get(self, request: Request) -> Response:
        query = PathsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        return Response(
            host_paths(
                host=data["host"],
                device=data.get("device"),
                max_latency_ns=data.get("max_latency_ns"),
            )
        )
