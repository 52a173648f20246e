"""Notification routes, webhooks, silences and deliveries at /api/v1/.

Scoped as the pages are (`composer.notifications.access`): operators read and write every
owner's, a tenant member reads its tenants' and a tenant admin writes them; another
tenant's rows are 404, a read-only member's write 403. Every write goes through the
audited services; bad input is a 400 naming the field.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import django_filters
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from composer.api.errors import ErrorSerializer
from composer.api.serializers.notifications import (
    NotificationDeliverySerializer,
    NotificationRouteSerializer,
    SilenceCreateSerializer,
    SilenceSerializer,
    WebhookSerializer,
)
from composer.models import (
    DeliveryChannel,
    DeliveryEvent,
    DeliveryStatus,
    NotificationDelivery,
    NotificationRoute,
    Silence,
    Webhook,
)
from composer.notifications import (
    KEEP,
    Actor,
    can_manage,
    deliveries_for,
    route_create,
    route_delete,
    route_update,
    routes_for,
    silence_create,
    silence_delete,
    silence_end,
    silences_for,
    webhook_create,
    webhook_delete,
    webhook_secret_rotate,
    webhook_test,
    webhook_update,
    webhooks_for,
)
from fabric.api.views import ReadOnlyViewSet
from fabric.permissions import is_operator
from fabric.services.alerts import alerts_visible_to

logger = logging.getLogger(__name__)

__all__ = ["DeliveryViewSet", "RouteViewSet", "SilenceViewSet", "WebhookViewSet"]

IN_USE = OpenApiResponse(ErrorSerializer, description="Routes still send to it (`webhook_in_use`).")


def _actor(request: Request) -> Actor:
    return Actor(user=request.user, source="api", remote_addr=request.META.get("REMOTE_ADDR"))


class _Managed(ReadOnlyViewSet):
    """Reads scoped to the caller; writes checked against the row's owner."""

    permission_classes = [IsAuthenticated]

    def _manage(self, tenant_id: int | None) -> None:
        if not can_manage(self.request.user, tenant_id):
            raise PermissionDenied(
                "Only operators manage the operators' notifications."
                if tenant_id is None
                else "Only the tenant's admins change its notifications."
            )

    def _owner(self, data: dict[str, Any]) -> Any:
        tenant = data.get("tenant")
        if tenant is None and not is_operator(self.request.user):
            raise PermissionDenied("Name your tenant (`tenant`): only operators own their own.")
        self._manage(tenant.pk if tenant is not None else None)
        return tenant


@extend_schema_view(
    list=extend_schema(summary="List notification routes"),
    retrieve=extend_schema(summary="One notification route"),
    create=extend_schema(
        summary="Add a notification route",
        examples=[
            OpenApiExample(
                "Critical alerts to on-call",
                request_only=True,
                value={
                    "tenant": "acme",
                    "name": "on call",
                    "min_severity": "critical",
                    "emails": ["oncall@acme.example"],
                },
            )
        ],
    ),
    partial_update=extend_schema(summary="Change a notification route"),
    destroy=extend_schema(summary="Delete a notification route"),
)
class RouteViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.DestroyModelMixin, _Managed
):
    """Which alerts go where: operators' routes hear of every alert, a tenant's of the
    alerts that hurt its compositions, in its own words."""

    serializer_class = NotificationRouteSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[NotificationRoute]:
        return routes_for(self.request.user).order_by("tenant__name", "name", "pk")

    def perform_create(self, serializer: Any) -> None:
        data = dict(serializer.validated_data)
        tenant = self._owner(data)
        serializer.instance = route_create(
            tenant=tenant,
            name=data["name"],
            min_severity=data.get("min_severity", "warning"),
            rules=data.get("rules", []),
            source_types=data.get("source_types", []),
            on_close=data.get("on_close", True),
            emails=data.get("emails", []),
            webhook=data.get("webhook"),
            is_enabled=data.get("is_enabled", True),
            actor=_actor(self.request),
        )

    def perform_update(self, serializer: Any) -> None:
        route = serializer.instance
        self._manage(route.tenant_id)
        changes = dict(serializer.validated_data)
        if "tenant" in changes and (changes.pop("tenant") or None) != route.tenant:
            raise ValidationError({"tenant": "A route's owner cannot change."})
        serializer.instance = route_update(route=route, changes=changes, actor=_actor(self.request))

    def perform_destroy(self, instance: NotificationRoute) -> None:
        self._manage(instance.tenant_id)
        route_delete(route=instance, actor=_actor(self.request))


