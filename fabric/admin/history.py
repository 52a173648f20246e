"""The admin of the fabric's audit trail, the change records: append-only, so read-only here."""

from __future__ import annotations

from django.contrib import admin

from fabric.admin.base import ReadOnlyAdmin
from fabric.models import ChangeRecord


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
