"""ResourceZones: the blocks that can be composed together, from the fabric's reachability.

A host reaches a device when one of the host's uplinks and one of the device's enclosure's
uplinks land on switches joined by working links (`fabric.topology.reach`). So each set of
switches joined that way is one zone, holding the hosts and the enclosures' devices cabled
to it (a host cabled straight to an enclosure makes a zone of its own): any device of a
zone can be composed onto any host of the same zone. A host or enclosure with uplinks
into two such sets is in both zones.

Zone ids (`inventory.zone_id`): the lowest database id of the zone's switches, stable
while that switch stays in it; "link-<id>" for a host cabled straight to an enclosure.
A zone lists only the blocks the caller sees; a tenant sees only zones with one at least.
"""

from __future__ import annotations

from typing import Any

from composer.redfish.blocks import node_path
from composer.redfish.caller import Call
from composer.redfish.inventory import Inventory, inventory
from composer.redfish.paths import RESOURCE_ZONES
from composer.redfish.routes import Route
from fabric.redfish_render.build import collection, health_status, refs, resource
from fabric.redfish_render.errors import refuse


def zone_blocks(inv: Inventory, zone: str) -> list[str]:
    """The @odata.id of each block of `zone` the caller sees: hosts, then devices."""
    ends = inv.zones().get(zone, [])
    nodes = [inv.graph.nodes[e] for e in ends if e.startswith("host:")]
    for end in ends:
        if end.startswith("enclosure:"):
            nodes += [inv.graph.nodes[d] for d in inv.graph.devices_in(end)]
    return [node_path(n) for n in nodes if inv.visible(n)]


def _visible_zones(inv: Inventory) -> list[str]:
    return [z for z in inv.zones() if inv.caller.operator or zone_blocks(inv, z)]


def zone_paths(call: Call) -> list[str]:
    """The zones the caller sees, for links (the Systems collection's capabilities)."""
    return [f"{RESOURCE_ZONES}/{z}" for z in _visible_zones(inventory(call))]


def zone_list(call: Call) -> dict[str, Any]:
    return collection(RESOURCE_ZONES, "Zone", "Resource zones", zone_paths(call))


def zone_get(call: Call) -> dict[str, Any]:
    inv = inventory(call)
    key = call.params["zone"]
    if key not in _visible_zones(inv):
        raise refuse(
            404, f"There is no resource zone {call.path}.", "Base.ResourceNotFound", "Zone", key
        )
    return resource(
        f"{RESOURCE_ZONES}/{key}",
        f"Resource zone {key}",
        "Zone",
        Description="Blocks that reach each other across the fabric: any device here can "
        "be composed onto any host here.",
        ZoneType="ZoneOfResourceBlocks",
        Status=health_status(),
        Links={"ResourceBlocks": refs(zone_blocks(inv, key))},
    )


ROUTES = [
    Route(RESOURCE_ZONES, get=zone_list),
    Route(f"{RESOURCE_ZONES}/{{zone}}", get=zone_get),
]