@extend_schema_view(
    list=extend_schema(summary="List webhooks"),
    retrieve=extend_schema(summary="One webhook"),
    create=extend_schema(
        summary="Add a webhook",
        description="Without `secret`, one is made and returned once, in `new_secret`: keep "
        "it, it is never shown again. Each POST to `url` is signed: "
        '`X-Composer-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.',
        responses={201: WebhookSerializer},
    ),
    partial_update=extend_schema(summary="Change a webhook"),
    destroy=extend_schema(
        summary="Delete a webhook and its delivery log", responses={204: None, 409: IN_USE}
    ),
)
class WebhookViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.DestroyModelMixin, _Managed
):
    """Endpoints alerts are posted to, signed with each webhook's secret."""

    serializer_class = WebhookSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Webhook]:
        return webhooks_for(self.request.user).order_by("tenant__name", "name", "pk")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        tenant = self._owner(data)
        hook, made = webhook_create(
            tenant=tenant,
            name=data["name"],
            url=data["url"],
            secret=data.get("secret"),
            is_enabled=data.get("is_enabled", True),
            actor=_actor(request),
        )
        body = WebhookSerializer(
            hook, context={**self.get_serializer_context(), "new_secret": made}
        ).data
        response = Response(body, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response

    def perform_update(self, serializer: Any) -> None:
        hook = serializer.instance
        self._manage(hook.tenant_id)
        data = dict(serializer.validated_data)
        if "tenant" in data and (data.pop("tenant") or None) != hook.tenant:
            raise ValidationError({"tenant": "A webhook's owner cannot change."})
        serializer.instance = webhook_update(
            webhook=hook,
            name=data.get("name", KEEP),
            url=data.get("url", KEEP),
            is_enabled=data.get("is_enabled", KEEP),
            secret=data.get("secret"),
            actor=_actor(self.request),
        )

    def perform_destroy(self, instance: Webhook) -> None:
        self._manage(instance.tenant_id)
        webhook_delete(webhook=instance, actor=_actor(self.request))

    @extend_schema(
        summary="Send a test",
        description="A signed test body, delivered like an alert (retried, logged); 202 with "
        "the delivery. One at a time: 409 `test_pending` while one is on its way.",
        request=None,
        responses={
            202: NotificationDeliverySerializer,
            409: OpenApiResponse(ErrorSerializer, description="A test is on its way."),
        },
    )
    @action(detail=True, methods=["post"], url_path="test", url_name="test")
    def send_test(self, request: Request, pk: str | None = None) -> Response:
        hook = self.get_object()
        self._manage(hook.tenant_id)
        delivery = webhook_test(webhook=hook, actor=_actor(request))
        return Response(
            NotificationDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED
        )

    @extend_schema(
        summary="Make a new signing secret",
        description="Replaces the stored secret at once and returns the new one in "
        "`new_secret`, this once.",
        request=None,
        responses={200: WebhookSerializer},
    )
    @action(detail=True, methods=["post"], url_path="rotate-secret", url_name="rotate_secret")
    def rotate_secret(self, request: Request, pk: str | None = None) -> Response:
        hook = self.get_object()
        self._manage(hook.tenant_id)
        secret = webhook_secret_rotate(webhook=hook, actor=_actor(request))
        hook.refresh_from_db()
        body = WebhookSerializer(
            hook, context={**self.get_serializer_context(), "new_secret": secret}
        ).data
        response = Response(body)
        response["Cache-Control"] = "no-store"
        return response


class SilenceFilterSet(django_filters.FilterSet):
    active = django_filters.BooleanFilter(
        method="filter_active", help_text="In force now (true) or not (false)."
    )

    class Meta:
        model = Silence
        fields: list[str] = []

    def filter_active(
        self, queryset: QuerySet[Silence], name: str, value: bool | None
    ) -> QuerySet[Silence]:

        if value is None:
            return queryset
        now = timezone.now()
        active = queryset.filter(starts_at__lte=now, ends_at__gt=now)
        return active if value else queryset.exclude(pk__in=active.values("pk"))


@extend_schema_view(
    list=extend_schema(summary="List silences"),
    retrieve=extend_schema(summary="One silence"),
    create=extend_schema(
        summary="Silence a rule, an element, or both, for a stated time",
        request=SilenceCreateSerializer,
        responses={201: SilenceSerializer},
        examples=[
            OpenApiExample(
                "The element of an alert, 4 hours",
                request_only=True,
                value={
                    "tenant": "acme",
                    "alert": 12,
                    "match_element": True,
                    "duration_s": 14400,
                    "reason": "the enclosure is being replaced",
                },
            )
        ],
    ),
    destroy=extend_schema(summary="Delete a silence's record"),
)
class SilenceViewSet(mixins.CreateModelMixin, mixins.DestroyModelMixin, _Managed):
    """No notification for a rule or an element for a while: a silence mutes its owner's
    routes only."""

    serializer_class = SilenceSerializer
    filterset_class = SilenceFilterSet

    def get_queryset(self) -> QuerySet[Silence]:
        return silences_for(self.request.user).order_by("-ends_at", "-pk")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = SilenceCreateSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        alert = None
        if data.get("alert") is not None:
            alert = alerts_visible_to(request.user).filter(pk=data["alert"]).first()
            if alert is None:
                raise ValidationError({"alert": "No such alert."})
        tenant = self._owner(data)
        silence = silence_create(
            tenant=tenant,
            reason=data["reason"],
            duration=timedelta(seconds=data["duration_s"]),
            rule=data.get("rule") or "",
            alert=alert,
            match_element=bool(data.get("match_element")),
            source_type=data.get("source_type") or "",
            source_id=data.get("source_id"),
            actor=_actor(request),
        )
        return Response(
            SilenceSerializer(silence, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )

    def perform_destroy(self, instance: Silence) -> None:
        self._manage(instance.tenant_id)
        silence_delete(silence=instance, actor=_actor(self.request))

    @extend_schema(
        summary="End a silence now",
        description="Ends it at once; one already over is answered as it is.",
        request=None,
        responses={200: SilenceSerializer},
    )
    @action(detail=True, methods=["post"], url_path="end", url_name="end")
    def end(self, request: Request, pk: str | None = None) -> Response:
        silence = self.get_object()
        self._manage(silence.tenant_id)
        silence_end(silence=silence, actor=_actor(request))
        silence.refresh_from_db()
        return Response(SilenceSerializer(silence, context=self.get_serializer_context()).data)


class DeliveryFilterSet(django_filters.FilterSet):
    webhook = django_filters.NumberFilter(field_name="webhook_id", min_value=1, max_value=2**63 - 1)
    route = django_filters.NumberFilter(field_name="route_id", min_value=1, max_value=2**63 - 1)
    alert = django_filters.NumberFilter(field_name="alert_id", min_value=1, max_value=2**63 - 1)
    status = django_filters.ChoiceFilter(choices=DeliveryStatus.choices)
    channel = django_filters.ChoiceFilter(choices=DeliveryChannel.choices)
    event = django_filters.ChoiceFilter(choices=DeliveryEvent.choices)

    class Meta:
        model = NotificationDelivery
        fields: list[str] = []


@extend_schema_view(
    list=extend_schema(summary="List notification deliveries (newest first)"),
    retrieve=extend_schema(summary="One notification delivery with its attempts"),
)
class DeliveryViewSet(_Managed):
    """Every e-mail and webhook POST, with each attempt's outcome: read-only."""

    serializer_class = NotificationDeliverySerializer
    filterset_class = DeliveryFilterSet

    def get_queryset(self) -> QuerySet[NotificationDelivery]:
        return deliveries_for(self.request.user).order_by("-created_at", "-pk")
