"""The admin of the simulated fabric manager's own tables: its settings, its elements
(read-only: faults go through the simulator's audited actions) and its bindings. Django's
admin autodiscovery imports this module only, so it also brings in the fault actions the
simulator adds to fabric's admin classes (`console/admin.py`)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from fabric.simulator.console import admin as fault_actions  # noqa: F401
from fabric.simulator.models import SimulatedBinding, SimulatedElement, SimulatedFabric


@admin.register(SimulatedFabric)
class SimulatedFabricAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The simulated manager's settings: latencies and injected operation failures."""

    list_display = ("name", "latency_ms", "operation_faults", "element_count", "updated_at")
    search_fields = ("name",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[SimulatedFabric]:
        counted: QuerySet[SimulatedFabric] = super().get_queryset(request)
        return counted.annotate(n_elements=Count("elements"))

    @admin.display(description="elements", ordering="n_elements")
    def element_count(self, obj: SimulatedFabric) -> int:
        return getattr(obj, "n_elements", 0)


@admin.register(SimulatedElement)
class SimulatedElementAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only: faults go through the simulator app's admin actions or `manage.py
    sim_fault` (`fabric.simulator`), which record who injected them."""

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
class SimulatedBindingAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("binding_id", "device_id", "host_id", "size_gib", "fabric", "created_at")
    list_filter = ("fabric",)
    search_fields = ("binding_id", "device_id", "host_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
