"""One walk of a Redfish service: every resource discovery needs, read by following links.

The walk starts at the service root and follows its `Chassis`, `Systems`, `Fabrics`,
`CompositionService` and `PowerEquipment` links down to devices, ports, endpoints, zones,
connections, resource blocks and memory chunks. It keeps the raw resources, grouped by what
they are and where they were found; `mapping` turns them into the driver's dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabric.drivers.redfish.reader import Reader, Resource, link, ref, refs

# What a PCIe function names as the device it serves.
_SERVED = ("Processor", "Drives", "MemoryDomains", "EthernetInterfaces", "NetworkDeviceFunctions")
# Where a device was found: the chassis (enclosure) or resource block that lists it.
Found = tuple[str, Resource]


@dataclass
class Snapshot:
    """The resources of one walk, by kind; ids are the service's `@odata.id`s."""

    root: Resource
    chassis: list[Resource] = field(default_factory=list)
    systems: list[Resource] = field(default_factory=list)
    fabrics: list[Resource] = field(default_factory=list)
    switches: list[tuple[str, Resource]] = field(default_factory=list)  # (fabric, switch)
    switch_ports: dict[str, list[Resource]] = field(default_factory=dict)
    owned_ports: dict[str, list[Resource]] = field(default_factory=dict)  # host/chassis
    endpoints: list[Resource] = field(default_factory=list)
    zones: list[Resource] = field(default_factory=list)
    connections: list[Resource] = field(default_factory=list)
    composition: Resource | None = None
    blocks: list[Resource] = field(default_factory=list)
    resource_zones: list[Resource] = field(default_factory=list)
    processors: list[Found] = field(default_factory=list)
    drives: list[Found] = field(default_factory=list)
    memory_domains: list[Found] = field(default_factory=list)
    chunks: dict[str, list[Resource]] = field(default_factory=dict)  # domain -> chunks
    network: list[Found] = field(default_factory=list)  # adapters and interfaces
    pcie_devices: list[Found] = field(default_factory=list)
    holders: dict[str, Resource] = field(default_factory=dict)  # device -> its card/adapter
    pdus: list[Resource] = field(default_factory=list)
    outlet_pdu: dict[str, str] = field(default_factory=dict)  # PDU outlet -> PDU
    supply_outlets: dict[str, list[str]] = field(default_factory=dict)  # chassis -> outlets
    system_processors: dict[str, list[str]] = field(default_factory=dict)  # system -> ids
    endpoint_connections: dict[str, str] = field(default_factory=dict)  # -> Connections
    systems_collection: Resource = field(default_factory=dict)
    requests: int = 0
    missing: list[str] = field(default_factory=list)


def walk(reader: Reader) -> Snapshot:
    """Read everything discovery maps, following only the links the service gives."""
    root = reader.session.root
    snap = Snapshot(root=root)
    _chassis(reader, snap)
    _systems(reader, snap)
    _fabrics(reader, snap)
    _linked_ports(reader, snap)
    _composition(reader, snap)
    _power(reader, snap)
    drop_absent(snap)
    snap.requests = reader.requests
    snap.missing = list(reader.missing)
    return snap


def _id(resource: Mapping[str, Any]) -> str:
    return str(resource.get("@odata.id") or "").rstrip("/")


def _devices_of(reader: Reader, snap: Snapshot, owner: str, resource: Resource) -> None:
    """The devices a chassis or a resource block lists, whichever shape it uses."""
    for processor in reader.property_members(resource, "Processors"):
        snap.processors.append((owner, processor))
    for drive in reader.property_members(resource, "Drives"):
        snap.drives.append((owner, drive))
    for drive in reader.many(link(resource, "Drives")):
        snap.drives.append((owner, drive))
    for storage in reader.property_members(resource, "Storage"):
        for drive in reader.property_members(storage, "Drives"):
            snap.drives.append((owner, drive))
    for name in ("NetworkAdapters", "EthernetInterfaces", "NetworkInterfaces"):
        for adapter in reader.property_members(resource, name):
            snap.network.append((owner, adapter))
            # An interface's slot is its adapter's (a NetworkInterface has no Location).
            for card in reader.many(link(adapter, "NetworkAdapter")):
                snap.holders.setdefault(_id(adapter), card)
    for domain in reader.property_members(resource, "MemoryDomains"):
        snap.memory_domains.append((owner, domain))
        snap.chunks[_id(domain)] = reader.property_members(domain, "MemoryChunks")
    for device in reader.property_members(resource, "PCIeDevices"):
        functions = reader.property_members(device, "PCIeFunctions")
        snap.pcie_devices.append((owner, {**device, "_functions": functions}))
        # What a function serves sits in the PCIe device's slot (a memory domain has none).
        for function in functions:
            for served in (n for name in _SERVED for n in link(function, name)):
                snap.holders.setdefault(served.rstrip("/"), device)


def _chassis(reader: Reader, snap: Snapshot) -> None:
    """Chassis of the collection, and those they link to (a rack is often only reachable
    through its contents' `Links.ContainedBy`)."""
    queue = reader.members(ref(snap.root.get("Chassis")))
    seen = {_id(c) for c in queue}
    while queue:
        chassis = queue.pop(0)
        snap.chassis.append(chassis)
        _devices_of(reader, snap, _id(chassis), chassis)
        subsystem = ref(chassis.get("PowerSubsystem"))
        power = reader.get(subsystem) if subsystem else None
        for supply in reader.members(ref((power or {}).get("PowerSupplies"))):
            # `PowerOutlets` (current schemas) or the deprecated single `Outlet`.
            for outlet in [*link(supply, "PowerOutlets"), *link(supply, "Outlet")]:
                # The outlet may be named by absolute URL (a PDU served elsewhere).
                path = outlet[outlet.find("/redfish/") :] if "/redfish/" in outlet else outlet
                snap.supply_outlets.setdefault(_id(chassis), []).append(path.rstrip("/"))
        for adapter in reader.property_members(chassis, "FabricAdapters"):
            ports = reader.property_members(adapter, "Ports")
            snap.owned_ports.setdefault(_id(chassis), []).extend(ports)
        linked = [*link(chassis, "ContainedBy"), *link(chassis, "Contains")]
        for other in reader.many(p for p in linked if p.rstrip("/") not in seen):
            seen.add(_id(other))
            queue.append(other)


