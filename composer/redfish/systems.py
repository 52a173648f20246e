"""Systems: each composed system is a live Composition, rendered as a ComputerSystem.

System ids (stable, documented in docs/redfish.md): the composition's database id, so
`/redfish/v1/Systems/42` is composition 42. The collection lists the caller's live
compositions (every state from the request until it is released, `SYSTEM_STATES`: a
reservation's hold is not a system), operators' all; any other id, or another tenant's,
is a 404, never a 403.

`system_body(composition, caller)` renders one composition (in any state, so a write can
answer with the system it just created): its host's compute block and its devices' blocks
in `Links.ResourceBlocks`, `Status` and `PowerState` from its lifecycle, and what it was
asked for; the shares of GPUs it holds in `Oem.Composer.Shares` (each with its block and
its size in the kind's parts: Redfish has no word for part of a processor). The collection
carries `@Redfish.CollectionCapabilities`, which points to the capabilities of a POST
(capabilities.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Prefetch, QuerySet

from composer.choices import ACTIVE_COMPOSITION_STATES, CompositionState
from composer.models import Allocation, Composition
from composer.redfish import capabilities
from composer.redfish.blocks import HOST, block_path, system_path
from composer.redfish.caller import Call, Caller
from composer.redfish.inventory import HELD, per_request, per_request_kept
from composer.redfish.oem import SYSTEM_TYPE
from composer.redfish.paths import SYSTEMS, row_id
from composer.redfish.routes import Route
from fabric.kinds import label, shares_per_device
from fabric.redfish_render.build import collection, ref, refs, resource
from fabric.redfish_render.errors import refuse

# A UUID per composition, the same every time it is read (namespace: this service's).
SYSTEM_UUID_NAMESPACE = uuid.UUID("8b4a3c0e-4f3a-5d0b-9c6e-636f6d706f73")

# Compositions that are systems: every active one but a reservation's hold.
SYSTEM_STATES = frozenset(str(s) for s in ACTIVE_COMPOSITION_STATES) - {HELD}
S = CompositionState
# Status.State, Status.Health and PowerState of each lifecycle state.
LIFECYCLE: dict[str, tuple[str, str, str]] = {
    S.REQUESTED: ("Starting", "OK", "Off"),
    S.PLACING: ("Starting", "OK", "Off"),
    S.BINDING: ("Starting", "OK", "PoweringOn"),
    S.READY: ("Enabled", "OK", "On"),
    S.DEGRADED: ("Enabled", "Warning", "On"),
    S.HEALING: ("Updating", "Warning", "On"),
    S.RESIZING: ("Updating", "OK", "On"),
    S.DECOMPOSING: ("Disabled", "OK", "PoweringOff"),
    S.RELEASED: ("Disabled", "OK", "Off"),
    S.FAILED: ("Disabled", "Critical", "Off"),
    S.REJECTED: ("Disabled", "Critical", "Off"),
}


def systems_of(caller: Caller) -> QuerySet[Composition]:
    """The live compositions the caller sees, ready to render (three queries in all,
    whatever their number): hosts joined, unreleased allocations prefetched."""
    found = Composition.objects.filter(state__in=sorted(SYSTEM_STATES))
    if not caller.operator:
        found = found.filter(tenant_id__in=caller.tenant_ids)
    held = (
        Allocation.objects.filter(released_at__isnull=True)
        .select_related("device")
        .order_by("device_id", "id")
    )
    return found.select_related("host").prefetch_related(
        Prefetch("allocations", queryset=held, to_attr="held")
    )


def _held(composition: Composition) -> list[Allocation]:
    """The composition's unreleased allocations (prefetched by `systems_of`, else read)."""
    held = getattr(composition, "held", None)
    if held is None:
        live = composition.allocations.filter(released_at__isnull=True)
        held = list(live.select_related("device").order_by("device_id", "id"))
    return list(held)


