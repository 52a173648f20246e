"""Notifications: where alerts are sent (routes, webhooks), what is not sent (silences), and
the log of every message (deliveries).

Each of the first three belongs to one owner: a tenant, or the operators when `tenant` is
null. A tenant's routes hear only of the alerts that hurt that tenant (`AlertAudience`) and
only in the tenant's words; operators' routes hear of every alert in full. A silence mutes
its owner's routes only. See docs/notifications.md.

A `NotificationDelivery` row is the outbox of one message (an e-mail or a webhook POST): it
is written in the transaction that opened or closed the alert, sent by a worker after
commit, retried with back-off, and picked up again by beat's dispatch pass when a worker or
the broker lost it (`composer.notifications.delivery`).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from composer.querysets import TenantScopedQuerySet
from fabric.choices import AlertSeverity, AlertSource
from fabric.health.rules import RULES
from fabric.models.base import TimeStampedModel
from fabric.validators import check_text_fields


def _one_name_per_owner(prefix: str, noun: str) -> list[models.BaseConstraint]:
    """A name is unique among one tenant's (or the operators') rows of a kind."""
    message = f"Another {noun} of the same owner has this name."
    return [
        models.UniqueConstraint(
            fields=["tenant", "name"],
            condition=Q(tenant__isnull=False),
            name=f"{prefix}_name_per_tenant",
            violation_error_message=message,
        ),
        models.UniqueConstraint(
            fields=["name"],
            condition=Q(tenant__isnull=True),
            name=f"{prefix}_name_operators",
            violation_error_message=message,
        ),
    ]


class _NamedOwned(TimeStampedModel):
    """A tenant's, or the operators' (no tenant), with a name checked like any other."""

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return str(getattr(self, "name", ""))

    def clean(self) -> None:
        super().clean()
        check_text_fields(names={"name": getattr(self, "name", "")})

    @property
    def owner_label(self) -> str:
        tenant = getattr(self, "tenant", None)
        return tenant.name if tenant is not None else "Operators"


class Webhook(_NamedOwned):
    """An HTTPS (or HTTP) endpoint that receives alerts as signed JSON POSTs.

    The signing secret is stored only encrypted (`secret_ciphertext`, Fernet, with the keys
    of COMPOSER_CREDENTIALS_KEYS); it is shown once, when it is made, and never again: not
    on pages, in API answers, in logs or in the audit trail.
    """

    tenant = models.ForeignKey(
        "composer.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="webhooks",
        help_text="The owner; empty: the operators.",
    )
    name = models.CharField(max_length=100)
    url = models.CharField(max_length=500, help_text="http:// or https://; alerts are POSTed here.")
    secret_ciphertext = models.TextField(editable=False)
    is_enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["tenant__name", "name", "id"]
        constraints = _one_name_per_owner("composer_webhook", "webhook")


class NotificationRoute(_NamedOwned):
    """Which alerts go where: a severity floor (and optionally rules and kinds of source),
    to e-mail addresses, a webhook, or both."""

    tenant = models.ForeignKey(
        "composer.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notification_routes",
        help_text="The owner; empty: the operators.",
    )
    name = models.CharField(max_length=100)
    min_severity = models.CharField(
        max_length=8, choices=AlertSeverity.choices, default=AlertSeverity.WARNING
    )
    # Empty lists match everything: rule keys (fabric.health.rules) and AlertSource values.
    rules = models.JSONField(default=list, blank=True)
    source_types = models.JSONField(default=list, blank=True)
    on_close = models.BooleanField(
        default=True, help_text="Also say when an alert it announced closes."
    )
    emails = models.JSONField(default=list, blank=True)
    # RESTRICT: a webhook routes send to is not deleted by itself (the service says which
    # routes), but goes with its tenant, routes and all.
    webhook = models.ForeignKey(
        Webhook, null=True, blank=True, on_delete=models.RESTRICT, related_name="routes"
    )
    is_enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["tenant__name", "name", "id"]
        constraints = _one_name_per_owner("composer_route", "route")


class SilenceQuerySet(TenantScopedQuerySet):
    def active(self, at: datetime | None = None) -> SilenceQuerySet:
        """Silences in force at `at` (default now): started and not yet ended."""
        moment = at or timezone.now()
        return self.filter(starts_at__lte=moment, ends_at__gt=moment)


class Silence(TimeStampedModel):
    """No notification for an element, a rule, or a rule on one element, for a stated time.

    Mutes its owner's routes only (a tenant's silence never hides an alert from the
    operators, nor an operators' silence from a tenant). Ending one early sets `ends_at`
    to the moment it was ended (`ended_by`).
    """

    tenant = models.ForeignKey(
        "composer.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="silences",
        help_text="The owner; empty: the operators.",
    )
    rule = models.CharField(max_length=40, blank=True, help_text="Empty: every rule.")
    source_type = models.CharField(max_length=16, choices=AlertSource.choices, blank=True)
    source_id = models.BigIntegerField(null=True, blank=True)
    # The alert it was made from, if any: how a tenant names the element it cannot see.
    alert = models.ForeignKey(
        "fabric.Alert", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    reason = models.CharField(max_length=300)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = SilenceQuerySet.as_manager()

    class Meta:
        ordering = ["-ends_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="composer_silence_ends_after"
            ),
            models.CheckConstraint(
                condition=~Q(rule="") | Q(source_id__isnull=False),
                name="composer_silence_matches_something",
            ),
            models.CheckConstraint(
                condition=Q(source_id__isnull=True, source_type="")
                | (Q(source_id__isnull=False) & ~Q(source_type="")),
                name="composer_silence_element_whole",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "ends_at"], name="composer_silence_owner_end")]

    def __str__(self) -> str:
        """What it silences, in words its owner may read: a tenant's names the element by
        the alert it was made from, never by the console's id of it."""
        what = RULES.get(self.rule, self.rule) if self.rule else "Every rule"
        if self.source_id is None:
            return f"Silence: {what}"
        kind = self.source_type.replace("_", " ")
        if self.tenant_id is None:
            where = f"{kind} {self.source_id}"
        elif self.alert_id is not None:
            where = f"the {kind} of alert #{self.alert_id}"
        else:
            where = f"a {kind}"
        return f"Silence: {what} on {where}"

    def clean(self) -> None:
        super().clean()
        check_text_fields(free_text={"reason": self.reason})

    def is_active(self, at: datetime | None = None) -> bool:
        moment = at or timezone.now()
        return self.starts_at <= moment < self.ends_at

    @property
    def owner_label(self) -> str:
        return self.tenant.name if self.tenant_id and self.tenant else "Operators"


