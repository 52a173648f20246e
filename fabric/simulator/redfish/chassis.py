"""Racks, enclosures (with their fabric adapter ports and CXL memory domains) and power
feeds (rack PDUs of PowerEquipment) as Redfish Chassis and PowerDistribution.

What powers an enclosure is said the current way: its PowerSubsystem's power supply is
plugged into an outlet of its feed's PDU (`Links.PowerOutlets`), not the deprecated
`Links.PoweredBy` of a chassis."""

from __future__ import annotations

from fabric.kinds import by_pcie_class, is_sliced
from fabric.redfish_render.build import Resource, collection, ref, refs, resource, slot
from fabric.simulator.redfish import paths, sensors
from fabric.simulator.redfish.common import height_mm, made, rack_placement, status
from fabric.simulator.redfish.world import Element, World

GIB_MIB = 1024


def render(world: World, tree: dict[str, Resource], ports: dict[str, list[Resource]]) -> None:
    """Add the chassis and power resources of `world` to `tree`; `ports` holds each
    enclosure's rendered ports (by enclosure id)."""
    racks = world.of("rack")
    enclosures = world.of("enclosure")
    mounted = racked(world)
    members = [paths.chassis(e.external_id) for e in [*racks, *enclosures, *mounted]]
    tree[paths.CHASSIS] = collection(paths.CHASSIS, "Chassis", "Chassis", members)
    for rack in racks:
        inside = [e for e in [*enclosures, *mounted] if e.get("rack_id") == rack.external_id]
        path = paths.chassis(rack.external_id)
        tree[path] = resource(
            path,
            str(rack.get("name") or rack.external_id),
            "Chassis",
            ChassisType="Rack",
            Status=status(rack.fault),
            HeightMm=height_mm(rack.get("height_u", 42)),
            Location={"Placement": {"Row": str(rack.get("location"))}},
            Links={"Contains": refs([paths.chassis(e.external_id) for e in inside])},
        )
    memory: dict[str, list[Element]] = {}
    nics: dict[str, list[Element]] = {}
    for device in world.of("device"):
        kind = str(device.get("kind"))
        # Memory handed out in slices is a memory domain; a NIC a network adapter's card.
        held = memory if is_sliced(kind) else nics if _is_card(kind) else None
        if held is not None:
            held.setdefault(str(device.get("enclosure_id")), []).append(device)
    for enclosure in enclosures:
        _enclosure(world, tree, enclosure, ports.get(enclosure.external_id, []), memory)
        _cards(tree, enclosure.external_id, nics.get(enclosure.external_id, []))
        if nics.get(enclosure.external_id):
            path = paths.chassis(enclosure.external_id)
            tree[path] = {**tree[path], "NetworkAdapters": ref(f"{path}/NetworkAdapters")}
    for element in mounted:
        _mounted(world, tree, element)
    _power(world, tree)


def racked(world: World) -> list[Element]:
    """Hosts and switches that sit in a rack: each gets a chassis of its own, contained by
    the rack's, which is how a Redfish service says where a system or a switch is."""
    return [e for e in [*world.of("host"), *world.of("switch")] if e.get("rack_id") in world.by_id]


def _mounted(world: World, tree: dict[str, Resource], element: Element) -> None:
    path = paths.chassis(element.external_id)
    holds = (
        {"ComputerSystems": refs([paths.system(element.external_id)])}
        if element.kind == "host"
        else {"Switches": refs([paths.switch(element.external_id)])}
    )
    tree[path] = resource(
        path,
        str(element.get("name") or element.external_id),
        "Chassis",
        ChassisType="RackMount",
        **made(element),
        **rack_placement(element, world.by_id.get(str(element.get("rack_id")))),
        Status=status(element.fault),
        Links={"ContainedBy": ref(paths.chassis(str(element.get("rack_id")))), **holds},
    )


