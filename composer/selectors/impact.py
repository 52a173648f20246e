"""What compositions and tenants a fabric failure hurts: composer's impact contributor.

The fabric computes a blast radius in its own terms (devices, hosts, links, enclosures
lost or cut off); it cannot name compositions because fabric never imports composer.
`composition_impact` is registered with `fabric.topology.impact` in ComposerConfig.ready()
and adds them: a composition is hit when one of its bindings is lost — its host or one
of its devices is lost, or its host no longer reaches the device's enclosure
(`Impact.binding_lost`, the same rule the what-if page and the alerts use) — and degraded
when every binding holds but some over fewer paths (`Impact.binding_degraded`).

One query per call, over the active allocations only (a few thousand rows at most in a
large data centre), so a what-if or an alert's blast radius stays cheap.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.models import Allocation
from fabric.topology.radius import Impact

__all__ = ["composition_impact"]


def composition_impact(impact: Impact) -> dict[str, list[dict[str, Any]]]:
    """The compositions and tenants `impact` hurts, in name order.

    `compositions`: those hit (a binding lost: they lose their host or a device);
    `compositions_degraded`: the others that keep every binding, some over fewer paths
    (`Impact.binding_degraded`); `tenants`: the tenants of the compositions hit;
    `tenants_degraded`: those of the degraded ones not hit. A composition row: id, name,
    state, tenant_id, tenant {id, name}, url, reason and the names of the devices concerned
    (`devices`); a tenant row: id, name, compositions concerned.
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
    slowed: dict[int, dict[str, Any]] = {}
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
        device = f"device:{device_id}"
        enclosure = f"enclosure:{enclosure_id}" if enclosure_id is not None else None
        if impact.binding_lost(host, device, enclosure):
            found = hit
        elif impact.binding_degraded(host, device, enclosure):
            found = slowed
        else:
            continue
        row = found.get(composition_id)
        if row is None:
            row = found[composition_id] = {
                "id": composition_id,
                "name": name,
                "state": state,
                "tenant_id": tenant_id,
                "tenant": {"id": tenant_id, "name": tenant_name},
                "url": reverse("composer:composition_detail", args=[composition_id]),
                "devices": [],
                "host_lost": host in impact.hosts or host in impact.failed,
            }
        row["devices"].append(device_name)
    compositions = _ordered(hit, "loses {devices}")
    degraded = _ordered(
        {pk: row for pk, row in slowed.items() if pk not in hit}, "fewer paths to {devices}"
    )
    tenants = _tenants(compositions)
    return {
        "compositions": compositions,
        "tenants": tenants,
        "compositions_degraded": degraded,
        "tenants_degraded": [
            t for t in _tenants(degraded) if t["id"] not in {h["id"] for h in tenants}
        ],
    }


def _ordered(found: dict[int, dict[str, Any]], reason: str) -> list[dict[str, Any]]:
    """The rows in name order, each with its reason."""
    rows = sorted(found.values(), key=lambda r: (r["name"], r["id"]))
    for row in rows:
        host_lost = row.pop("host_lost")
        devices = ", ".join(sorted(row["devices"]))
        row["reason"] = "its host is lost" if host_lost else reason.format(devices=devices)
    return rows


def _tenants(compositions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tenants: dict[int, dict[str, Any]] = {}
    for row in compositions:
        tenant = tenants.setdefault(
            row["tenant_id"],
            {"id": row["tenant_id"], "name": row["tenant"]["name"], "compositions": 0},
        )
        tenant["compositions"] += 1
    return sorted(tenants.values(), key=lambda t: (t["name"], t["id"]))
