"""Utilisation samples in the admin, read-only: they are written by the sampling task only
(`composer.services.utilisation`) and read through the utilisation page and API; the admin
lets an operator look at the rows behind a chart."""

from __future__ import annotations

from django.contrib import admin

from composer.models import KindSample, PoolSample, TenantSample
from fabric.admin import ReadOnlyAdmin

__all__ = ["KindSampleAdmin", "PoolSampleAdmin", "TenantSampleAdmin"]


@admin.register(PoolSample)
class PoolSampleAdmin(ReadOnlyAdmin):
    list_display = (
        "pool",
        "resolution",
        "bucket_start",
        "capacity",
        "allocated",
        "free",
        "stranded",
    )
    list_filter = ("resolution",)
    list_select_related = ("pool",)
    date_hierarchy = "bucket_start"
    show_full_result_count = False


@admin.register(KindSample)
class KindSampleAdmin(ReadOnlyAdmin):
    list_display = (
        "kind",
        "resolution",
        "bucket_start",
        "capacity",
        "allocated",
        "free",
        "stranded",
    )
    list_filter = ("resolution", "kind")
    date_hierarchy = "bucket_start"
    show_full_result_count = False


@admin.register(TenantSample)
class TenantSampleAdmin(ReadOnlyAdmin):
    list_display = ("tenant", "resolution", "bucket_start", "compositions")
    list_filter = ("resolution",)
    list_select_related = ("tenant",)
    date_hierarchy = "bucket_start"
    show_full_result_count = False
