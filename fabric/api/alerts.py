"""Alerts: list, detail and acknowledge.

Alerts are operators' by default. Tenant members see the alerts that hurt their
compositions only once the console enables tenant alerts: then they get the `TenantAlert`
shape, blast radius cut down to their own compositions. Until then they get 404, like every
fabric internal.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from fabric.api.alert_filters import AlertFilterSet
from fabric.api.serializers import NamedRefSerializer, for_caller
from fabric.choices import AlertSource
from fabric.health.rules import RULES
from fabric.models import Alert
from fabric.permissions import is_operator
from fabric.services.alerts import (
    alert_acknowledge,
    alert_scope,
    alerts_visible_to,
)

RULE_HELP = (
    "The rule that raised it: "
    + ", ".join(f"`{key}` ({label.lower()})" for key, label in RULES.items())
    + "."
)

# The API view of each alert source, for `source_url`.
SOURCE_VIEWS = {
    AlertSource.DEVICE: "api:device_detail",
    AlertSource.LINK: "api:link_detail",
    AlertSource.SWITCH: "api:switch_detail",
    AlertSource.HOST: "api:host_detail",
    AlertSource.ENCLOSURE: "api:enclosure_detail",
    AlertSource.POWER_FEED: "api:power_feed_detail",
    AlertSource.RACK: "api:rack_detail",
    AlertSource.FABRIC_MANAGER: "api:fabric_manager_detail",
}


class CompositionRefSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True)
    name = serializers.CharField()
    tenant_id = serializers.IntegerField(allow_null=True)
    state = serializers.CharField()


class BlastRadiusSerializer(serializers.Serializer):
    """What the source's failure takes, as it stood when the alert opened (console ids)."""

    domain = serializers.CharField(help_text='The failure domain, e.g. "switch:12".')
    effect = serializers.ChoiceField(
        choices=["lost", "at_risk", "frozen"],
        help_text="lost: critical, these lose something; at_risk: what a failure would "
        "take; frozen: bindings frozen (manager unreachable).",
    )
    devices = serializers.ListField(child=serializers.IntegerField())
    device_count = serializers.IntegerField()
    hosts = serializers.ListField(child=serializers.IntegerField())
    host_count = serializers.IntegerField()
    switches = serializers.ListField(child=serializers.IntegerField())
    enclosures = serializers.ListField(child=serializers.IntegerField())
    links = serializers.ListField(child=serializers.IntegerField())
    compositions = CompositionRefSerializer(many=True, help_text="Compositions hit.")
    composition_count = serializers.IntegerField()
    tenants = serializers.ListField(child=serializers.IntegerField())
    tenant_count = serializers.IntegerField()
    # Alerts opened before the lost/degraded definition carry none of these.
    headline = serializers.CharField(
        required=False, help_text='The figures in words: "40 devices and 8 hosts lost".'
    )
    devices_degraded = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Devices still reached, over fewer paths.",
    )
    devices_degraded_count = serializers.IntegerField(required=False)
    hosts_degraded = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Hosts still working, with fewer paths.",
    )
    hosts_degraded_count = serializers.IntegerField(required=False)
    compositions_degraded = CompositionRefSerializer(
        many=True, required=False, help_text="Compositions that keep everything, over fewer paths."
    )
    compositions_degraded_count = serializers.IntegerField(required=False)


class TenantBlastRadiusSerializer(serializers.Serializer):
    """A blast radius as a tenant member reads it: the effect and the member's own
    compositions, hit or degraded; none of the fabric's figures."""

    effect = serializers.ChoiceField(choices=["lost", "at_risk", "frozen"], required=False)
    compositions = CompositionRefSerializer(many=True, required=False)
    composition_count = serializers.IntegerField(required=False)
    compositions_degraded = CompositionRefSerializer(many=True, required=False)
    compositions_degraded_count = serializers.IntegerField(required=False)


class UserRefSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    username = serializers.CharField(read_only=True)


class AlertSerializer(serializers.ModelSerializer):
    """An alert as operators see it."""

    url = serializers.HyperlinkedIdentityField(view_name="api:alert_detail")
    manager = NamedRefSerializer(read_only=True)
    source_url = serializers.SerializerMethodField(help_text="The source in the API.")
    acknowledged_by = UserRefSerializer(read_only=True, allow_null=True)
    blast_radius = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = [
            "id",
            "url",
            "manager",
            "source_type",
            "source_id",
            "source_name",
            "source_url",
            "rule",
            "severity",
            "state",
            "message",
            "opened_at",
            "last_seen_at",
            "closed_at",
            "occurrences",
            "is_flapping",
            "acknowledged_by",
            "acknowledged_at",
            "blast_radius",
        ]
        read_only_fields = fields
        extra_kwargs = {"rule": {"help_text": RULE_HELP}}

    def get_source_url(self, alert: Alert) -> str | None:
        view = SOURCE_VIEWS.get(AlertSource(alert.source_type))
        if view is None:
            return None
        return reverse(view, args=[alert.source_id], request=self.context.get("request"))

    @extend_schema_field(BlastRadiusSerializer)
    def get_blast_radius(self, alert: Alert) -> dict[str, Any]:
        return dict(alert.blast_radius or {})