def _systems(reader: Reader, snap: Snapshot) -> None:
    collection = ref(snap.root.get("Systems"))
    if not collection:
        return
    snap.systems = reader.members(collection)
    snap.systems_collection = reader.get(collection) or {}
    for system in snap.systems:
        processors = reader.property_members(system, "Processors")
        snap.system_processors[_id(system)] = [_id(p) for p in processors]
        for processor in processors:
            ports = reader.property_members(processor, "Ports")
            if ports:
                snap.owned_ports.setdefault(_id(system), []).extend(ports)


def _fabrics(reader: Reader, snap: Snapshot) -> None:
    for fabric in reader.members(ref(snap.root.get("Fabrics"))):
        snap.fabrics.append(fabric)
        for switch in reader.members(ref(fabric.get("Switches"))):
            snap.switches.append((_id(fabric), switch))
            snap.switch_ports[_id(switch)] = reader.members(ref(switch.get("Ports")))
        endpoints = reader.members(ref(fabric.get("Endpoints")))
        zones = reader.members(ref(fabric.get("Zones")))
        connections = reader.members(ref(fabric.get("Connections")))
        # Endpoints and connections that others name but their collections do not list.
        while True:
            known = {_id(r) for r in [*endpoints, *connections]}
            named = [
                e
                for r in [*zones, *connections, *endpoints, *(s for _f, s in snap.switches)]
                for name in ("Endpoints", "InitiatorEndpoints", "TargetEndpoints", "Connections")
                for e in link(r, name)
                if e.rstrip("/") not in known
            ]
            if not named:
                break
            for resource in reader.many(named):
                kind = str(resource.get("@odata.type") or "")
                (connections if kind.startswith("#Connection.") else endpoints).append(resource)
            if all(reader.cache.get(n.rstrip("/")) is None for n in named):
                break
        snap.endpoints.extend(endpoints)
        snap.zones.extend(zones)
        snap.connections.extend(connections)
        collection = ref(fabric.get("Connections"))
        if collection:
            snap.endpoint_connections.update((_id(e), collection) for e in endpoints)


def _linked_ports(reader: Reader, snap: Snapshot) -> None:
    """Switch ports that a cable's other end names but the switch's collection omits; the
    switch is the one whose Ports collection contains the port's id (OData containment)."""
    collections = {
        (ref(switch.get("Ports")) or "").rstrip("/"): _id(switch) for _f, switch in snap.switches
    }
    known = {
        _id(p) for ports in [*snap.switch_ports.values(), *snap.owned_ports.values()] for p in ports
    }
    named = [
        c
        for ports in [*snap.switch_ports.values(), *snap.owned_ports.values()]
        for p in ports
        for c in link(p, "ConnectedPorts")
    ]
    for port in reader.many(c for c in named if c.rstrip("/") not in known):
        parent = _id(port).rsplit("/", 1)[0]
        if parent in collections:
            snap.switch_ports[collections[parent]].append(port)


def _composition(reader: Reader, snap: Snapshot) -> None:
    path = ref(snap.root.get("CompositionService"))
    if not path:
        return
    service = reader.get(path)
    if service is None:
        return
    snap.composition = service
    snap.blocks = reader.members(ref(service.get("ResourceBlocks")))
    snap.resource_zones = reader.members(ref(service.get("ResourceZones")))
    for block in snap.blocks:
        types = set(block.get("ResourceBlockType") or [])
        if types & {"Compute", "ComputerSystem"}:
            continue  # a host's own CPUs, DIMMs and NICs are the host, not pool devices
        _devices_of(reader, snap, _id(block), block)


def _power(reader: Reader, snap: Snapshot) -> None:
    """Rack PDUs of `PowerEquipment`, where the service has them (optional)."""
    path = ref(snap.root.get("PowerEquipment"))
    equipment = reader.get(path) if path else None
    if not equipment:
        return
    for name in ("RackPDUs", "FloorPDUs"):
        snap.pdus.extend(reader.members(ref(equipment.get(name))))
    for pdu in snap.pdus:
        outlets = reader.get(ref(pdu.get("Outlets")) or "") if ref(pdu.get("Outlets")) else None
        for outlet in refs((outlets or {}).get("Members")):
            snap.outlet_pdu[outlet.rstrip("/")] = _id(pdu)


def absent(resource: Mapping[str, Any]) -> bool:
    """`Status.State` Absent: an empty slot or bay, not an element (nor a failed one)."""
    return (resource.get("Status") or {}).get("State") == "Absent"


def drop_absent(snap: Snapshot) -> None:
    """Leave out what the service lists as Absent, so that no part of the driver reports an
    empty slot as an element (critical or otherwise)."""
    for name in ("chassis", "systems", "blocks", "pdus"):
        setattr(snap, name, [r for r in getattr(snap, name) if not absent(r)])
    for name in ("switches", "processors", "drives", "memory_domains", "network", "pcie_devices"):
        setattr(snap, name, [(o, r) for o, r in getattr(snap, name) if not absent(r)])
    for ports in (snap.switch_ports, snap.owned_ports):
        for owner in list(ports):
            ports[owner] = [p for p in ports[owner] if not absent(p)]
