"""The admin of fabric managers (with *Synchronise inventory now*) and of the simulated
manager's own tables: its settings, its elements (read-only: faults go through the audited
actions) and its bindings.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from fabric.admin.base import AuditedAdmin
from fabric.drivers.base import DriverError
from fabric.models import FabricManager, SimulatedBinding, SimulatedElement, SimulatedFabric
from fabric.services.sync import inventory_sync


@admin.register(FabricManager)
class FabricManagerAdmin(AuditedAdmin):
    list_display = (
        "name",
        "driver",
        "endpoint",
        "is_enabled",
        "has_credentials",
        "poll_interval_s",
        "last_synced_at",
        "has_error",
    )
    list_filter = ("driver", "is_enabled")
    search_fields = ("name", "endpoint")
    readonly_fields = (
        "last_synced_at",
        "last_sync_error",
        "last_health_poll_at",
        "last_health_poll_error",
        "last_health_sample_at",
        "created_at",
        "updated_at",
    )
    actions = ["sync_now"]

    @admin.display(boolean=True, description="credentials")
    def has_credentials(self, obj: FabricManager) -> bool:
        """Whether some are stored; the ciphertext is not a form field (not editable), and
        credentials are entered on the console's manager form, which encrypts them."""
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
