"""Django admin for the fabric: every model, read-mostly, with fault injection and sync actions.

Discovered rows belong to inventory sync: the admin shows them but cannot add or delete
them, and only lets an operator move a component in or out of MAINTENANCE. Every change
made here writes a ChangeRecord with the operator and their address, like any service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from fabric.choices import ChangeAction, ComponentState, DeviceState, FaultAction
from fabric.drivers.base import DriverError
from fabric.models import (
    Alert,
    ChangeRecord,
    Device,
    DeviceDomain,
    Enclosure,
    FabricManager,
    FailureDomain,
    HealthCondition,
    HealthSample,
    Host,
    Link,
    Pool,
    Port,
    PowerFeed,
    Rack,
    SimulatedBinding,
    SimulatedElement,
    SimulatedFabric,
    Switch,
)
from fabric.services.alerts import alert_acknowledge
from fabric.services.faults import FAULT_MODELS, fault_inject
from fabric.services.history import change_record
from fabric.services.pools import pools_assign
from fabric.services.sync import inventory_sync

DISCOVERED_READONLY = (
    "manager",
    "external_id",
    "first_seen_at",
    "last_seen_at",
    "created_at",
    "updated_at",
)


def _remote_addr(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR") or None


def _record_admin_change(
    request: HttpRequest, obj: Any, form: forms.ModelForm[Any], change: bool
) -> None:
    """One ChangeRecord per save through the admin, naming the operator and address."""
    fields = [name for name in form.changed_data if name in form.fields]
    if change and not fields:
        return
    changes = {name: (form.initial.get(name), form.cleaned_data.get(name)) for name in fields}
    change_record(
        obj,
        ChangeAction.CHANGED if change else ChangeAction.ADDED,
        changes,
        message="changed in the admin" if change else "added in the admin",
        actor=request.user,
        source="admin",
        remote_addr=_remote_addr(request),
    ).save()


class AuditedAdmin(admin.ModelAdmin):
    """Writes a ChangeRecord for every add or change made through the admin."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        _record_admin_change(request, obj, form, change)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        label, pk = str(obj), obj.pk
        record = change_record(
            obj,
            ChangeAction.VANISHED,
            {},
            label=label,
            message="deleted in the admin",
            actor=request.user,
            source="admin",
            remote_addr=_remote_addr(request),
        )
        super().delete_model(request, obj)
        record.target_id = pk
        record.save()


class DiscoveredAdmin(AuditedAdmin):
    """For rows written by inventory sync: no adding, no deleting, few editable fields."""

    editable: tuple[str, ...] = ()
    show_full_result_count = False
    list_per_page = 100

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        names = [f.name for f in self.model._meta.concrete_fields if f.name != "id"]
        return [name for name in names if name not in self.editable]


def _maintenance_form(
    form_model: type[Any], allowed: frozenset[str], state_choices: Any
) -> type[forms.ModelForm[Any]]:
    """A form whose only editable field, `state`, may only enter or leave MAINTENANCE."""

    class StateForm(forms.ModelForm):
        class Meta:
            model = form_model
            fields = ["state"]

        def clean_state(self) -> str:
            before = self.initial.get("state")
            after = self.cleaned_data["state"]
            if after != before and not ({before, after} <= allowed):
                raise ValidationError(
                    f"The admin can only move between {' and '.join(sorted(allowed))}; "
                    f"{state_choices(after).label} is set by discovery or by the composer."
                )
            return after

    return StateForm