def _enclosure(
    world: World,
    tree: dict[str, Resource],
    enclosure: Element,
    ports: list[Resource],
    memory: dict[str, list[Element]],
) -> None:
    path = paths.chassis(enclosure.external_id)
    links: dict[str, object] = {}
    if enclosure.get("rack_id") in world.by_id:
        links["ContainedBy"] = ref(paths.chassis(str(enclosure.get("rack_id"))))
    body: Resource = resource(
        path,
        str(enclosure.get("name") or enclosure.external_id),
        "Chassis",
        ChassisType="Enclosure",
        **made(enclosure),
        **rack_placement(enclosure, world.by_id.get(str(enclosure.get("rack_id")))),
        Status=status(enclosure.fault),
        FabricAdapters=ref(f"{path}/FabricAdapters"),
        **sensors.links(path),
        Links=links,
    )
    tree[path] = body
    if enclosure.get("power_feed_id") in world.by_id:
        body["PowerSubsystem"] = ref(f"{path}/PowerSubsystem")
        _supply(tree, path, outlet(str(enclosure.get("power_feed_id")), enclosure.external_id))
    adapter = f"{path}/FabricAdapters/{paths.ADAPTER}"
    tree[f"{path}/FabricAdapters"] = collection(
        f"{path}/FabricAdapters", "FabricAdapter", "Fabric adapters", [adapter]
    )
    tree[adapter] = resource(
        adapter,
        "CXL fabric adapter",
        "FabricAdapter",
        Status=status(),
        Ports=ref(f"{adapter}/Ports"),
    )
    tree[f"{adapter}/Ports"] = collection(
        f"{adapter}/Ports", "Port", "Ports", [p["@odata.id"] for p in ports]
    )
    for port in ports:
        tree[port["@odata.id"]] = port
    devices = memory.get(enclosure.external_id, [])
    if devices:
        body["MemoryDomains"] = ref(f"{path}/MemoryDomains")
        domains = [
            paths.device(d.external_id, str(d.get("kind")), enclosure.external_id) for d in devices
        ]
        tree[f"{path}/MemoryDomains"] = collection(
            f"{path}/MemoryDomains", "MemoryDomain", "Memory domains", domains
        )
        for device, domain_path in zip(devices, domains, strict=True):
            domain(world, tree, device, domain_path)
            _pcie(tree, enclosure.external_id, device, domain_path)
        tree[f"{path}/PCIeDevices"] = collection(
            f"{path}/PCIeDevices",
            "PCIeDevice",
            "PCIe devices",
            [paths.pcie_device(enclosure.external_id, d.external_id) for d in devices],
        )
        body["PCIeDevices"] = ref(f"{path}/PCIeDevices")


def function(enclosure: str, device: Element) -> str:
    """The PCIe function that serves a CXL memory device's domain."""
    return f"{paths.pcie_device(enclosure, device.external_id)}/PCIeFunctions/0"


def _cards(tree: dict[str, Resource], enclosure: str, nics: list[Element]) -> None:
    """Each NIC's card in its slot of the enclosure; the NIC's network interface (in its
    resource block) names it in `Links.NetworkAdapter`."""
    if not nics:
        return
    path = f"{paths.chassis(enclosure)}/NetworkAdapters"
    cards = [paths.adapter(enclosure, n.external_id) for n in nics]
    tree[path] = collection(path, "NetworkAdapter", "Network adapters", cards)
    for nic, card in zip(nics, cards, strict=True):
        tree[card] = resource(
            card,
            str(nic.get("name") or nic.external_id),
            "NetworkAdapter",
            **made(nic),
            Location=slot(nic.get("slot")),
            Status=status(nic.fault),
        )


def _pcie(tree: dict[str, Resource], enclosure: str, device: Element, domain_path: str) -> None:
    """A CXL memory device's PCIe device: its slot, and the function that serves the
    memory domain (a memory domain has no location of its own)."""
    path = paths.pcie_device(enclosure, device.external_id)
    serving = function(enclosure, device)
    tree[path] = resource(
        path,
        str(device.get("name") or device.external_id),
        "PCIeDevice",
        **made(device),
        Slot={"Location": slot(device.get("slot"))},
        Status=status(device.fault),
        PCIeFunctions=ref(f"{path}/PCIeFunctions"),
    )
    tree[f"{path}/PCIeFunctions"] = collection(
        f"{path}/PCIeFunctions", "PCIeFunction", "PCIe functions", [serving]
    )
    tree[serving] = resource(
        serving,
        "Memory function",
        "PCIeFunction",
        FunctionId=0,
        DeviceClass="MemoryController",
        Status=status(device.fault),
        Links={"PCIeDevice": ref(path), "MemoryDomains": refs([domain_path])},
    )


