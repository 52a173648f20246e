"""What compositions and tenants a fabric failure hurts: composer's impact contributor.

The fabric computes a blast radius in its own terms (devices, hosts, links, enclosures
lost or cut off); it cannot name compositions because fabric never imports composer.
`composition_impact` is registered with `fabric.topology.impact` in ComposerConfig.ready()
and adds them: a composition is hit when one of its bindings is lost — its host or one
of its devices fails, or its host no longer reaches the device's enclosure
(`Impact.binding_lost`, the same rule the what-if page and the alerts use).

One query per call, over the active allocations only (a few thousand rows at most in a
large data centre), so a what-if or an alert's blast radius stays cheap.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.models import Allocation
from fabric.topology.domains import Impact

__all__ = ["composition_impact"]


def composition_impact(impact: Impact) -> dict[str, list[dict[str, Any]]]:
    """{"compositions": [...], "tenants": [...]} hit by `impact`, in name order.

    A composition row: id, name, state, tenant_id, tenant {id, name}, url, reason and the
    names of the devices it loses (`devices`); a tenant row: id, name, compositions hit.
    """
    rows = Allocation.objects.filter(
        released_at__isnull=True, composition__state__in=ACTIVE_COMPOSITION_STATES
    ).values_list(
        "composition_id",
        "composition__name",
        "composition__state",
        "composition__tenant_id",
        "composition__tenant__name",
        "composition__host_id",
        "device_id",
        "device__name",
        "device__enclosure_id",
    )
    hit: dict[int, dict[str, Any]] = {}
    for (
        composition_id,
        name,
        state,
        tenant_id,
        tenant_name,
        host_id,
        device_id,
        device_name,
        enclosure_id,
    ) in rows:
        if host_id is None:
            continue  # not placed on a host yet: nothing bound that could be lost
        host = f"host:{host_id}"
        enclosure = f"enclosure:{enclosure_id}" if enclosure_id is not None else None
        if not impact.binding_lost(host, f"device:{device_id}", enclosure):
            continue
        row = hit.get(composition_id)
        if row is None:
            row = hit[composition_id] = {
                "id": composition_id,
                "name": name,
                "state": state,
                "tenant_id": tenant_id,
                "tenant": {"id": tenant_id, "name": tenant_name},
                "url": reverse("composer:composition_detail", args=[composition_id]),
                "devices": [],
                "host_lost": host in impact.failed,
            }
        row["devices"].append(device_name)
    compositions = sorted(hit.values(), key=lambda r: (r["name"], r["id"]))
    tenants: dict[int, dict[str, Any]] = {}
    for row in compositions:
        row["reason"] = (
            "its host fails"
            if row.pop("host_lost")
            else f"loses {', '.join(sorted(row['devices']))}"
        )
        tenant = tenants.setdefault(
            row["tenant_id"],
            {"id": row["tenant_id"], "name": row["tenant"]["name"], "compositions": 0},
        )
        tenant["compositions"] += 1
    return {
        "compositions": compositions,
        "tenants": sorted(tenants.values(), key=lambda t: (t["name"], t["id"])),
    }
