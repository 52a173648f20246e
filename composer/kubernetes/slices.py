"""The free pool as ResourceSlices: one pool per device model and fabric, each device a
whole GPU (or NIC, drive...) that is free, healthy enough and booked by no window from now
on, offered to the nodes whose host that fabric serves.

Why a pool per model and fabric: a claim asks for a model ("2 H100s") and the scheduler
must offer a device only on a node that can reach it; a pool's node selector matches the
nodes labelled with its fabric (`names.FABRIC_LABEL`), and its devices carry
`bindsToNode` and the binding conditions, so the pod waits on its node until Composer has
composed them (CoHDI's composable DRA driver publishes the same shape).

Pure mapping: `pools_free` reads the inventory; `slices_planned` compares what is
published with what should be, bumping a pool's generation only when its devices change,
so a reconcile that finds nothing new writes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from composer.kubernetes.names import (
    CONDITION_FAILED,
    CONDITION_READY,
    CONDITION_RESCHEDULE,
    DRIVER,
    FABRIC_LABEL,
    MANAGED_BY,
    device_name,
    dns_label,
)
from composer.models import BookingHold
from fabric.choices import DeviceState, Health
from fabric.kinds import partitioned
from fabric.models import Device, FabricManager

__all__ = [
    "API_VERSION",
    "MAX_DEVICES",
    "Pool",
    "SlicePlan",
    "fabric_labels",
    "pools_free",
    "slices_planned",
]

API_VERSION = "resource.k8s.io/v1"
MAX_DEVICES = 128  # devices per ResourceSlice, the API's limit
POOL_LABEL = "composer.dev/pool"
DIGEST_ANNOTATION = "composer.dev/spec-digest"


@dataclass(frozen=True)
class Pool:
    """One pool: its name, the fabric whose nodes it is offered to, and its devices (as
    the API writes them, sorted by name)."""

    name: str
    fabric: str
    devices: tuple[dict[str, Any], ...]


@dataclass
class SlicePlan:
    """What to write: slices to create, to replace (with their resourceVersion), and the
    names of slices to delete."""

    create: list[dict[str, Any]] = field(default_factory=list)
    replace: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.create or self.replace or self.delete)


def pools_free() -> dict[str, Pool]:
    """The free devices that can be handed to a pod whole, by pool name: state FREE,
    health OK or warning, of a kind handed out whole or in shares (never CXL memory, which
    is sliced), and held by no booked window from now on (rule 7: a pod's composition has
    no end)."""
    # Held by a window not ended (a running window's devices are its composition's: not
    # free either way), as ids only: a pass reads this every few seconds.
    booked = BookingHold.objects.filter(ends_at__gt=timezone.now()).values("device_id")
    rows = (
        Device.objects.filter(
            state=DeviceState.FREE,
            health__in=(Health.OK, Health.WARNING),
            kind__in=partitioned("whole") | partitioned("shares"),
            allocated_shares=0,
        )
        .exclude(pk__in=booked)
        .select_related("manager", "enclosure")
        .order_by("pk")
    )
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    fabrics: dict[str, str] = {}
    labels = fabric_labels()
    for device in rows:
        fabric = labels[device.manager_id]
        pool = f"{fabric}/{dns_label(device.model or device.kind)}"
        fabrics[pool] = fabric
        found[pool].append(_device(device))
    return {
        name: Pool(name, fabrics[name], tuple(sorted(devices, key=lambda d: d["name"])))
        for name, devices in found.items()
    }


def fabric_labels() -> dict[int, str]:
    """Each fabric manager's value of the node label `names.FABRIC_LABEL`: its name as a
    DNS label, with its id appended where two names fold to the same label."""
    names = dict(FabricManager.objects.values_list("pk", "name"))
    folded = {pk: dns_label(name, 50) for pk, name in names.items()}
    uses = Counter(folded.values())
    return {pk: label if uses[label] == 1 else f"{label}-{pk}" for pk, label in folded.items()}


def _device(device: Device) -> dict[str, Any]:
    """One device as a ResourceSlice lists it."""
    attributes: dict[str, Any] = {
        # String attributes are at most 64 characters.
        "kind": {"string": device.kind[:64]},
        "model": {"string": (device.model or "")[:64]},
        "vendor": {"string": (device.vendor or "")[:64]},
        "enclosure": {"string": (device.enclosure.name if device.enclosure else "")[:64]},
        "composerId": {"int": device.pk},
    }
    capacity: dict[str, Any] = {}
    if device.memory_gib:
        capacity["memory"] = {"value": f"{device.memory_gib}Gi"}
    if device.capacity_gb:
        capacity["storage"] = {"value": f"{device.capacity_gb}G"}
    return {
        "name": device_name(device.kind, device.pk),
        "attributes": attributes,
        "capacity": capacity,
        "bindsToNode": True,
        "bindingConditions": [CONDITION_READY],
        "bindingFailureConditions": [CONDITION_RESCHEDULE, CONDITION_FAILED],
    }


def slices_planned(
    published: Iterable[Mapping[str, Any]], pools: Mapping[str, Pool], driver: str = DRIVER
) -> SlicePlan:
    """The writes that turn the slices `published` (this driver's, as listed) into
    `pools`. A pool whose devices are unchanged is left alone; a changed one is written
    whole at its generation plus one (consumers use only a pool's highest generation);
    slices of pools gone are deleted."""
    plan = SlicePlan()
    by_pool: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for item in published:
        spec = item.get("spec") or {}
        if spec.get("driver") != driver:
            continue
        by_pool[(spec.get("pool") or {}).get("name", "")].append(item)
    for name, slices in by_pool.items():
        if name not in pools:
            plan.delete += sorted(s["metadata"]["name"] for s in slices)
    for name, pool in sorted(pools.items()):
        old = by_pool.get(name, [])
        generation = max((_generation(s) for s in old), default=0)
        if old and _same(old, _bodies(pool, generation, driver)):
            continue
        wanted = _bodies(pool, generation + 1, driver)
        existing = {s["metadata"]["name"]: s for s in old}
        for body in wanted:
            current = existing.pop(body["metadata"]["name"], None)
            if current is None:
                plan.create.append(body)
            else:
                version = current["metadata"].get("resourceVersion")
                body["metadata"]["resourceVersion"] = version
                plan.replace.append(body)
        plan.delete += sorted(existing)
    return plan


def _generation(item: Mapping[str, Any]) -> int:
    return int(((item.get("spec") or {}).get("pool") or {}).get("generation") or 0)


def _same(old: list[Mapping[str, Any]], wanted: list[dict[str, Any]]) -> bool:
    """Whether the published slices are the wanted ones, whatever the generation: the same
    names with the same digest of what Composer wrote. The digest, not the spec as read
    back: the API server canonicalises quantities ("1000G" reads "1T") and drops fields
    its feature gates turn off, so a spec read back may never equal the one written."""

    def key(item: Mapping[str, Any]) -> tuple[str, str]:
        annotations = (item.get("metadata") or {}).get("annotations") or {}
        return (item["metadata"]["name"], str(annotations.get(DIGEST_ANNOTATION, "")))

    return sorted(map(key, old)) == sorted(map(key, wanted))


def _digest(spec: Mapping[str, Any]) -> str:
    """The digest of a slice's spec but its generation."""
    pool = {k: v for k, v in (spec.get("pool") or {}).items() if k != "generation"}
    text = json.dumps({**spec, "pool": pool}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _bodies(pool: Pool, generation: int, driver: str) -> list[dict[str, Any]]:
    """The pool's slices at `generation`, MAX_DEVICES devices each."""
    chunks = [pool.devices[i : i + MAX_DEVICES] for i in range(0, len(pool.devices), MAX_DEVICES)]
    bodies = []
    for index, chunk in enumerate(chunks):
        spec = {
            "driver": driver,
            "pool": {
                "name": pool.name,
                "generation": generation,
                "resourceSliceCount": len(chunks),
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": FABRIC_LABEL, "operator": "In", "values": [pool.fabric]}
                        ]
                    }
                ]
            },
            "devices": list(chunk),
        }
        bodies.append(
            {
                "apiVersion": API_VERSION,
                "kind": "ResourceSlice",
                "metadata": {
                    "name": dns_label(f"composer-{pool.name}", 240) + f"-{index}",
                    "labels": {
                        "app.kubernetes.io/managed-by": MANAGED_BY,
                        POOL_LABEL: dns_label(pool.name.replace("/", "."), 63),
                    },
                    "annotations": {DIGEST_ANNOTATION: _digest(spec)},
                },
                "spec": spec,
            }
        )
    return bodies
