"""What every fabric admin class shares: audited saves, discovered rows, read-only rows and
the maintenance-only state form.

Kept apart from the admin classes (one module per topic) because they all build on it, and
`composer.admin` shows its compositions and events through `ReadOnlyAdmin` too.
`AuditedAdmin` and the classes built on it write a ChangeRecord for every add, change or
delete, with the operator and their address, like any service.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from fabric.choices import ChangeAction
from fabric.services.history import change_record


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

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        """Save only the editable fields the operator changed: a full-row save would write
        back every other column as it was read when the request began, undoing what a
        poll, a sync or a claim committed meanwhile."""
        fields = [name for name in form.changed_data if name in self.editable]
        if fields:
            obj.save(update_fields=[*fields, "updated_at"])
        _record_admin_change(request, obj, form, change)


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
