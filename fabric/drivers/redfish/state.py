"""What one discovery of a Redfish service knows: the walk's resources, the inventory they
map to, the index the binds look things up in, and how the service composes.

A State is built once per walk and never changed after (the driver's binds and the
process's cache of recent discoveries, fabric.drivers.redfish.known, share it between
threads).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fabric.drivers.base import Inventory
from fabric.drivers.redfish import mapping, topology
from fabric.drivers.redfish.mapping import Index, rid
from fabric.drivers.redfish.methods import Methods, methods_of
from fabric.drivers.redfish.reader import Reader
from fabric.drivers.redfish.walk import Snapshot, walk


@dataclass
class State:
    """One discovery: what was read, what it maps to, and how the service composes."""

    snapshot: Snapshot
    inventory: Inventory
    index: Index
    reach: topology.Reach
    methods: Methods
    initiators: dict[str, str]  # initiator endpoint -> host
    fabric_connections: dict[str, str]  # endpoint -> its fabric's Connections collection


def state_of(reader: Reader) -> State:
    """Walk the service through `reader` and map what it holds."""
    snap = walk(reader)
    index = Index()
    index.blocks = {rid(b): b for b in snap.blocks}
    racks, rack_of = mapping.racks_of(snap)
    feeds = mapping.feeds_of(snap, {r.external_id for r in racks})
    feed_ids = {f.external_id for f in feeds}
    hosts = mapping.hosts_of(snap, index, rack_of, feed_ids)
    chassis_ids = {rid(c) for c in snap.chassis if c.get("ChassisType") != "Rack"}
    devices = mapping.devices_of(snap, index, chassis_ids)
    enclosures = mapping.enclosures_of(snap, devices, rack_of, feed_ids)
    switches = topology.switches_of(snap, rack_of)
    ports = topology.ports_of(snap, index, chassis_ids)
    links = topology.links_of(snap, ports)
    reach = topology.reach_of(snap, index, ports)
    devices = [_with_reach(d, reach) for d in devices]
    hosts = [_with_reach(h, reach) for h in hosts]
    index.devices = {d.external_id: d for d in devices}
    inventory = Inventory(
        racks=tuple(racks),
        power_feeds=tuple(feeds),
        switches=tuple(switches),
        hosts=tuple(hosts),
        enclosures=tuple(enclosures),
        devices=tuple(devices),
        ports=tuple(ports),
        links=tuple(links),
    )
    state = State(
        snapshot=snap,
        inventory=inventory,
        index=index,
        reach=reach,
        methods=methods_of(snap, reader),
        initiators=_initiators(snap, reach),
        fabric_connections=dict(snap.endpoint_connections),
    )
    snap.requests = reader.requests  # methods_of may read capability objects
    return state


def _with_reach(info: Any, reach: topology.Reach) -> Any:
    element = info.external_id
    extra = {
        "endpoints": sorted(reach.element_endpoints.get(element, [])),
        "zones": sorted(reach.element_zones.get(element, [])),
    }
    if element in reach.reachable_from:
        extra["reachable_from"] = sorted(set(reach.reachable_from[element]))
    return replace(info, attributes={**info.attributes, **extra})


def _initiators(snap: Snapshot, reach: topology.Reach) -> dict[str, str]:
    """Endpoints whose entities are initiators, and the host each stands for."""
    hosts: dict[str, str] = {}
    for endpoint in snap.endpoints:
        roles = {str(e.get("EntityRole")) for e in endpoint.get("ConnectedEntities") or []}
        elements = reach.endpoints.get(rid(endpoint), [])
        if "Initiator" in roles and elements:
            hosts[rid(endpoint)] = elements[0]
    return hosts
