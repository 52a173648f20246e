"""The admin of the discovered inventory: racks, power feeds, switches, hosts, enclosures and
devices (read-mostly: only a move in or out of maintenance; the simulator app adds fault
injection), and pools, whose rules operators edit here.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from fabric.admin.base import (
    AuditedAdmin,
    DiscoveredAdmin,
    _maintenance_form,
    _remote_addr,
)
from fabric.choices import ChangeAction, ComponentState, DeviceState
from fabric.models import Device, Enclosure, Host, Pool, PowerFeed, Rack, Switch
from fabric.services.history import change_record
from fabric.services.maintenance import device_maintenance_state, maintenance_set
from fabric.services.pools import pools_assign


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


class DeviceStateForm(forms.ModelForm):
    """The device admin's one editable field: into maintenance, or out of it to the state
    the fabric and its holders say (`device_maintenance_state`), checked against the row
    as locked now (the admin's request is one transaction), not as the page showed it."""

    class Meta:
        model = Device
        fields = ["state"]

    def clean_state(self) -> str:
        after = self.cleaned_data["state"]
        if after == self.instance.state:
            return after  # not changed by the operator
        device = Device.objects.select_for_update().get(pk=self.instance.pk)
        if after == device.state:
            return after
        if DeviceState.MAINTENANCE not in (device.state, after):
            raise ValidationError(
                "The admin can only put a device in maintenance or take it out; "
                f"{DeviceState(after).label} is set by discovery or by the composer."
            )
        try:
            expected = device_maintenance_state(device, on=after == DeviceState.MAINTENANCE)
        except ValidationError as exc:
            raise ValidationError(exc.messages) from exc
        if expected != after:
            why = {
                DeviceState.RESERVED: "a composition still holds it",
                DeviceState.BOUND: "a composition still holds it",
                DeviceState.FAILED: "its health is critical",
            }.get(DeviceState(expected), "nothing holds it")
            raise ValidationError(
                f"Out of maintenance, {device.name} is {DeviceState(expected).label}, "
                f"not {DeviceState(after).label}: {why}."
            )
        return after


@admin.register(Device)
class DeviceAdmin(DiscoveredAdmin):
    """Devices: state changes go through `maintenance_set` (locked, compare-and-set,
    audited), never a save of the row."""

    editable = ("state",)
    form = DeviceStateForm
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

    def save_model(self, request: HttpRequest, obj: Device, form: Any, change: bool) -> None:
        if "state" not in form.changed_data:
            return
        try:
            maintenance_set(
                target=obj,
                on=obj.state == DeviceState.MAINTENANCE,
                actor=request.user,
                remote_addr=_remote_addr(request),
                source="admin",
            )
        except ValidationError as exc:  # the form checked under the same lock: not expected
            self.message_user(request, f"{obj.name}: {'; '.join(exc.messages)}", messages.ERROR)


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