class DeliveryChannel(models.TextChoices):
    EMAIL = "email", "E-mail"
    WEBHOOK = "webhook", "Webhook"


class DeliveryEvent(models.TextChoices):
    """What a message says happened to its alert."""

    OPENED = "opened", "Opened"  # the alert opened (and matched the route)
    ESCALATED = "escalated", "Escalated"  # its severity rose to the route's floor later
    CLOSED = "closed", "Closed"  # an alert the route announced closed
    TEST = "test", "Test"  # "Send a test": no alert


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # waiting for its (next) attempt
    DELIVERED = "delivered", "Delivered"  # the receiver answered 2xx (or the mail server took it)
    FAILED = "failed", "Failed"  # every attempt failed, or it cannot succeed
    CANCELLED = "cancelled", "Cancelled"  # its webhook was disabled before it went out


class NotificationDelivery(models.Model):
    """One message to one destination, and every attempt to send it.

    `body` is what is sent, fixed when the row is written, so every retry sends the same
    bytes (`body_sha256`) under the same id (`uuid`, the `X-Composer-Delivery` header): a
    receiver de-duplicates by it. `attempts` counts attempts begun (a worker that died during
    one counted it), `history` keeps the last few with their outcome.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    tenant = models.ForeignKey(
        "composer.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notification_deliveries",
    )
    route = models.ForeignKey(
        NotificationRoute,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deliveries",
    )
    webhook = models.ForeignKey(
        Webhook, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    channel = models.CharField(max_length=8, choices=DeliveryChannel.choices)
    recipients = models.JSONField(default=list, blank=True)
    alert = models.ForeignKey(
        "fabric.Alert", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    event = models.CharField(max_length=10, choices=DeliveryEvent.choices)
    subject = models.CharField(max_length=200, blank=True)
    body = models.TextField()
    body_sha256 = models.CharField(max_length=64)
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # The attempt in progress holds the row until then; past it, its worker is presumed dead.
    claimed_until = models.DateTimeField(null=True, blank=True)
    # When the current attempt's task went to the broker (null: not sent, or consumed).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    history = models.JSONField(default=list, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One message per route, channel, alert and event: a poll repeated, or two at
            # once, never sends it twice.
            models.UniqueConstraint(
                fields=["route", "channel", "alert", "event"],
                condition=Q(route__isnull=False, alert__isnull=False),
                name="composer_delivery_once",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="composer_delivery_due"),
            models.Index(fields=["webhook", "-created_at"], name="composer_delivery_webhook"),
            models.Index(fields=["route", "-created_at"], name="composer_delivery_route"),
            models.Index(fields=["alert", "route"], name="composer_delivery_alert"),
        ]

    def __str__(self) -> str:
        return f"{self.channel} delivery {self.pk} ({self.event}, {self.status})"

    @property
    def event_type(self) -> str:
        """The `type` of its body and the `X-Composer-Event` header: "alert.opened", ...,
        or "test"."""
        return "test" if self.event == DeliveryEvent.TEST else f"alert.{self.event}"
