"""Hosts as ComputerSystems (expandable: their `Links.ResourceBlocks` are the whole
devices bound to them) and the CompositionService: a resource block per whole device
(GPU, NVMe drive, NIC), holding the device as its Processor, Drive or NetworkInterface."""

from __future__ import annotations

from fabric.kinds import all_kinds, is_sliced
from fabric.redfish_render import build
from fabric.redfish_render.build import Resource, collection, ref, refs, resource
from fabric.simulator.redfish import common, paths, sensors
from fabric.simulator.redfish.common import status
from fabric.simulator.redfish.world import Element, World

GIB_MIB = 1024
_BLOCK_TYPES = {k.name: k.redfish.block_type for k in all_kinds()}


def blocked(world: World) -> list[Element]:
    """The devices offered as resource blocks: every device but CXL memory (carved into
    chunks of its memory domain instead)."""
    return [d for d in world.of("device") if _is_block(d)]


def render(world: World, tree: dict[str, Resource], ports: dict[str, list[Resource]]) -> None:
    """Add the systems, the composition service, its blocks and zone, and the devices,
    all unbound (`compose` adds the bindings)."""
    devices = blocked(world)
    hosts = world.of("host")
    tree[paths.SYSTEMS] = collection(
        paths.SYSTEMS, "ComputerSystem", "Hosts", [paths.system(h.external_id) for h in hosts]
    )
    for host in hosts:
        _system(world, tree, host, ports)
    service = paths.COMPOSITION
    tree[service] = resource(
        service,
        "Composition service",
        "CompositionService",
        ServiceEnabled=True,
        AllowOverprovisioning=False,
        Status=status(),
        ResourceBlocks=ref(paths.BLOCKS),
        ResourceZones=ref(paths.RESOURCE_ZONES),
    )
    blocks = [paths.block(d.external_id) for d in devices]
    tree[paths.BLOCKS] = collection(paths.BLOCKS, "ResourceBlock", "Resource blocks", blocks)
    zone = f"{paths.RESOURCE_ZONES}/all"
    tree[paths.RESOURCE_ZONES] = collection(paths.RESOURCE_ZONES, "Zone", "Resource zones", [zone])
    tree[zone] = resource(
        zone,
        "Every resource block",
        "Zone",
        ZoneType="ZoneOfResourceBlocks",
        Status=status(),
        Links={"ResourceBlocks": refs(blocks)},
    )
    for device in devices:
        _block(tree, device)


def _system(
    world: World,
    tree: dict[str, Resource],
    host: Element,
    ports: dict[str, list[Resource]],
) -> None:
    path = paths.system(host.external_id)
    links: dict[str, object] = {"ResourceBlocks": []}
    if host.get("power_feed_id") in world.by_id:
        links["PoweredBy"] = refs([paths.pdu(str(host.get("power_feed_id")))])
    links["Endpoints"] = refs([paths.endpoint(host.external_id)])
    if host.get("rack_id") in world.by_id:
        links["Chassis"] = refs([paths.chassis(host.external_id)])
    tree[path] = resource(
        path,
        str(host.get("name") or host.external_id),
        "ComputerSystem",
        SystemType="Physical",
        **common.made(host),
        PowerState="On",
        Status=status(host.fault),
        ProcessorSummary={"Count": 1, "CoreCount": int(host.get("cores", 0))},
        MemorySummary={"TotalSystemMemoryGiB": int(host.get("memory_gib", 0))},
        Composition={"UseCases": ["ExpandableSystem"]},
        Processors=ref(f"{path}/Processors"),
        Links=links,
    )
    cpu = f"{path}/Processors/{paths.CPU}"
    tree[f"{path}/Processors"] = collection(f"{path}/Processors", "Processor", "Processors", [cpu])
    attributes = host.get("attributes", {}) or {}
    tree[cpu] = resource(
        cpu,
        "CPU",
        "Processor",
        ProcessorType="CPU",
        Model=str(attributes.get("cpu", "")),
        TotalCores=int(host.get("cores", 0)),
        Status=status(),
        Ports=ref(f"{cpu}/Ports"),
    )
    owned = ports.get(host.external_id, [])
    tree[f"{cpu}/Ports"] = collection(
        f"{cpu}/Ports", "Port", "Ports", [p["@odata.id"] for p in owned]
    )
    for port in owned:
        tree[port["@odata.id"]] = port


