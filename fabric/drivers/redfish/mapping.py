"""A walk's Redfish resources as the driver's dataclasses: racks, feeds, enclosures, hosts,
devices (this module) and switches, ports, links, reachability (`topology`).

External ids are the service's `@odata.id`s, so that every reference is one the service
gave. A host is a ComputerSystem; where the system is composed around a compute resource
block, the block is its identity (the system is re-created by specific composition, the
block stays), and where a compute block is free the block is a host to compose on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabric.drivers.base import (
    DeviceInfo,
    EnclosureInfo,
    HealthValue,
    HostInfo,
    PowerFeedInfo,
    RackInfo,
)
from fabric.drivers.redfish.mounting import mounted_at, rack_height_u
from fabric.drivers.redfish.reader import link, ref, refs
from fabric.drivers.redfish.walk import Snapshot
from fabric.kinds import all_kinds, by_pcie_class, by_processor_type, measured

GIB_MIB = 1024
COMPUTE_TYPES = frozenset({"Compute", "ComputerSystem"})
_FAILED_STATES = frozenset({"UnavailableOffline"})
_HEALTH: dict[str, HealthValue] = {"OK": "ok", "Warning": "warning", "Critical": "critical"}


def rid(resource: Mapping[str, Any]) -> str:
    """A resource's id: its `@odata.id` without a trailing slash."""
    return str(resource.get("@odata.id") or "").rstrip("/")


def health_of(resource: Mapping[str, Any]) -> HealthValue:
    """The element's own `Status.Health` as ours (missing: unknown); an offline element is
    critical whatever its health says. Never `HealthRollup`: it already counts the children,
    which report their own health, and the console propagates a failure down to what sits
    behind it, so one bad drive would fail its whole chassis and rack. (Absent elements are
    not reported at all: walk.drop_absent.)"""
    status = resource.get("Status") or {}
    if status.get("State") in _FAILED_STATES:
        return "critical"
    return _HEALTH.get(str(status.get("Health")), "unknown")


def state_of(resource: Mapping[str, Any]) -> str:
    """`Status.State` in the service's words, lower-cased ("enabled", "absent"...)."""
    return str((resource.get("Status") or {}).get("State") or "").lower()


_SLOT_TYPES = frozenset({"Slot", "Bay", "Connector"})


def slot_of(resource: Mapping[str, Any], holder: Mapping[str, Any] | None = None) -> int:
    """The slot or bay a device sits in: `LocationOrdinalValue` of the `PartLocation` of its
    `Location` (a drive's `PhysicalLocation`, a PCIe device's `Slot.Location`), else of the
    resource that holds it (`holder`: the adapter of a network interface, the PCIe device
    of a memory domain). 0 where the service does not say, or says a location of another
    type (a socket, an embedded part)."""
    for source in (resource, holder or {}):
        for location in (
            source.get("Location"),
            source.get("PhysicalLocation"),
            (source.get("Slot") or {}).get("Location"),
        ):
            part = (location or {}).get("PartLocation") if isinstance(location, dict) else None
            if not isinstance(part, dict) or part.get("LocationOrdinalValue") is None:
                continue
            if part.get("LocationType") not in (None, *_SLOT_TYPES):
                continue
            try:
                return int(part["LocationOrdinalValue"])
            except (TypeError, ValueError):
                continue
    return 0


def _text(resource: Mapping[str, Any], name: str) -> str:
    value = resource.get(name)
    return str(value) if value is not None else ""