def _fault_action(action: str) -> Callable[[Any, HttpRequest, QuerySet[Any]], None]:
    def inject(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        target_type = next(t for t, m in FAULT_MODELS.items() if m is queryset.model)
        done = 0
        for obj in queryset.select_related("manager"):
            try:
                outcome = fault_inject(
                    manager=obj.manager,
                    target_type=target_type,
                    target_id=obj.pk,
                    action=action,
                    actor=request.user,
                    remote_addr=_remote_addr(request),
                    source="admin",
                )
            except ValidationError as exc:
                modeladmin.message_user(
                    request, f"{obj}: {'; '.join(exc.messages)}", messages.ERROR
                )
                continue
            if outcome.changed:
                done += 1
            else:
                modeladmin.message_user(request, outcome.sentence(), messages.INFO)
        if done:
            modeladmin.message_user(
                request,
                f"{action.capitalize()} injected on {done} {target_type.replace('_', ' ')}(s); "
                "the console shows it after the next inventory sync.",
                messages.SUCCESS,
            )

    inject.__name__ = f"inject_{action}"
    # What @admin.action(description=...) sets, for an action built at run time.
    inject.short_description = f"Inject fault: {action}"  # type: ignore[attr-defined]
    return inject


FAULT_ACTIONS = [_fault_action(a) for a in FaultAction.values]


@admin.register(FabricManager)
class FabricManagerAdmin(AuditedAdmin):
    list_display = (
        "name",
        "driver",
        "endpoint",
        "is_enabled",
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


@admin.register(Rack)
class RackAdmin(DiscoveredAdmin):
    list_display = ("name", "location", "health", "is_present", "manager", "last_seen_at")
    list_filter = ("manager", "health", "is_present")
    search_fields = ("name", "external_id", "location")


@admin.register(PowerFeed)
class PowerFeedAdmin(DiscoveredAdmin):
    list_display = ("name", "rack", "capacity_kw", "health", "is_present", "manager")
    list_filter = ("manager", "health", "is_present", "rack")
    search_fields = ("name", "external_id")
    list_select_related = ("rack", "manager")
    actions = FAULT_ACTIONS


class ComponentAdmin(DiscoveredAdmin):
    """Switches, hosts and enclosures: operators may put them in or out of maintenance."""

    editable = ("state",)
    list_select_related = ("rack", "power_feed", "manager")

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = _maintenance_form(
            self.model,
            frozenset({ComponentState.ACTIVE, ComponentState.MAINTENANCE}),
            ComponentState,
        )
        return super().get_form(request, obj, change, **kwargs)


@admin.register(Switch)
class SwitchAdmin(ComponentAdmin):
    list_display = (
        "name",
        "protocol",
        "tier",
        "rack",
        "power_feed",
        "health",
        "state",
        "vendor",
        "model",
        "firmware",
    )
    list_filter = ("manager", "protocol", "tier", "health", "state", "rack")
    search_fields = ("name", "external_id", "serial")
    actions = FAULT_ACTIONS


@admin.register(Host)
class HostAdmin(ComponentAdmin):
    list_display = (
        "name",
        "cores",
        "memory_gib",
        "rack",
        "power_feed",
        "health",
        "state",
        "vendor",
        "model",
    )
    list_filter = ("manager", "health", "state", "rack", "vendor")
    search_fields = ("name", "external_id", "serial")


@admin.register(Enclosure)
class EnclosureAdmin(ComponentAdmin):
    list_display = (
        "name",
        "kind",
        "slots",
        "rack",
        "power_feed",
        "health",
        "state",
        "vendor",
        "model",
    )
    list_filter = ("manager", "kind", "health", "state", "rack")
    search_fields = ("name", "external_id", "serial")
    actions = FAULT_ACTIONS


@admin.register(Device)
class DeviceAdmin(DiscoveredAdmin):
    editable = ("state",)
    list_display = (
        "name",
        "kind",
        "model",
        "enclosure",
        "pool",
        "state",
        "health",
        "bound_host",
        "memory_gib",
        "capacity_gb",
    )
    list_filter = ("manager", "kind", "state", "health", "pool", "model")
    search_fields = ("name", "external_id", "serial", "model")
    list_select_related = ("enclosure", "pool", "bound_host", "manager")
    actions = FAULT_ACTIONS

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = _maintenance_form(
            Device, frozenset({DeviceState.FREE, DeviceState.MAINTENANCE}), DeviceState
        )
        return super().get_form(request, obj, change, **kwargs)


@admin.register(Port)
class PortAdmin(DiscoveredAdmin):
    list_display = (
        "external_id",
        "name",
        "role",
        "switch",
        "host",
        "enclosure",
        "lanes",
        "speed_gts",
        "health",
        "is_present",
    )
    list_filter = ("manager", "role", "health", "is_present")
    search_fields = ("external_id", "name", "switch__name", "host__name", "enclosure__name")
    list_select_related = ("switch", "host", "enclosure")


@admin.register(Link)
class LinkAdmin(DiscoveredAdmin):
    list_display = ("external_id", "latency_ns", "bandwidth_gbps", "state", "health", "is_present")
    list_filter = ("manager", "state", "health", "is_present")
    search_fields = ("external_id", "a_port__external_id", "b_port__external_id")
    actions = FAULT_ACTIONS


@admin.register(Pool)
class PoolAdmin(AuditedAdmin):
    """Pools are rules; saving or deleting one re-applies the rules to every device."""

    list_display = ("name", "kind", "model", "rack", "device_count")
    list_filter = ("kind", "rack")
    search_fields = ("name", "slug", "model")
    prepopulated_fields = {"slug": ("name",)}
    list_select_related = ("rack",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Pool]:
        return super().get_queryset(request).annotate(n_devices=Count("devices"))

    @admin.display(description="devices", ordering="n_devices")
    def device_count(self, obj: Pool) -> int:
        return getattr(obj, "n_devices", 0)

    def save_model(self, request: HttpRequest, obj: Pool, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        moved = pools_assign(actor=request.user, source="admin")
        self.message_user(request, f"Pool membership recomputed: {moved} device(s) moved.")

    def delete_model(self, request: HttpRequest, obj: Pool) -> None:
        super().delete_model(request, obj)
        pools_assign(actor=request.user, source="admin")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Pool]) -> None:
        for pool in queryset:
            change_record(
                pool,
                ChangeAction.VANISHED,
                {},
                message="deleted in the admin",
                actor=request.user,
                source="admin",
                remote_addr=_remote_addr(request),
            ).save()
        super().delete_queryset(request, queryset)
        pools_assign(actor=request.user, source="admin")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by services, jobs or discovery (audit trails, derived data, state
    machines): the admin reads them, never adds, changes or deletes."""

    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DerivedAdmin(ReadOnlyAdmin):
    """Read-only: derived from the topology by `domains_refresh` at every inventory sync."""


@admin.register(FailureDomain)
class FailureDomainAdmin(DerivedAdmin):
    list_display = ("name", "kind", "key", "manager", "device_count", "host_count", "updated_at")
    list_filter = ("kind", "manager")
    search_fields = ("name", "key")
    list_select_related = ("manager",)


@admin.register(DeviceDomain)
class DeviceDomainAdmin(DerivedAdmin):
    list_display = ("device", "domain")
    list_filter = ("domain__kind",)
    search_fields = ("device__name", "domain__name", "domain__key")
    list_select_related = ("device", "domain")
    raw_id_fields = ("device", "domain")


@admin.register(ChangeRecord)
class ChangeRecordAdmin(ReadOnlyAdmin):
    """The audit trail: append-only, so read-only here."""

    list_display = (
        "at",
        "action",
        "target_type",
        "target_label",
        "actor",
        "source",
        "remote_addr",
        "message",
    )
    list_filter = ("action", "target_type", "source")
    search_fields = ("target_label", "message", "source")
    date_hierarchy = "at"
    list_select_related = ("actor",)


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
    """Read-only: faults go through the console's admin actions or `manage.py sim_fault`,
    which record who injected them."""

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
