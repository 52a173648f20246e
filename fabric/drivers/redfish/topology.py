"""Fabrics as the driver's switches, ports and links, and what endpoints, zones and
connections say about which host reaches which device.

Links come from `Port.Links.ConnectedPorts`, reported once per pair of ports that discovery
found. Redfish gives no link latency: a link reports 0 with `latency_reported: False` in
its attributes, so that the console knows to estimate rather than trust it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabric.drivers.base import HealthValue, LinkInfo, PortInfo, SwitchInfo
from fabric.drivers.redfish.mapping import Index, health_of, rid, state_of
from fabric.drivers.redfish.mounting import mounted_at
from fabric.drivers.redfish.reader import link, refs
from fabric.drivers.redfish.walk import Snapshot

_ROLES = {"UpstreamPort": "host", "DownstreamPort": "downstream", "InterswitchPort": "fabric"}
_LINK_STATES = {"LinkUp": "up", "LinkDown": "down", "NoLink": "down"}
_WORST_FIRST: tuple[HealthValue, ...] = ("critical", "warning", "ok")


def switches_of(snap: Snapshot, rack_of: Mapping[str, str]) -> list[SwitchInfo]:
    """Each switch of each fabric; its rack is the rack of a chassis that lists it (or that
    the switch names in `Links.Chassis`)."""
    in_chassis = {s.rstrip("/"): rid(c) for c in snap.chassis for s in link(c, "Switches")}
    by_id = {rid(c): c for c in snap.chassis}
    switches = []
    for fabric_id, switch in snap.switches:
        switch_id = rid(switch)
        own = [c.rstrip("/") for c in link(switch, "Chassis") if c.rstrip("/") in rack_of]
        if own:
            in_chassis.setdefault(switch_id, own[0])
        protocol = str(switch.get("SwitchType") or "").lower() or "pcie"
        switches.append(
            SwitchInfo(
                external_id=switch_id,
                name=str(switch.get("Name") or switch_id),
                protocol=protocol,
                vendor=str(switch.get("Manufacturer") or ""),
                model=str(switch.get("Model") or ""),
                serial=str(switch.get("SerialNumber") or ""),
                firmware=str(switch.get("FirmwareVersion") or ""),
                rack_id=rack_of.get(in_chassis.get(switch_id, "")),
                # Where it sits: the place of its chassis, when that is in a rack.
                **mounted_at(
                    by_id.get(in_chassis.get(switch_id, ""))
                    if in_chassis.get(switch_id, "") in rack_of
                    else None
                ),
                health=health_of(switch),
                attributes={"state": state_of(switch), "fabric": fabric_id},
            )
        )
    return switches


def _port(port: Mapping[str, Any], owner_kind: str, owner: str, role: str, n: int) -> PortInfo:
    lanes = int(port.get("ActiveWidth") or port.get("Width") or 16)
    speed_gbps = float(port.get("CurrentSpeedGbps") or 0)
    number = str(port.get("PortId") or "")
    return PortInfo(
        external_id=rid(port),
        name=str(port.get("Name") or port.get("Id") or rid(port)),
        owner_kind=owner_kind,  # type: ignore[arg-type]
        owner_id=owner,
        role=role,
        number=int(number) if number.isdigit() else n,
        lanes=lanes,
        speed_gts=round(speed_gbps / lanes, 2) if speed_gbps and lanes else 32.0,
        health=health_of(port),
        attributes={
            "state": state_of(port),
            "protocol": str(port.get("PortProtocol") or ""),
            "link_status": str(port.get("LinkStatus") or ""),
        },
    )


def ports_of(snap: Snapshot, index: Index, enclosure_ids: set[str]) -> list[PortInfo]:
    """Switch ports, and the ports of hosts (CPU ports) and enclosures (fabric adapters)."""
    ports: dict[str, PortInfo] = {}
    for switch_id, members in snap.switch_ports.items():
        for n, port in enumerate(members, start=1):
            role = _ROLES.get(str(port.get("PortType")), "downstream")
            ports.setdefault(rid(port), _port(port, "switch", switch_id, role, n))
    for owner, members in snap.owned_ports.items():
        host = index.system_host.get(owner)
        if host is not None:
            kind, owner_id = "host", host
        elif owner in enclosure_ids:
            kind, owner_id = "enclosure", owner
        else:
            continue
        for n, port in enumerate(members, start=1):
            ports.setdefault(rid(port), _port(port, kind, owner_id, "uplink", n))
    return list(ports.values())


def _link_id(a: str, b: str) -> str:
    joined = f"{a}~{b}"
    if len(joined) <= 200:
        return joined
    return "link-" + hashlib.sha256(joined.encode()).hexdigest()[:32]


def links_of(snap: Snapshot, ports: list[PortInfo]) -> list[LinkInfo]:
    """One link per pair of reported ports that name each other (or one names the other)."""
    known = {p.external_id for p in ports}
    raw = {rid(p): p for members in snap.switch_ports.values() for p in members}
    raw.update({rid(p): p for members in snap.owned_ports.values() for p in members})
    links: dict[tuple[str, str], LinkInfo] = {}
    for port_id, port in raw.items():
        if port_id not in known:
            continue
        for named in link(port, "ConnectedPorts"):
            other = named.rstrip("/")
            if other not in known or other == port_id:
                continue
            a, b = sorted((port_id, other))
            if (a, b) in links:
                continue
            ends = [raw[e] for e in (a, b) if e in raw]
            statuses = {str(e.get("LinkStatus") or "") for e in ends}
            state = "up"
            for status in statuses:
                state = _LINK_STATES.get(status, state) if state != "down" else state
            healths = {health_of(e) for e in ends}
            health: HealthValue = next((h for h in _WORST_FIRST if h in healths), "unknown")
            if state == "up" and health == "warning":
                state = "degraded"
            slowest = min((float(e.get("CurrentSpeedGbps") or 0) for e in ends), default=0.0)
            links[(a, b)] = LinkInfo(
                external_id=_link_id(a, b),
                a_port_id=a,
                b_port_id=b,
                latency_ns=0,
                bandwidth_gbps=slowest / 8,
                state=state,
                health="critical" if state == "down" else health,
                attributes={"latency_reported": False},
            )
    return list(links.values())


@dataclass
class Reach:
    """Endpoints, zones and connections resolved to the hosts and devices they name."""

    endpoints: dict[str, list[str]] = field(default_factory=dict)  # endpoint -> elements
    zones: dict[str, list[str]] = field(default_factory=dict)  # zone -> elements
    element_endpoints: dict[str, list[str]] = field(default_factory=dict)
    element_zones: dict[str, list[str]] = field(default_factory=dict)
    reachable_from: dict[str, list[str]] = field(default_factory=dict)  # device -> hosts


def reach_of(snap: Snapshot, index: Index, ports: list[PortInfo]) -> Reach:
    """Which host and device each endpoint stands for; which zone holds them; which
    connection lets a host reach a device. Resolved through ids the service gave: an
    entity that is a device or a host's processor, a device or memory chunk that lists the
    endpoint, or the owner of a port the endpoint names."""
    reach = Reach()
    owner_of_port = {p.external_id: p.owner_id for p in ports if p.owner_kind != "switch"}
    names: dict[str, set[str]] = {}  # endpoint -> elements
    processor_host = {
        proc: index.system_host[system_id]
        for system_id, procs in snap.system_processors.items()
        if system_id in index.system_host
        for proc in procs
    }
    for _owner, resource in [*snap.processors, *snap.drives, *snap.network]:
        if rid(resource) in index.devices:
            for listed in link(resource, "Endpoints"):
                names.setdefault(listed.rstrip("/"), set()).add(rid(resource))
    for domain_id, chunks in index.chunks.items():
        for chunk_resource in chunks:
            for listed in link(chunk_resource, "Endpoints"):
                names.setdefault(listed.rstrip("/"), set()).add(domain_id)
    chunk_domain = {rid(c): d for d, chunks in index.chunks.items() for c in chunks}
    for endpoint in snap.endpoints:
        endpoint_id = rid(endpoint)
        found = names.setdefault(endpoint_id, set())
        for entity in endpoint.get("ConnectedEntities") or []:
            for linked in refs(entity.get("EntityLink")):
                target = linked.rstrip("/")
                element = (
                    target
                    if target in index.devices or target in index.host_system
                    else processor_host.get(target)
                    or chunk_domain.get(target)
                    or index.system_host.get(target)
                )
                if element:
                    found.add(element)
        if not found:
            found.update(
                owner_of_port[p.rstrip("/")]
                for p in link(endpoint, "Ports")
                if p.rstrip("/") in owner_of_port
            )
        reach.endpoints[endpoint_id] = sorted(found)
    for endpoint_id, elements in reach.endpoints.items():
        for element in elements:
            reach.element_endpoints.setdefault(element, []).append(endpoint_id)
    for zone in [*snap.zones, *snap.resource_zones]:
        members = [e.rstrip("/") for e in link(zone, "Endpoints")]
        in_zone = {el for e in members for el in reach.endpoints.get(e, [])}
        for linked_block in link(zone, "ResourceBlocks"):
            block = linked_block.rstrip("/")
            in_zone.update(d for d, b in index.device_block.items() if b == block)
            if block in index.host_anchor:
                in_zone.add(block)
        reach.zones[rid(zone)] = sorted(in_zone)
        for element in in_zone:
            reach.element_zones.setdefault(element, []).append(rid(zone))
    for connection in snap.connections:
        hosts = {
            h
            for e in link(connection, "InitiatorEndpoints")
            for h in reach.endpoints.get(e.rstrip("/"), [])
        }
        targets = {
            d
            for e in link(connection, "TargetEndpoints")
            for d in reach.endpoints.get(e.rstrip("/"), [])
        }
        for info in connection.get("MemoryChunkInfo") or []:
            for chunk_id in refs(info.get("MemoryChunk")):
                if chunk_id.rstrip("/") in chunk_domain:
                    targets.add(chunk_domain[chunk_id.rstrip("/")])
        for device in targets:
            reach.reachable_from.setdefault(device, [])
            reach.reachable_from[device].extend(sorted(hosts - {device}))
    return reach