@dataclass
class Index:
    """What composition needs to know about the inventory it was mapped from."""

    device_block: dict[str, str] = field(default_factory=dict)  # device -> resource block
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    host_system: dict[str, str] = field(default_factory=dict)  # host -> its current system
    host_anchor: dict[str, str] = field(default_factory=dict)  # host -> its compute block
    system_host: dict[str, str] = field(default_factory=dict)
    systems: dict[str, dict[str, Any]] = field(default_factory=dict)
    devices: dict[str, DeviceInfo] = field(default_factory=dict)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)  # CXL memory devices
    chunks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def racks_of(snap: Snapshot) -> tuple[list[RackInfo], dict[str, str]]:
    """Racks (ChassisType Rack) and the rack of every chassis inside one (ContainedBy)."""
    by_id = {rid(c): c for c in snap.chassis}
    racks = [c for c in snap.chassis if c.get("ChassisType") == "Rack"]
    rack_of: dict[str, str] = {}
    for chassis_id in by_id:
        seen: set[str] = set()
        current: str | None = chassis_id
        while current and current not in seen and current in by_id:
            seen.add(current)
            parent = ref((by_id[current].get("Links") or {}).get("ContainedBy"))
            parent = parent.rstrip("/") if parent else None
            if parent in by_id and by_id[parent].get("ChassisType") == "Rack":
                rack_of[chassis_id] = parent
                break
            current = parent
    infos = [
        RackInfo(
            external_id=rid(r),
            name=_text(r, "Name") or rid(r),
            location=str(((r.get("Location") or {}).get("Placement") or {}).get("Row") or ""),
            height_u=rack_height_u(r),
            health=health_of(r),
            attributes={"state": state_of(r)},
        )
        for r in racks
    ]
    return infos, rack_of


def feeds_of(snap: Snapshot, rack_ids: set[str]) -> list[PowerFeedInfo]:
    """Power feeds from the service's PDUs (PowerEquipment), where it has them."""
    feeds = []
    for pdu in snap.pdus:
        rack = next(
            (c.rstrip("/") for c in link(pdu, "Chassis") if c.rstrip("/") in rack_ids), None
        )
        feeds.append(
            PowerFeedInfo(
                external_id=rid(pdu),
                name=_text(pdu, "Name") or rid(pdu),
                rack_id=rack,
                capacity_kw=float(pdu.get("PowerCapacityVA") or 0) / 1000,
                health=health_of(pdu),
                attributes={"state": state_of(pdu)},
            )
        )
    return feeds


def _fed_by(
    resource: Mapping[str, Any], feed_ids: set[str], snap: Snapshot | None = None
) -> str | None:
    """The PDU that powers a chassis or system: `Links.PoweredBy`, else the PDU whose outlet
    one of its power supplies (`PowerSubsystem`) is plugged into."""
    powered_by = [p.rstrip("/") for p in link(resource, "PoweredBy") if p.rstrip("/") in feed_ids]
    if powered_by or snap is None:
        return powered_by[0] if powered_by else None
    chassis = [rid(resource), *(c.rstrip("/") for c in link(resource, "Chassis"))]
    for outlet in (o for c in chassis for o in snap.supply_outlets.get(c, [])):
        if snap.outlet_pdu.get(outlet) in feed_ids:
            return snap.outlet_pdu[outlet]
    return None