def _composition(host: str | None) -> dict[str, object]:
    return {
        "CompositionState": "Composed" if host else "Unused",
        "Reserved": False,
        "SharingCapable": False,
        "MaxCompositions": 1,
        "NumberOfCompositions": 1 if host else 0,
    }


def compose(world: World, tree: dict[str, Resource]) -> None:
    """Show the whole-device bindings: each bound block in its host's
    `Links.ResourceBlocks`, the host in the block's `Links.ComputerSystems`. Replaces the
    resources it changes (never changes one in place: `tree` may share them)."""
    held: dict[str, list[str]] = {}
    for binding in world.bindings:
        device = world.by_id.get(binding.device_id)
        if binding.size_gib is not None or device is None or not _is_block(device):
            continue
        held.setdefault(binding.host_id, []).append(binding.device_id)
        path = paths.block(binding.device_id)
        block = {**tree[path], "CompositionStatus": _composition(binding.host_id)}
        block["Links"] = {
            **block["Links"],
            "ComputerSystems": refs([paths.system(binding.host_id)]),
        }
        tree[path] = block
    for host, devices in held.items():
        path = paths.system(host)
        if path in tree:
            system = dict(tree[path])
            system["Links"] = {
                **system["Links"],
                "ResourceBlocks": refs([paths.block(d) for d in sorted(devices)]),
            }
            tree[path] = system


def _is_block(element: Element) -> bool:
    # A device handed out in slices is a memory domain of its chassis, not a block.
    return element.kind == "device" and not is_sliced(str(element.get("kind")))


def _block(tree: dict[str, Resource], device: Element) -> None:
    kind = str(device.get("kind"))
    enclosure = str(device.get("enclosure_id"))
    block = paths.block(device.external_id)
    member = paths.device(device.external_id, kind, enclosure)
    name = str(device.get("name") or device.external_id)
    links: dict[str, object] = {
        "Chassis": refs([paths.chassis(enclosure)]),
        "ComputerSystems": [],
        "Zones": refs([f"{paths.RESOURCE_ZONES}/all"]),
    }
    tree[block] = resource(
        block,
        f"{name} block",
        "ResourceBlock",
        ResourceBlockType=[_BLOCK_TYPES.get(kind, "Expansion")],
        Status=status(device.fault),
        CompositionStatus=_composition(None),
        **{paths.DEVICE_MEMBER.get(kind, "Processors"): refs([member])},
        Links=links,
    )
    own_status = {"Status": status(device.fault)}
    endpoint = refs([paths.endpoint(device.external_id)])
    identity = common.made(device)
    if kind == "nvme":
        tree[member] = resource(
            member,
            name,
            "Drive",
            Protocol="NVMe",
            MediaType="SSD",
            CapacityBytes=int(device.get("capacity_gb", 0)) * 10**9,
            Revision=str(device.get("firmware")),
            PhysicalLocation=build.slot(device.get("slot"), "Bay"),
            **identity,
            **own_status,
            **sensors.links(member),
            Links={"Chassis": ref(paths.chassis(enclosure)), "Endpoints": endpoint},
        )
    elif kind == "nic":
        card = paths.adapter(enclosure, device.external_id)
        tree[member] = resource(
            member, name, "NetworkInterface", **own_status, Links={"NetworkAdapter": ref(card)}
        )
    else:
        tree[member] = resource(
            member,
            name,
            "Processor",
            ProcessorType="GPU",
            FirmwareVersion=str(device.get("firmware")),
            MemorySummary={"TotalMemorySizeMiB": int(device.get("memory_gib", 0)) * GIB_MIB},
            Location=build.slot(device.get("slot")),
            **identity,
            **own_status,
            **sensors.links(member, metrics=sensors.PROCESSOR),
            Links={"Chassis": ref(paths.chassis(enclosure)), "Endpoints": endpoint},
        )
