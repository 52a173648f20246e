"""The admin of fabric managers (read-only, with *Synchronise inventory now*) and of the simulated
manager's own tables: its settings, its elements (read-only: faults go through the audited
actions) and its bindings.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from fabric.admin.base import AuditedAdmin, ReadOnlyAdmin
from fabric.drivers.base import DriverError
from fabric.models import FabricManager, SimulatedBinding, SimulatedElement, SimulatedFabric
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


@admin.register(SimulatedFabric)
class SimulatedFabricAdmin(admin.ModelAdmin):
    """The simulated manager's settings: latencies and injected operation failures."""

    list_display = ("name", "latency_ms", "operation_faults", "element_count", "updated_at")
    search_fields = ("name",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[SimulatedFabric]:
        return super().get_queryset(request).annotate(n_elements=Count("elements"))

    @admin.display(description="elements", ordering="n_elements")
    def element_count(self, obj: SimulatedFabric) -> int:
        return getattr(obj, "n_elements", 0)


@admin.register(SimulatedElement)
class SimulatedElementAdmin(admin.ModelAdmin):
    """Read-only: faults go through the simulator app's admin actions or `manage.py
    sim_fault` (`composer.simulator`), which record who injected them."""

    list_display = ("external_id", "kind", "fabric", "fault", "is_present", "updated_at")
    list_filter = ("fabric", "kind", "fault", "is_present")
    search_fields = ("external_id",)
    list_select_related = ("fabric",)
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(SimulatedBinding)
class SimulatedBindingAdmin(admin.ModelAdmin):
    list_display = ("binding_id", "device_id", "host_id", "size_gib", "fabric", "created_at")
    list_filter = ("fabric",)
    search_fields = ("binding_id", "device_id", "host_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