def devices_of(snap: Snapshot, index: Index, chassis_ids: set[str]) -> list[DeviceInfo]:
    """Poolable devices: GPUs/accelerators/FPGAs, NVMe drives, NICs, CXL memory domains
    (partitionable when the domain allows memory chunks) and other PCIe devices."""
    block_ids = {rid(b) for b in snap.blocks}
    found: dict[str, DeviceInfo] = {}

    def enclosure(owner: str, resource: Mapping[str, Any]) -> str | None:
        for candidate in refs((resource.get("Links") or {}).get("Chassis")):
            if candidate.rstrip("/") in chassis_ids:
                return candidate.rstrip("/")
        if owner in chassis_ids:
            return owner
        block = index.blocks.get(owner)
        if block:
            return next(
                (c.rstrip("/") for c in link(block, "Chassis") if c.rstrip("/") in chassis_ids),
                None,
            )
        return None

    def add(owner: str, resource: Mapping[str, Any], kind: str, **extra: Any) -> None:
        device_id = rid(resource)
        if not device_id or device_id in found:
            return
        if owner in block_ids:
            index.device_block[device_id] = owner
        attributes = {"state": state_of(resource), **extra.pop("attributes", {})}
        if owner in block_ids:
            attributes["resource_block"] = owner
        found[device_id] = DeviceInfo(
            external_id=device_id,
            name=_text(resource, "Name") or device_id,
            kind=kind,
            vendor=_text(resource, "Manufacturer"),
            model=_text(resource, "Model"),
            serial=_text(resource, "SerialNumber"),
            firmware=_text(resource, "FirmwareVersion"),
            enclosure_id=enclosure(owner, resource),
            slot=slot_of(resource, snap.holders.get(device_id)),
            health=health_of(resource),
            attributes=attributes,
            **extra,
        )

    for owner, processor in snap.processors:
        kind = by_processor_type(str(processor.get("ProcessorType")))
        if kind:
            memory_mib = (processor.get("MemorySummary") or {}).get("TotalMemorySizeMiB") or 0
            add(owner, processor, kind, memory_gib=int(memory_mib) // GIB_MIB)
    for owner, drive in snap.drives:
        if drive.get("Protocol") == "NVMe":
            add(owner, drive, "nvme", capacity_gb=int(drive.get("CapacityBytes") or 0) // 10**9)
    # An adapter that a network interface names is that interface's card, not another NIC.
    cards = {a.rstrip("/") for _o, r in snap.network for a in link(r, "NetworkAdapter")}
    for owner, adapter in snap.network:
        if rid(adapter) not in cards:
            add(owner, adapter, "nic")
    for owner, domain in snap.memory_domains:
        chunks = snap.chunks.get(rid(domain), [])
        size_mib = int(domain.get("MemorySizeMiB") or 0) or sum(
            int(c.get("MemoryChunkSizeMiB") or 0) for c in chunks
        )
        index.domains[rid(domain)] = domain
        index.chunks[rid(domain)] = chunks
        add(
            owner,
            domain,
            measured("gib").name,  # a memory domain is memory handed out in GiB: CXL memory
            memory_gib=size_mib // GIB_MIB,
            attributes={
                "partitionable": bool(domain.get("AllowsMemoryChunkCreation")),
                "chunk_increment_mib": int(domain.get("MemoryChunkIncrementMiB") or 0),
                "chunk_min_mib": int(domain.get("MinMemoryChunkSizeMiB") or 0),
            },
        )
    kinds_by_enclosure: dict[str | None, set[str]] = {}
    for device in found.values():
        kinds_by_enclosure.setdefault(device.enclosure_id, set()).add(device.kind)
    for owner, pcie in snap.pcie_devices:
        if pcie.get("CXLDevice"):
            continue  # a CXL device is reported as its memory or its processor
        classes = [str(f.get("DeviceClass")) for f in pcie.get("_functions") or []]
        kind = next((k for c in classes if (k := by_pcie_class(c))), None)
        # The same device may be listed as a processor, drive or adapter of its chassis.
        if kind and kind not in kinds_by_enclosure.get(enclosure(owner, pcie), set()):
            add(owner, {k: v for k, v in pcie.items() if k != "_functions"}, kind)
    index.devices = found
    return list(found.values())


def hosts_of(
    snap: Snapshot, index: Index, rack_of: Mapping[str, str], feed_ids: set[str]
) -> list[HostInfo]:
    """Systems as hosts, named by their compute block where they are composed around one,
    and free compute blocks (hosts that composition can build a system on)."""
    compute = {
        rid(b): b for b in snap.blocks if set(b.get("ResourceBlockType") or []) & COMPUTE_TYPES
    }
    index.blocks = {rid(b): b for b in snap.blocks}
    by_id = {rid(c): c for c in snap.chassis}
    hosts: dict[str, HostInfo] = {}
    for system in snap.systems:
        system_id = rid(system)
        anchors = [
            b.rstrip("/") for b in link(system, "ResourceBlocks") if b.rstrip("/") in compute
        ]
        host_id = anchors[0] if anchors else system_id
        index.systems[system_id] = system
        index.system_host[system_id] = host_id
        index.host_system[host_id] = system_id
        if anchors:
            index.host_anchor[host_id] = anchors[0]
        chassis = [c.rstrip("/") for c in link(system, "Chassis")]
        racked = next((c for c in chassis if c in rack_of), None)
        hosts[host_id] = HostInfo(
            external_id=host_id,
            name=_text(system, "Name") or system_id,
            vendor=_text(system, "Manufacturer"),
            model=_text(system, "Model"),
            serial=_text(system, "SerialNumber"),
            cores=int((system.get("ProcessorSummary") or {}).get("CoreCount") or 0),
            memory_gib=int((system.get("MemorySummary") or {}).get("TotalSystemMemoryGiB") or 0),
            rack_id=rack_of[racked] if racked else None,
            # Where it sits: the place of the chassis the system names inside its rack.
            **mounted_at(by_id.get(racked or "")),
            power_feed_id=_fed_by(system, feed_ids, snap),
            # A composed system may carry no Status; its compute block then speaks for it.
            health=health_of(
                system if system.get("Status") or not anchors else compute[anchors[0]]
            ),
            attributes={
                "state": state_of(system),
                "system": system_id,
                "system_type": _text(system, "SystemType"),
            },
        )
    for block_id, block in compute.items():
        if block_id in hosts:
            continue
        hosts[block_id] = HostInfo(
            external_id=block_id,
            name=_text(block, "Name") or block_id,
            health=health_of(block),
            attributes={"state": state_of(block), "system": "", "resource_block": block_id},
        )
        index.host_anchor[block_id] = block_id
    return list(hosts.values())


def _only_houses(chassis: Mapping[str, Any]) -> bool:
    """A chassis that holds a server or a switch and nothing else (no chassis inside, no
    resource blocks): the box that system or switch is, not an enclosure of devices."""
    houses = link(chassis, "ComputerSystems") or link(chassis, "Switches")
    return (
        bool(houses)
        and not link(chassis, "Contains")
        and not link(chassis, "ResourceBlocks")
        and not chassis.get("FabricAdapters")
    )


def enclosures_of(
    snap: Snapshot, devices: list[DeviceInfo], rack_of: Mapping[str, str], feed_ids: set[str]
) -> list[EnclosureInfo]:
    """Every chassis that is not a rack, its kind read from the devices it holds."""
    kinds: dict[str, set[str]] = {}
    for device in devices:
        if device.enclosure_id:
            kinds.setdefault(device.enclosure_id, set()).add(device.kind)
    enclosures = []
    for chassis in snap.chassis:
        if chassis.get("ChassisType") == "Rack":
            continue
        held = kinds.get(rid(chassis), set())
        if not held and _only_houses(chassis):
            continue  # a server's or a switch's own chassis: it says where they sit

        # The first declared kind the chassis holds names it (GPUs before memory, drives...).
        kind = next((k.enclosure for k in all_kinds() if k.name in held), "io_chassis")
        enclosures.append(
            EnclosureInfo(
                external_id=rid(chassis),
                name=_text(chassis, "Name") or rid(chassis),
                kind=kind,
                vendor=_text(chassis, "Manufacturer"),
                model=_text(chassis, "Model"),
                serial=_text(chassis, "SerialNumber"),
                slots=sum(1 for d in devices if d.enclosure_id == rid(chassis)),
                rack_id=rack_of.get(rid(chassis)),
                **mounted_at(chassis if rid(chassis) in rack_of else None),
                power_feed_id=_fed_by(chassis, feed_ids, snap),
                health=health_of(chassis),
                attributes={
                    "state": state_of(chassis),
                    "chassis_type": _text(chassis, "ChassisType"),
                },
            )
        )
    return enclosures
