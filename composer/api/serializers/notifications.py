"""Notification routes, webhooks, silences and deliveries as the API reads and takes them.

A webhook's signing secret is write-only (`secret`); the one made by the console is in
`new_secret` of the answer that made it and of no other. A silence's element id is the
operators' (`source_id` is null for tenant members, who name an element by its `alert`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from composer.models import (
    DeliveryChannel,
    DeliveryEvent,
    DeliveryStatus,
    NotificationDelivery,
    NotificationRoute,
    Silence,
    Tenant,
    Webhook,
)
from composer.notifications.routes import MAX_EMAILS
from composer.notifications.silences import MAX_DURATION, MIN_DURATION
from composer.notifications.webhooks import SECRET_MAX, SECRET_MIN
from fabric.api.fields import StrictBooleanField, StrictCharField
from fabric.choices import AlertSeverity, AlertSource
from fabric.health.rules import RULES
from fabric.permissions import is_operator

__all__ = [
    "RULE_CHOICES",
    "NotificationDeliverySerializer",
    "NotificationRouteSerializer",
    "SilenceCreateSerializer",
    "SilenceSerializer",
    "WebhookSerializer",
]

TENANT_HELP = "The owner's slug; null: the operators' own (operators only). Fixed once made."
RULE_CHOICES = sorted(RULES)


class OwnerField(serializers.SlugRelatedField):
    """The owner tenant by slug, among the caller's tenants (any tenant for operators);
    null for the operators'."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            slug_field="slug",
            queryset=Tenant.objects.all(),
            allow_null=True,
            required=False,
            help_text=TENANT_HELP,
            **kwargs,
        )

    def get_queryset(self) -> Any:
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if is_operator(user):
            return Tenant.objects.all()
        return Tenant.objects.filter(memberships__user=user).distinct()

    def run_validation(self, data: Any = empty) -> Any:
        # DRF reads "" as null for a nullable relation: here null means the operators, and an
        # empty slug is no tenant at all.
        if data == "":
            self.fail("does_not_exist", slug_name=self.slug_field, value=data)
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class NotificationRouteSerializer(serializers.ModelSerializer):
    """A route: which alerts (severity at least `min_severity`; of `rules` and
    `source_types`, empty lists meaning all) go to `emails` and/or `webhook`."""

    tenant = OwnerField()
    name = StrictCharField(max_length=100)
    min_severity = serializers.ChoiceField(choices=AlertSeverity.choices, required=False)
    rules = serializers.ListField(
        child=serializers.ChoiceField(choices=RULE_CHOICES),
        required=False,
        max_length=len(RULES),
        help_text="Rule keys the route takes; empty: every rule.",
    )
    source_types = serializers.ListField(
        child=serializers.ChoiceField(choices=AlertSource.choices),
        required=False,
        max_length=len(AlertSource.choices),
        help_text="Kinds of element the route takes; empty: every kind.",
    )
    emails = serializers.ListField(
        child=StrictCharField(max_length=254),
        required=False,
        max_length=MAX_EMAILS,
        help_text=f"E-mail addresses (at most {MAX_EMAILS}).",
    )
    webhook = serializers.PrimaryKeyRelatedField(
        queryset=Webhook.objects.all(),
        allow_null=True,
        required=False,
        help_text="The id of a webhook of the same owner, or null.",
    )
    on_close = StrictBooleanField(
        required=False, help_text="Also say when an alert it announced closes."
    )
    is_enabled = StrictBooleanField(required=False)

    class Meta:
        model = NotificationRoute
        fields = [
            "id",
            "tenant",
            "name",
            "min_severity",
            "rules",
            "source_types",
            "on_close",
            "emails",
            "webhook",
            "is_enabled",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        validators: list[Any] = []

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        request = self.context.get("request")
        user = getattr(request, "user", None)
        webhook = fields["webhook"]
        assert isinstance(webhook, serializers.PrimaryKeyRelatedField)
        webhook.queryset = (
            Webhook.objects.for_user(user) if user is not None else Webhook.objects.none()
        )
        return fields


class WebhookSerializer(serializers.ModelSerializer):
    """A webhook. `secret` is write-only; `new_secret` holds the secret the console made,
    in the answer that made it only (otherwise null)."""

    tenant = OwnerField()
    name = StrictCharField(max_length=100)
    url = StrictCharField(max_length=500, help_text="http:// or https://; alerts are POSTed here.")
    is_enabled = StrictBooleanField(required=False)
    secret = StrictCharField(
        write_only=True,
        required=False,
        min_length=SECRET_MIN,
        max_length=SECRET_MAX,
        trim_whitespace=False,
        help_text="The HMAC signing secret. Omit on create to have one made (see `new_secret`); "
        "give one on update to replace the stored one. Never returned.",
    )
    new_secret = serializers.SerializerMethodField()

    class Meta:
        model = Webhook
        fields = [
            "id",
            "tenant",
            "name",
            "url",
            "is_enabled",
            "secret",
            "new_secret",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "new_secret", "created_at", "updated_at"]
        validators: list[Any] = []

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_new_secret(self, webhook: Webhook) -> str | None:
        made = self.context.get("new_secret")
        return str(made) if made else None


class SilenceSerializer(serializers.ModelSerializer):
    """A silence in force from `starts_at` to `ends_at` (ended early: `ended_by` says by
    whom). `source_id` is null for tenant members."""

    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    source_id = serializers.SerializerMethodField()
    description = serializers.CharField(source="__str__", read_only=True)
    is_active = serializers.SerializerMethodField()
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    ended_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Silence
        fields = [
            "id",
            "tenant",
            "description",
            "rule",
            "source_type",
            "source_id",
            "alert",
            "starts_at",
            "ends_at",
            "is_active",
            "reason",
            "created_by",
            "ended_by",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_source_id(self, silence: Silence) -> int | None:
        request = self.context.get("request")
        return silence.source_id if is_operator(getattr(request, "user", None)) else None

    @extend_schema_field(serializers.BooleanField())
    def get_is_active(self, silence: Silence) -> bool:
        return silence.is_active()


class SilenceCreateSerializer(serializers.Serializer):
    """What to silence and for how long: a `rule`, an element (the one `alert` is about,
    with `match_element`; or, operators only, `source_type` and `source_id`), or both."""

    tenant = OwnerField()
    rule = serializers.ChoiceField(choices=RULE_CHOICES, required=False, allow_blank=True)
    alert = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**63 - 1,
        help_text="An alert you can see: its rule and element, unless `rule` or "
        "`match_element` say otherwise.",
    )
    match_element = StrictBooleanField(
        required=False, help_text="Silence the element `alert` is about (every rule unless `rule`)."
    )
    source_type = serializers.ChoiceField(
        choices=AlertSource.choices, required=False, allow_blank=True
    )
    source_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=2**63 - 1
    )
    duration_s = serializers.IntegerField(
        min_value=int(MIN_DURATION.total_seconds()),
        max_value=int(MAX_DURATION.total_seconds()),
        help_text="For how long, in seconds (5 minutes to 90 days).",
    )
    reason = StrictCharField(max_length=300)


class NotificationDeliverySerializer(serializers.ModelSerializer):
    """One message (an e-mail or a webhook POST) and its attempts."""

    delivery_id = serializers.UUIDField(
        source="uuid",
        read_only=True,
        help_text="Its X-Composer-Delivery header, the same on every retry.",
    )
    channel = serializers.ChoiceField(choices=DeliveryChannel.choices, read_only=True)
    event = serializers.ChoiceField(choices=DeliveryEvent.choices, read_only=True)
    status = serializers.ChoiceField(choices=DeliveryStatus.choices, read_only=True)
    history = serializers.ListField(child=serializers.DictField(), read_only=True)

    class Meta:
        model = NotificationDelivery
        fields = [
            "id",
            "delivery_id",
            "channel",
            "webhook",
            "route",
            "recipients",
            "alert",
            "event",
            "status",
            "attempts",
            "status_code",
            "error",
            "next_attempt_at",
            "last_attempt_at",
            "delivered_at",
            "created_at",
            "body_sha256",
            "history",
        ]
        read_only_fields = fields
