"""What every fabric admin class shares: audited saves, discovered rows, read-only rows and
the maintenance-only state form.

Kept apart from the admin classes (one module per topic) because they all build on it, and
`composer.admin` shows its compositions and events through `ReadOnlyAdmin` too.
`AuditedAdmin` and the classes built on it write a ChangeRecord for every add, change or
delete (bulk deletes and inline rows too), with the operator and their address, like any
service; a subclass may add to what is saved with each record (`keep_record`).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from fabric.services.history import change_record, json_value


def _remote_addr(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR") or None


def _by_name(rows: Any) -> list[str]:
    """A many-to-many field's rows (objects or pks' rows) by name, sorted."""
    return sorted(str(row) for row in rows or ())


def _before(form: forms.ModelForm[Any], name: str) -> Any:
    """A field's value before the change: a related row by its name, as `change_record`
    stores the value after (the form's initial value is the row's pk)."""
    value = form.initial.get(name)
    field = form.fields[name]
    if isinstance(field, forms.ModelMultipleChoiceField):  # initial: the rows (or their pks)
        pks = [getattr(v, "pk", v) for v in value or ()]
        return _by_name(field.queryset.filter(pk__in=pks)) if field.queryset is not None else []
    if (
        value is not None
        and isinstance(field, forms.ModelChoiceField)
        and field.queryset is not None
    ):
        return str(field.queryset.filter(pk=value).first() or value)
    return value


def admin_change_record(
    request: HttpRequest, obj: Any, form: forms.ModelForm[Any], change: bool
) -> ChangeRecord | None:
    """The unsaved ChangeRecord of a save through the admin, naming the operator and
    address; None for a change that changed nothing."""
    fields = [name for name in form.changed_data if name in form.fields]
    if change and not fields:
        return None
    # After: as stored (a model's clean() may normalise what the form cleaned).
    # Many-to-many rows are saved after the object: the form says what they will be.
    changes = {
        name: (
            _before(form, name),
            _by_name(form.cleaned_data.get(name))
            if isinstance(form.fields[name], forms.ModelMultipleChoiceField)
            else getattr(obj, name, form.cleaned_data.get(name)),
        )
        for name in fields
    }
    # A form may call a field changed that reads the same (a time shown to the second):
    # only what differs as recorded is a change.
    changes = {k: v for k, v in changes.items() if json_value(v[0]) != json_value(v[1])}
    if change and not changes:
        return None
    return change_record(
        obj,
        ChangeAction.CHANGED if change else ChangeAction.ADDED,
        changes,
        message="changed in the admin" if change else "added in the admin",
        actor=request.user,
        source="admin",
        remote_addr=_remote_addr(request),
    )


class AuditedAdmin(admin.ModelAdmin):
    """Writes a ChangeRecord for every add, change or delete made through the admin: one
    object, a bulk delete, or a row of an inline. Django's admin runs each of those in one
    transaction, so the record commits with the change or not at all."""

    def keep_record(self, record: ChangeRecord, obj: Any) -> None:
        """Save `record` about `obj` (a subclass adds what else goes with it)."""
        record.save()

    def _record_save(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        record = admin_change_record(request, obj, form, change)
        if record is not None:
            self.keep_record(record, obj)

    def _record_deleted(self, request: HttpRequest, obj: Any, *, label: str, pk: Any) -> None:
        record = change_record(
            obj,
            ChangeAction.DELETED,
            {},
            label=label,
            message="deleted in the admin",
            actor=request.user,
            source="admin",
            remote_addr=_remote_addr(request),
        )
        record.target_id = pk
        self.keep_record(record, obj)

    def _delete(self, request: HttpRequest, obj: Any, delete: Any) -> None:
        label, pk = str(obj), obj.pk  # the row's name and id, before they are gone
        delete()
        self._record_deleted(request, obj, label=label, pk=pk)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        self._record_save(request, obj, form, change)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._delete(request, obj, lambda: super(AuditedAdmin, self).delete_model(request, obj))

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        """The "delete selected" action: one record per row, in one transaction."""
        with transaction.atomic(using=queryset.db):
            for obj in queryset:
                self._delete(request, obj, obj.delete)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        """An inline's rows (a tenant's memberships): each added, changed or deleted row
        is recorded as if saved on its own page."""
        gone = [(f.instance, str(f.instance), f.instance.pk) for f in formset.deleted_forms]
        super().save_formset(request, form, formset, change)
        for obj, label, pk in gone:
            if pk is not None:
                self._record_deleted(request, obj, label=label, pk=pk)
        for inline in formset.forms:
            if inline in formset.deleted_forms or not inline.has_changed():
                continue
            if inline.instance.pk is not None:
                self._record_save(request, inline.instance, inline, inline in formset.initial_forms)


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
        self._record_save(request, obj, form, change)


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