class TenantAlertSerializer(serializers.ModelSerializer):
    """An alert as a tenant member sees it: no fabric ids, the blast radius cut down to
    what the registered scope lets them know (their own compositions)."""

    url = serializers.HyperlinkedIdentityField(view_name="api:alert_detail")
    is_acknowledged = serializers.BooleanField(read_only=True)
    message = serializers.CharField(
        source="tenant_message",
        read_only=True,
        help_text="What kind of element and what is wrong; no element names.",
    )
    blast_radius = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = [
            "id",
            "url",
            "source_type",
            "rule",
            "severity",
            "state",
            "message",
            "opened_at",
            "last_seen_at",
            "closed_at",
            "occurrences",
            "is_flapping",
            "is_acknowledged",
            "blast_radius",
        ]
        read_only_fields = fields
        extra_kwargs = {"rule": {"help_text": RULE_HELP}}

    @extend_schema_field(TenantBlastRadiusSerializer)
    def get_blast_radius(self, alert: Alert) -> dict[str, Any]:
        scope = alert_scope()
        request = self.context.get("request")
        if scope is None or request is None:
            return {}
        return dict(scope.blast_radius(request.user, alert.blast_radius or {}))


# --- alerts -------------------------------------------------------------------------------------


class AlertPermission(BasePermission):
    """Operators: everything. Others: reading, and only when the composer registered a scope
    (404 otherwise, like every fabric internal); acknowledging is operators' (403)."""

    message = "Only operators acknowledge alerts."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if is_operator(request.user):
            return True
        if alert_scope() is None:
            raise NotFound()
        return request.method in SAFE_METHODS


ALERT_EXAMPLE = {
    "id": 7,
    "url": "https://composer.example/api/v1/alerts/7/",
    "manager": {"id": 1, "name": "demo"},
    "source_type": "switch",
    "source_id": 3,
    "source_name": "cxl-leaf-a",
    "source_url": "https://composer.example/api/v1/switches/3/",
    "rule": "element_failed",
    "severity": "critical",
    "state": "open",
    "message": "Switch cxl-leaf-a failed: failed (injected fault)",
    "opened_at": "2026-11-29T10:15:02Z",
    "last_seen_at": "2026-11-29T10:17:32Z",
    "closed_at": None,
    "occurrences": 6,
    "is_flapping": False,
    "acknowledged_by": {"id": 1, "username": "admin"},
    "acknowledged_at": "2026-11-29T10:16:10Z",
    "blast_radius": {
        "domain": "switch:3",
        "effect": "lost",
        "devices": [11, 12, 13],
        "device_count": 3,
        "hosts": [2],
        "host_count": 1,
        "switches": [3],
        "enclosures": [4],
        "links": [20, 21],
        "compositions": [{"id": 5, "name": "train-a", "tenant_id": 1, "state": "ready"}],
        "composition_count": 1,
        "tenants": [1],
        "tenant_count": 1,
    },
}


@extend_schema_view(
    list=extend_schema(
        summary="List alerts",
        description=(
            "Newest first unless `ordering` says otherwise. Operators see every alert; tenant "
            "members only those that hurt their compositions, in the `TenantAlert` shape, "
            "once the console enables it (until then they get 404)."
        ),
        responses=for_caller("AlertForCaller", AlertSerializer, TenantAlertSerializer, many=True),
        examples=[
            OpenApiExample(
                "An open switch failure",
                response_only=True,
                value=ALERT_EXAMPLE,
            )
        ],
    ),
    retrieve=extend_schema(
        summary="One alert",
        responses=for_caller("AlertForCaller", AlertSerializer, TenantAlertSerializer),
        examples=[OpenApiExample("A switch failure", response_only=True, value=ALERT_EXAMPLE)],
    ),
)
class AlertViewSet(viewsets.ReadOnlyModelViewSet):
    """Alerts raised by the health poller; acknowledge with POST .../alerts/{id}/acknowledge/.
    Operators see every alert; tenant members those that hurt their compositions."""

    # get_queryset starts from fabric.services.alerts.alerts_visible_to(user): the hook
    # through which the composer scopes alerts to tenants.

    permission_classes = [AlertPermission]
    filterset_class = AlertFilterSet
    lookup_value_regex = r"\d+"

    def get_queryset(self) -> QuerySet[Alert]:
        return (
            alerts_visible_to(self.request.user)
            .select_related("manager", "acknowledged_by")
            .order_by("-opened_at", "-id")
        )

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if is_operator(self.request.user) or getattr(self, "swagger_fake_view", False):
            return AlertSerializer
        return TenantAlertSerializer

    @extend_schema(
        summary="Acknowledge an alert (operators)",
        operation_id="alert_acknowledge",
        request=None,
        responses={200: AlertSerializer},
        description=(
            "Records who has seen it; it stays open until the condition clears. "
            "Idempotent: the first acknowledgement (who and when) is kept."
        ),
    )
    @action(detail=True, methods=["post"], url_path="acknowledge", url_name="acknowledge")
    def acknowledge(self, request: Request, pk: str | None = None) -> Response:
        alert = self.get_object()
        alert_acknowledge(
            alert=alert,
            user=request.user,
            remote_addr=request.META.get("REMOTE_ADDR") or None,
            source="api",
        )
        alert = self.get_queryset().get(pk=alert.pk)
        return Response(AlertSerializer(alert, context=self.get_serializer_context()).data)
