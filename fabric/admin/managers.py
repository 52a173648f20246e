"""The admin of fabric managers: read-only, with *Synchronise inventory now* (the simulated
manager's own tables have theirs in `fabric.simulator.admin`)."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from fabric.admin.base import AuditedAdmin, ReadOnlyAdmin
from fabric.drivers.base import DriverError
from fabric.models import FabricManager
from fabric.secrets import mask_endpoint, mask_secrets
from fabric.services.sync import inventory_sync


@admin.register(FabricManager)
class FabricManagerAdmin(ReadOnlyAdmin, AuditedAdmin):
    """Read-only, with *Synchronise inventory now*: managers are added, changed and deleted
    on the console's own pages (`fabric.services.managers`), which check every field,
    encrypt the credentials and refuse to delete what compositions hold. Here the endpoint
    and settings are shown masked, the credentials only as whether some are stored."""

    list_display = (
        "name",
        "driver",
        "masked_endpoint",
        "is_enabled",
        "has_credentials",
        "last_synced_at",
        "has_error",
    )
    list_filter = ("driver", "is_enabled")
    search_fields = ("name",)
    fields = (
        "name",
        "driver",
        "masked_endpoint",
        "masked_settings",
        "is_enabled",
        "has_credentials",
        "health_poll_interval_s",
        "last_synced_at",
        "last_sync_error",
        "last_health_poll_at",
        "last_health_poll_error",
        "last_health_sample_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = ["sync_now"]

    @admin.display(description="endpoint")
    def masked_endpoint(self, obj: FabricManager) -> str:
        return mask_endpoint(obj.endpoint) if obj.endpoint else ""

    @admin.display(description="settings")
    def masked_settings(self, obj: FabricManager) -> str:
        return json.dumps(mask_secrets(obj.settings or {}), sort_keys=True)

    @admin.display(boolean=True, description="credentials")
    def has_credentials(self, obj: FabricManager) -> bool:
        """Whether some are stored (what they are is shown nowhere)."""
        return obj.has_credentials

    @admin.display(boolean=True, description="error")
    def has_error(self, obj: FabricManager) -> bool:
        return bool(obj.last_sync_error)

    @admin.action(description="Synchronise inventory now")
    def sync_now(self, request: HttpRequest, queryset: QuerySet[FabricManager]) -> None:
        for manager in queryset:
            try:
                result = inventory_sync(manager=manager, actor=request.user, source="admin")
            except DriverError as exc:
                self.message_user(request, f"{manager}: {exc.message}", messages.ERROR)
                continue
            self.message_user(request, f"{manager}: {result.summary()}", messages.SUCCESS)
