"""The dashboard: what is free, what is healthy, and for operators the fabric's condition."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from composer.models import Job
from composer.selectors.quotas import quotas_by_fullness, quotas_of_member
from fabric.models import FabricManager
from fabric.permissions import is_operator
from fabric.selectors import device_health_summary, fabric_summary, pool_capacities

RECENT_JOBS = 6
# Tenants in the operators' quota summary, the fullest first; the rest are a link away.
QUOTA_SUMMARY_TENANTS = 6


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """Capacity, allocation and free space of every pool, device health, recent jobs; for a
    tenant member its tenants' quotas with what each uses and has left; for operators also
    components needing attention, links down, each manager's last sync and the tenants
    closest to a quota's limit."""
    capacities = pool_capacities()
    totals: dict[str, dict[str, float]] = {}
    for cap in capacities:
        unit = totals.setdefault(cap.unit, {"capacity": 0, "allocated": 0, "free": 0})
        unit["capacity"] += cap.capacity
        unit["allocated"] += cap.allocated
        unit["free"] += cap.free
    context: dict[str, Any] = {
        "capacities": capacities,
        "device_totals": totals.get("devices"),
        "memory_totals": totals.get("GiB"),
        "health": device_health_summary(),
        "recent_jobs": Job.objects.for_user(request.user).select_related("tenant")[:RECENT_JOBS],
    }
    if is_operator(request.user):
        context["fabric"] = fabric_summary()
        context["managers"] = FabricManager.objects.order_by("name")
        summary = quotas_by_fullness()
        context["tenant_quotas"] = summary[:QUOTA_SUMMARY_TENANTS]
        context["tenant_quotas_more"] = max(len(summary) - QUOTA_SUMMARY_TENANTS, 0)
    else:
        context["member_quotas"] = quotas_of_member(request.user)
    return render(request, "composer/dashboard.html", context)