def domain(world: World, tree: dict[str, Resource], device: Element, path: str) -> None:
    """A CXL memory device as a memory domain whose chunks are carved in whole GiB (its
    chunks: the slices bound and carved in `world`)."""
    tree[path] = resource(
        path,
        str(device.get("name") or device.external_id),
        "MemoryDomain",
        Status=status(device.fault),
        MemorySizeMiB=int(device.get("memory_gib", 0)) * GIB_MIB,
        AllowsMemoryChunkCreation=True,
        MemoryChunkIncrementMiB=GIB_MIB,
        MinMemoryChunkSizeMiB=GIB_MIB,
        MemoryChunks=ref(paths.chunks(path)),
        Links={"PCIeFunctions": refs([function(str(device.get("enclosure_id")), device)])},
    )
    slices = [s for s in chunk_slices(world) if s[0] == device.external_id]
    members = [f"{paths.chunks(path)}/{paths.seg(chunk_id)}" for _d, chunk_id, _s, _b in slices]
    tree[paths.chunks(path)] = collection(
        paths.chunks(path), "MemoryChunks", "Memory chunks", members
    )
    target = paths.endpoint(device.external_id)
    for (_device, _chunk, size, bound), member in zip(slices, members, strict=True):
        tree[member] = resource(
            member,
            f"{size} GiB of {device.get('name') or device.external_id}",
            "MemoryChunks",
            MemoryChunkSizeMiB=size * GIB_MIB,
            AddressRangeType="Volatile",
            Status=status(device.fault) if bound else {"State": "StandbyOffline", "Health": "OK"},
            Links={"Endpoints": refs([target])},
        )


def outlet(feed: str, element: str) -> str:
    """The outlet of `feed`'s PDU that `element` is plugged into (named after it)."""
    return f"{paths.pdu(feed)}/Outlets/{paths.seg(element)}"


def _supply(tree: dict[str, Resource], chassis: str, plugged_into: str) -> None:
    subsystem = f"{chassis}/PowerSubsystem"
    supplies = f"{subsystem}/PowerSupplies"
    tree[subsystem] = resource(
        subsystem, "Power subsystem", "PowerSubsystem", Status=status(), PowerSupplies=ref(supplies)
    )
    tree[supplies] = collection(supplies, "PowerSupply", "Power supplies", [f"{supplies}/1"])
    tree[f"{supplies}/1"] = resource(
        f"{supplies}/1",
        "Power supply 1",
        "PowerSupply",
        Status=status(),
        Links={"PowerOutlets": refs([plugged_into])},
    )


def chunk_slices(world: World) -> list[tuple[str, str, int, bool]]:
    """Every memory chunk: (device, chunk id, GiB, connected). A connected chunk is a
    binding of the simulator (its id the binding's); a whole-device binding of a memory
    device shows as one chunk of all of it."""
    found = []
    for binding in world.bindings:
        device = world.by_id.get(binding.device_id)
        if device is None or not is_sliced(str(device.get("kind"))):
            continue
        size = binding.size_gib or int(device.get("memory_gib", 0))
        found.append((binding.device_id, binding.binding_id, size, True))
    for pending in world.pending:
        found.append((pending.device_id, pending.chunk_id, pending.size_gib, False))
    return found


def _power(world: World, tree: dict[str, Resource]) -> None:
    feeds = world.of("power_feed")
    equipment = f"{paths.V1}/PowerEquipment"
    tree[equipment] = resource(
        equipment,
        "Power equipment",
        "PowerEquipment",
        Status=status(),
        RackPDUs=ref(paths.PDUS),
    )
    tree[paths.PDUS] = collection(
        paths.PDUS, "PowerDistribution", "Rack PDUs", [paths.pdu(f.external_id) for f in feeds]
    )
    plugged: dict[str, list[str]] = {}
    for enclosure in world.of("enclosure"):
        plugged.setdefault(str(enclosure.get("power_feed_id")), []).append(enclosure.external_id)
    for feed in feeds:
        path = paths.pdu(feed.external_id)
        outlets = [outlet(feed.external_id, e) for e in plugged.get(feed.external_id, [])]
        tree[f"{path}/Outlets"] = collection(f"{path}/Outlets", "Outlet", "Outlets", outlets)
        for member in outlets:
            tree[member] = resource(
                member, f"Outlet {paths.last(member)}", "Outlet", Status=status()
            )
        links = {}
        if feed.get("rack_id") in world.by_id:
            links["Chassis"] = refs([paths.chassis(str(feed.get("rack_id")))])
        tree[path] = resource(
            path,
            str(feed.get("name") or feed.external_id),
            "PowerDistribution",
            EquipmentType="RackPDU",
            PowerCapacityVA=int(float(feed.get("capacity_kw", 0)) * 1000),
            Status=status(feed.fault),
            Outlets=ref(f"{path}/Outlets"),
            Links=links,
        )


def _is_card(kind: str) -> bool:
    """Shown as a network adapter's card: the kind a NetworkController is (a NIC)."""
    return by_pcie_class("NetworkController") == kind