def system_body(composition: Composition, caller: Caller) -> dict[str, Any]:
    """One composition as a ComputerSystem (the caller must be allowed to see it: the
    caller decides only what fabric detail is shown)."""
    state, health, power = LIFECYCLE.get(composition.state, ("Disabled", "OK", "Off"))
    blocks = [block_path(HOST, composition.host_id)] if composition.host_id else []
    slices_gib = 0
    shares: list[dict[str, Any]] = []
    words_of: list[str] = []
    for allocation in _held(composition):
        path = block_path(allocation.device.kind, allocation.device_id)
        if path not in blocks:
            blocks.append(path)
        slices_gib += allocation.gib or 0
        if allocation.share:
            shares.append(share_of(allocation, path))
            words_of.append(share_words(allocation))
    spec = composition.spec or {}
    host_memory = int(spec.get("host_memory_gib") or 0)
    words = CompositionState(composition.state).label.lower()
    if composition.host_id and composition.host is not None:
        words += f", on host {composition.host.name}"
    words += "".join(f"; {w}" for w in words_of)
    body = resource(
        system_path(composition.pk),
        composition.name,
        "ComputerSystem",
        Description=f"Composition {composition.name}: {words}.",
        SystemType="Composed",
        UUID=str(uuid.uuid5(SYSTEM_UUID_NAMESPACE, f"composition:{composition.pk}")),
        PowerState=power,
        Status={"State": state, "Health": health},
        ProcessorSummary={"CoreCount": int(spec.get("cores") or 0)},
        MemorySummary={"TotalSystemMemoryGiB": host_memory + slices_gib},
        Links={"ResourceBlocks": refs(blocks)},
    )
    if shares:
        # Redfish has no word for part of a processor: the shares held are Composer's own.
        body["Oem"] = {"Composer": {"@odata.type": SYSTEM_TYPE, "Shares": shares}}
    return body


def share_of(allocation: Allocation, block: str) -> dict[str, Any]:
    """One share a system holds, as `Oem.Composer.Shares` lists it: its device's block, the
    share in the kind's parts (thousandths of a GPU) and how many parts one device has."""
    whole = shares_per_device(allocation.device.kind)
    return {"ResourceBlock": ref(block), "Share": allocation.share, "SharesPerDevice": whole}


def share_words(allocation: Allocation) -> str:
    """The share in words: "a 250/1000 share of GPU gpu-a-01-1"."""
    device = allocation.device
    whole = shares_per_device(device.kind)
    return f"a {allocation.share}/{whole} share of {label(device.kind)} {device.name}"


def system_list(call: Call) -> dict[str, Any]:
    listed = per_request(call, "systems", _all_systems)
    members = [system_path(int(key)) for key in sorted(listed, key=int)]
    body = collection(SYSTEMS, "ComputerSystem", "Composed systems", members)
    body["@Redfish.CollectionCapabilities"] = capabilities.collection_capabilities(call)
    return body


def _all_systems(caller: Caller) -> dict[str, Composition]:
    return {str(c.pk): c for c in systems_of(caller)}


def system_of(call: Call) -> Composition:
    """The composition a /Systems/{system} path names, if the caller sees it; else 404.
    The collection reads every system the caller sees once per request (three queries),
    so its `$expand` costs no more than one system; a system read alone reads itself."""
    key = call.params["system"]
    listed: dict[str, Composition] | None = per_request_kept(call, "systems")
    if listed is not None:
        found = listed.get(key)
    else:
        number = row_id(key)
        found = systems_of(call.caller).filter(pk=number).first() if number is not None else None
    if found is None:
        raise refuse(
            404, f"There is no system {call.path}.", "Base.ResourceNotFound", "ComputerSystem", key
        )
    return found


def system_get(call: Call) -> dict[str, Any]:
    return system_body(system_of(call), call.caller)


ROUTES = [
    Route(SYSTEMS, get=system_list),
    Route(f"{SYSTEMS}/{{system}}", get=system_get),
    *capabilities.ROUTES,
]
