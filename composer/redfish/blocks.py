"""The CompositionService and its ResourceBlocks: each present device (GPU, CXL memory,
NVMe drive, NIC, DPU, FPGA) is a block, and each host a compute block.

Block ids (stable, documented in docs/redfish.md): `<kind>-<pk>` for a device (`gpu-12`,
`cxl_memory-7`, `nvme-30`: its kind, which never changes, and its database id) and
`host-<pk>` for a host; a row's id never changes while it lives (rows are marked absent,
never deleted). So `/redfish/v1/CompositionService/ResourceBlocks/gpu-12` is device 12.
`device_of_block` and `host_of_block` read such an id (or its whole @odata.id) back into
the row, for the writes that name blocks (`Links.ResourceBlocks` of a compose).

CompositionStatus.CompositionState, as the caller sees it (`block_state`):
`Failed` (failed, or health critical), `Unavailable` (in maintenance, or held outside
Composer), `Composing` (its composition is being built), `Composed` (held whole, a
memory device with no GiB left, a GPU with no share left), `ComposedAndAvailable` (a
shared block, host, CXL memory or a GPU held in shares, that is composed and takes more),
`Unused`; `Reserved` is true while a reservation (a PreviewReserve's hold) holds it.
Hosts, CXL memory devices and the kinds that split into shares (GPUs: `fabric.kinds`) are
`SharingCapable`: several compositions share a host, a memory device is carved into GiB
slices, one per composition, and a GPU into shares held by compositions on the one host it
is bound to. A tenant counts and sees linked only its own compositions.
"""

from __future__ import annotations

from typing import Any

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from composer.redfish import paths
from composer.redfish.caller import Call, Caller
from composer.redfish.inventory import (
    CLAIMING_STATES,
    Hold,
    Inventory,
    closed_kinds,
    device_offered,
    host_offered,
    inventory,
    status,
)
from composer.redfish.paths import (
    CHASSIS,
    COMPOSITION,
    RESERVATIONS,
    RESOURCE_BLOCKS,
    RESOURCE_ZONES,
)
from composer.redfish.routes import Route
from fabric.choices import ComponentState, DeviceState, Health
from fabric.kinds import all_kinds, is_sliced, shares_per_device
from fabric.models import Device, Host
from fabric.redfish_render.build import collection, health_status, ref, refs, resource
from fabric.redfish_render.errors import RedfishError, refuse
from fabric.topology.elements import Node

# Device kind -> its ResourceBlockType (`fabric.kinds`).
BLOCK_TYPES = {k.name: k.redfish.block_type for k in all_kinds()}
COMPOSING = frozenset(
    {CompositionState.REQUESTED, CompositionState.PLACING, CompositionState.BINDING}
)
REQUEST_TYPES = ["Preview", "PreviewReserve", "Apply"]


HOST = "host"


block_path = paths.resource_block


def node_path(node: Node) -> str:
    """The block of a fabric graph node (a device or a host)."""
    kind = HOST if node.kind == "host" else node.attrs["device_kind"]
    return block_path(kind, node.pk)


system_path = paths.system


# Device kind -> (the block's property, the part's id, its Redfish type): `fabric.kinds`.
DEVICE_PARTS = {
    k.name: (k.redfish.collection, k.redfish.part, k.redfish.part_type) for k in all_kinds()
}
HOST_PARTS = {"Processors": ("CPU", "Processor"), "Memory": ("DRAM", "Memory")}


def part_paths(node: Node) -> dict[str, list[str]]:
    """The block's properties that link its parts: {"Processors": [path], ...}."""
    block = node_path(node)
    if node.kind == "host":
        return {prop: [f"{block}/{prop}/{part}"] for prop, (part, _) in HOST_PARTS.items()}
    prop, part, _ = DEVICE_PARTS.get(node.attrs["device_kind"], ("", "", ""))
    return {prop: [f"{block}/{prop}/{part}"]} if prop else {}


def block_state(node: Node, claims: list[Hold], *, operator: bool) -> str:
    """The CompositionState of a block given the claims the caller may know of
    (reservations are not compositions: they make a block `Reserved`, see block_body)."""
    reserved = any(h.is_reservation for h in claims)
    claims = [h for h in claims if not h.is_reservation]
    if node.state == DeviceState.FAILED or node.health == Health.CRITICAL:
        return "Failed"
    if node.state == DeviceState.MAINTENANCE:
        return "Unavailable"
    if claims and all(h.state in COMPOSING for h in claims):
        return "Composing"
    if sharing(node):
        room = _room(node)
        if claims:
            return "ComposedAndAvailable" if room else "Composed"
        return "Unused" if room or reserved or not operator else "Unavailable"
    if claims:
        return "Composed"
    taken = node.state != DeviceState.FREE or node.attrs.get("bound_host")
    if operator and taken and not reserved:
        return "Unavailable"  # held on the fabric by nothing Composer knows of
    return "Unused"


