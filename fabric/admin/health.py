"""The admin of what the health poller writes: alerts (operators acknowledge them, audited),
the samples each poll read and the conditions the rules remember between polls.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from fabric.admin.base import DerivedAdmin, ReadOnlyAdmin, _remote_addr
from fabric.models import Alert, HealthCondition, HealthSample
from fabric.services.alerts import alert_acknowledge


@admin.register(Alert)
class AlertAdmin(ReadOnlyAdmin):
    """Alerts are written by the health poller; operators acknowledge them (audited)."""

    list_display = (
        "opened_at",
        "severity",
        "state",
        "source_type",
        "source_name",
        "rule",
        "message",
        "occurrences",
        "is_flapping",
        "acknowledged_by",
        "closed_at",
    )
    list_filter = ("state", "severity", "source_type", "rule", "is_flapping", "manager")
    search_fields = ("source_name", "message", "rule")
    date_hierarchy = "opened_at"
    list_select_related = ("manager", "acknowledged_by")
    actions = ["acknowledge"]

    @admin.action(description="Acknowledge")
    def acknowledge(self, request: HttpRequest, queryset: QuerySet[Alert]) -> None:
        done = sum(
            alert_acknowledge(
                alert=alert, user=request.user, remote_addr=_remote_addr(request), source="admin"
            )
            for alert in queryset
        )
        self.message_user(request, f"{done} alert(s) acknowledged.", messages.SUCCESS)


@admin.register(HealthSample)
class HealthSampleAdmin(ReadOnlyAdmin):
    """What each health poll read; pruned after COMPOSER_HEALTH_RETENTION_HOURS."""

    list_display = (
        "taken_at",
        "target_type",
        "target_id",
        "health",
        "temperature_c",
        "correctable_errors",
        "link_width",
        "power_state",
        "utilisation_pct",
    )
    list_filter = ("target_type", "health", "manager")
    date_hierarchy = "taken_at"


@admin.register(HealthCondition)
class HealthConditionAdmin(DerivedAdmin):
    """What the health rules remember between polls (streaks, flaps, the open alert)."""

    list_display = (
        "target_type",
        "target_id",
        "rule",
        "bad_streak",
        "clean_streak",
        "severity",
        "is_flapping",
        "alert",
        "updated_at",
    )
    list_filter = ("rule", "target_type", "is_flapping", "manager")
