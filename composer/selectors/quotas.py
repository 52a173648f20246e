"""What each tenant holds against its quotas, for the quota list (API and pages)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q, Sum

from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.models import Allocation, Quota
from fabric.kinds import shares_per_device


def quota_usage(quotas: Iterable[Quota]) -> dict[int, dict[str, Any]]:
    """{quota id: {count, memory_gib, storage_tb}} held by the quota's tenant now.

    The one count of quota usage: the quota list shows it and the request's quota check
    (composer.services.composition_checks) enforces it. It is the unreleased allocations of
    the tenant's active compositions. One query for any number
    of quotas. A share of a GPU counts against a device quota as its fraction of one
    (a 250/1000 share: 0.25 GPU).
    """
    quotas = list(quotas)
    if not quotas:
        return {}
    rows = (
        Allocation.objects.filter(
            composition__tenant__in={q.tenant_id for q in quotas},
            composition__state__in=ACTIVE_COMPOSITION_STATES,
            released_at__isnull=True,
        )
        .values("composition__tenant_id", "device__kind", "device__model")
        .annotate(
            whole=Count("id", filter=Q(gib__isnull=True, share__isnull=True)),
            shares=Sum("share"),
            sliced_gib=Sum("gib"),
            whole_gb=Sum("device__capacity_gb", filter=Q(gib__isnull=True)),
        )
    )
    held: dict[tuple[int, str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        tenant, kind = row["composition__tenant_id"], row["device__kind"]
        for key in ((tenant, kind, row["device__model"]), (tenant, kind, "")):
            # A share of a GPU counts as its fraction of one (250 thousandths: 0.25).
            parts = shares_per_device(kind) or 1
            held[key]["count"] += (row["whole"] or 0) + (row["shares"] or 0) / parts
            held[key]["memory_gib"] += row["sliced_gib"] or 0
            held[key]["storage_tb"] += (row["whole_gb"] or 0) / 1000
    usage = {}
    for quota in quotas:
        used = held.get((quota.tenant_id, quota.kind, quota.model), {})
        usage[quota.pk] = {
            "count": _figure(used.get("count", 0)),
            "memory_gib": int(used.get("memory_gib", 0)),
            "storage_tb": round(float(used.get("storage_tb", 0.0)), 3),
        }
    return usage


def _figure(count: float) -> float:
    """A device count as a whole number, or to the thousandth where shares make it a part."""
    return int(count) if count == int(count) else round(count, 3)