def sharing(node: Node) -> bool:
    """Whether a block may be part of several compositions at once: a host, a memory device
    (GiB slices), a device of a kind that splits into shares (a GPU: `fabric.kinds`)."""
    kind = node.attrs.get("device_kind", "")
    return node.kind == "host" or is_sliced(kind) or shares_per_device(kind) > 0


def _room(node: Node) -> bool:
    """Whether a sharing block takes one more composition: a host always, a memory device
    with GiB free, a shared device with a share free, or free whole (every share free)."""
    attrs = node.attrs
    kind = attrs.get("device_kind", "")
    if node.kind == "host":
        return True
    if is_sliced(kind):
        return attrs.get("free_gib", 0) > 0
    held = attrs.get("allocated_shares", 0)
    if held:
        return held < shares_per_device(kind)
    return node.state == DeviceState.FREE and not attrs.get("bound_host")


def _description(node: Node) -> str:
    """What the block is, in words: kind and model, size, what is left of a memory device."""
    attrs = node.attrs
    if node.kind == "host":
        cores, memory = attrs.get("cores", 0), attrs.get("memory_gib", 0)
        return f"Host {node.name}: {cores} cores, {memory} GiB; compositions are built on it."
    kind = attrs["device_kind"]
    words = f"{attrs.get('model') or kind} {node.name}"
    if is_sliced(kind):
        return f"{words}: {attrs.get('free_gib', 0)} of {attrs.get('memory_gib', 0)} GiB free."
    if attrs.get("allocated_shares"):
        whole = shares_per_device(kind)
        free = max(0, whole - attrs["allocated_shares"])
        memory = f", {attrs['memory_gib']} GiB" if attrs.get("memory_gib") else ""
        return f"{words}{memory}: shared, {free}/{whole} free."
    if attrs.get("capacity_gb"):
        return f"{words}, {attrs['capacity_gb']} GB."
    if attrs.get("memory_gib"):
        return f"{words}, {attrs['memory_gib']} GiB."
    return f"{words}."


def block_body(inv: Inventory, node: Node) -> dict[str, Any]:
    """One block as the inventory's caller sees it."""
    every = inv.claims(node.id)
    claims = [h for h in every if not h.is_reservation]
    operator = inv.caller.operator
    shared = sharing(node)
    composition: dict[str, Any] = {
        "CompositionState": block_state(node, every, operator=operator),
        "Reserved": any(h.is_reservation for h in every),
        "SharingCapable": shared,
        "NumberOfCompositions": len(claims),
    }
    if shared:
        composition["SharingEnabled"] = True
    else:
        composition["MaxCompositions"] = 1
    links: dict[str, Any] = {
        "ComputerSystems": refs([system_path(h.composition) for h in claims]),
        "Zones": refs([f"{RESOURCE_ZONES}/{z}" for z in inv.zones_of(node)]),
    }
    if operator and node.kind == "device" and node.parent:
        links["Chassis"] = refs([f"{CHASSIS}/{node.parent.replace(':', '-', 1)}"])
    if node.kind == "host":
        kind = "Compute"
    else:
        kind = BLOCK_TYPES.get(node.attrs["device_kind"], "Expansion")
    return resource(
        node_path(node),
        node.name,
        "ResourceBlock",
        Description=_description(node),
        ResourceBlockType=[kind],
        Status=status(node),
        CompositionStatus=composition,
        **{prop: refs(paths) for prop, paths in part_paths(node).items()},
        Links=links,
    )


def composition_service(call: Call) -> dict[str, Any]:
    """The CompositionService: blocks, zones, reservations and the Compose action."""
    return resource(
        COMPOSITION,
        "Composition service",
        "CompositionService",
        Description="Composer's pools as resource blocks, composed into systems.",
        ServiceEnabled=True,
        AllowOverprovisioning=False,
        AllowZoneAffinity=True,
        Status=health_status(),
        ResourceBlocks=ref(RESOURCE_BLOCKS),
        ResourceZones=ref(RESOURCE_ZONES),
        CompositionReservations=ref(RESERVATIONS),
        Actions={
            "#CompositionService.Compose": {
                "target": f"{COMPOSITION}/Actions/CompositionService.Compose",
                "RequestFormat@Redfish.AllowableValues": ["Manifest"],
                "RequestType@Redfish.AllowableValues": REQUEST_TYPES,
            }
        },
    )


