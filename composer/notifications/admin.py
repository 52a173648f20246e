"""The admin's view of notifications: read-only.

Routes, webhooks and silences change through the console's pages and the API, whose
services validate, encrypt the webhook's secret and audit every change; the admin shows
them (never a secret, not even encrypted) and the delivery log, to look into a problem.
"""

from __future__ import annotations

from django.contrib import admin

from composer.models import NotificationDelivery, NotificationRoute, Silence, Webhook
from fabric.admin import ReadOnlyAdmin


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyAdmin):
    list_display = ("name", "tenant", "url", "is_enabled", "created_at")
    list_filter = ("is_enabled", "tenant")
    search_fields = ("name", "url")
    list_select_related = ("tenant",)
    exclude = ("secret_ciphertext",)


@admin.register(NotificationRoute)
class NotificationRouteAdmin(ReadOnlyAdmin):
    list_display = ("name", "tenant", "min_severity", "webhook", "on_close", "is_enabled")
    list_filter = ("min_severity", "is_enabled", "tenant")
    search_fields = ("name",)
    list_select_related = ("tenant", "webhook")


@admin.register(Silence)
class SilenceAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "tenant", "starts_at", "ends_at", "reason", "created_by")
    list_filter = ("tenant",)
    search_fields = ("reason", "rule")
    list_select_related = ("tenant", "created_by")


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "uuid",
        "channel",
        "event",
        "status",
        "attempts",
        "status_code",
        "webhook",
        "route",
        "alert",
        "created_at",
        "next_attempt_at",
    )
    list_filter = ("status", "channel", "event")
    search_fields = ("uuid", "error")
    date_hierarchy = "created_at"
    list_select_related = ("webhook", "route", "alert")