def block_list(call: Call) -> dict[str, Any]:
    inv = inventory(call)
    members = [node_path(node) for node in inv.blocks()]
    return collection(RESOURCE_BLOCKS, "ResourceBlock", "Resource blocks", members)


def block_get(call: Call) -> dict[str, Any]:
    inv = inventory(call)
    key = call.params["block"]
    kind, _, pk = key.rpartition("-")
    node = inv.node(f"{'host' if kind == HOST else 'device'}:{pk}")
    if node is None or node_path(node) != f"{RESOURCE_BLOCKS}/{key}" or not inv.visible(node):
        raise refuse(
            404, f"There is no resource block {call.path}.", "Base.ResourceNotFound",
            "ResourceBlock", key,
        )  # fmt: skip
    return block_body(inv, node)


# -- reading a block named in a request back into its row ------------------------------


def _parse(value: object, pointer: str) -> tuple[str, int]:
    text = str(value.get("@odata.id", "") if isinstance(value, dict) else value or "")
    key = text.rstrip("/").rsplit("/", 1)[-1]
    if text != key and text.rstrip("/") != f"{RESOURCE_BLOCKS}/{key}":
        raise _not_found(text, pointer)
    kind, _, pk = key.rpartition("-")
    number = paths.row_id(pk)
    if not kind or number is None:
        raise _not_found(text, pointer)
    return kind, number


def _not_found(text: str, pointer: str) -> RedfishError:
    return refuse(
        400,
        f"{pointer[2:] or 'The request'} names {text!r}, which is not a resource block you "
        "may use; read /redfish/v1/CompositionService/ResourceBlocks for those there are.",
        "Composition.ResourceBlockNotFound",
        text,
        properties=(pointer,),
    )


def device_of_block(
    value: object, caller: Caller, pointer: str = "#/Links/ResourceBlocks"
) -> Device:
    """The Device a block id or @odata.id (or a `{"@odata.id": ...}` link) names, if the
    caller may see it; else a 400 `ResourceBlockNotFound` naming it at `pointer` (also
    for a compute block: a host is not a device)."""
    text = str(value.get("@odata.id", "") if isinstance(value, dict) else value)
    kind, pk = _parse(value, pointer)
    device = (
        Device.objects.filter(pk=pk, kind=kind).exclude(state=DeviceState.ABSENT).first()
        if kind != HOST
        else None
    )
    if device is None or not _sees_device(device, caller):
        raise _not_found(text, pointer)
    return device


def host_of_block(value: object, caller: Caller, pointer: str = "#/Links/ResourceBlocks") -> Host:
    """The Host a compute block names, if the caller may see it; else as
    `device_of_block`."""
    text = str(value.get("@odata.id", "") if isinstance(value, dict) else value)
    kind, pk = _parse(value, pointer)
    host = (
        Host.objects.filter(pk=pk).exclude(state=ComponentState.ABSENT).first()
        if kind == HOST
        else None
    )
    if host is None:
        raise _not_found(text, pointer)
    if not caller.operator and not host_offered(host.state, host.health):
        mine = Composition.objects.filter(
            host=host, tenant_id__in=caller.tenant_ids, state__in=CLAIMING_STATES
        )
        if not mine.exists():
            raise _not_found(text, pointer)
    return host


def is_compute_block(value: object, pointer: str = "#/Links/ResourceBlocks") -> bool:
    """Whether a block reference names a host (`host_of_block`) rather than a device
    (`device_of_block`); a 400 when it names no block at all."""
    return _parse(value, pointer)[0] == HOST


def _sees_device(device: Device, caller: Caller) -> bool:
    if caller.operator:
        return True
    held = Allocation.objects.filter(
        device=device,
        released_at__isnull=True,
        composition__tenant_id__in=caller.tenant_ids,
        composition__state__in=CLAIMING_STATES,
    )
    if held.exists():
        return True
    return device_offered(
        caller,
        closed_kinds(caller),
        kind=device.kind,
        model=device.model,
        pool=device.pool_id,
        state=device.state,
        health=device.health,
        free_gib=device.free_gib or 0,
    )


ROUTES = [
    Route(COMPOSITION, get=composition_service),
    Route(RESOURCE_BLOCKS, get=block_list),
    Route(f"{RESOURCE_BLOCKS}/{{block}}", get=block_get),
]
