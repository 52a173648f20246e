"""Where each element of the simulated world lives in the Redfish tree, both ways.

One place for the URI scheme, so that rendering, writes and tests agree: an element's
Redfish id is built from its simulated external id (quoted as one path segment), and a
path the driver sends back is turned into the simulated id again.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from fabric.kinds import all_kinds, is_sliced
from fabric.redfish_render.build import V1 as V1

SYSTEMS = f"{V1}/Systems"
CHASSIS = f"{V1}/Chassis"
FABRIC = f"{V1}/Fabrics/CXL"
SWITCHES = f"{FABRIC}/Switches"
ENDPOINTS = f"{FABRIC}/Endpoints"
ZONES = f"{FABRIC}/Zones"
CONNECTIONS = f"{FABRIC}/Connections"
COMPOSITION = f"{V1}/CompositionService"
BLOCKS = f"{COMPOSITION}/ResourceBlocks"
RESOURCE_ZONES = f"{COMPOSITION}/ResourceZones"
PDUS = f"{V1}/PowerEquipment/RackPDUs"
SESSIONS = f"{V1}/SessionService/Sessions"
# Each enclosure's ports hang off one fabric adapter; each host's off its one CPU.
ADAPTER = "1"
CPU = "CPU"
# The Redfish members that stand for a device, by the simulated device kind (its block's
# property, as `fabric.kinds` declares it).
DEVICE_MEMBER = {k.name: k.redfish.collection for k in all_kinds() if not k.sliced}


def seg(external_id: str) -> str:
    """An external id as one path segment (`$` kept: `$metadata` is one)."""
    return quote(external_id, safe="$")


def unseg(segment: str) -> str:
    return unquote(segment)


def system(host: str) -> str:
    return f"{SYSTEMS}/{seg(host)}"


def chassis(element: str) -> str:
    """A rack's or an enclosure's chassis."""
    return f"{CHASSIS}/{seg(element)}"


def pdu(feed: str) -> str:
    return f"{PDUS}/{seg(feed)}"


def switch(element: str) -> str:
    return f"{SWITCHES}/{seg(element)}"


def block(device: str) -> str:
    return f"{BLOCKS}/{seg(device)}"


def device(device_id: str, kind: str, enclosure: str) -> str:
    """The resource that is the device: a processor, drive or network interface of its
    resource block, or the memory domain of its enclosure (CXL memory)."""
    if is_sliced(kind):
        return f"{chassis(enclosure)}/MemoryDomains/{seg(device_id)}"
    member = DEVICE_MEMBER.get(kind, "Processors")
    return f"{block(device_id)}/{member}/{seg(device_id)}"


def adapter(enclosure: str, device_id: str) -> str:
    """The card of a NIC in its enclosure (where its slot is said)."""
    return f"{chassis(enclosure)}/NetworkAdapters/{seg(device_id)}"


def pcie_device(enclosure: str, device_id: str) -> str:
    """The PCIe device of a CXL memory device in its enclosure (where its slot is said)."""
    return f"{chassis(enclosure)}/PCIeDevices/{seg(device_id)}"


def chunks(domain_path: str) -> str:
    return f"{domain_path}/MemoryChunks"


def port(owner_kind: str, owner: str, name: str) -> str:
    """A switch's, host's (its CPU's) or enclosure's (its fabric adapter's) port."""
    if owner_kind == "switch":
        return f"{switch(owner)}/Ports/{seg(name)}"
    if owner_kind == "host":
        return f"{system(owner)}/Processors/{CPU}/Ports/{seg(name)}"
    return f"{chassis(owner)}/FabricAdapters/{ADAPTER}/Ports/{seg(name)}"


def endpoint(element: str) -> str:
    """The fabric endpoint of a host (initiator) or a device (target)."""
    return f"{ENDPOINTS}/{seg(element)}"


def connection(binding_id: str) -> str:
    return f"{CONNECTIONS}/{seg(binding_id)}"


def last(path: str) -> str:
    """The simulated id in the last segment of `path`."""
    return unseg(path.rstrip("/").rsplit("/", 1)[-1])


def under(path: str, collection: str) -> str | None:
    """The simulated id of a direct member of `collection`, or None."""
    prefix = collection.rstrip("/") + "/"
    rest = path.rstrip("/")
    if not rest.startswith(prefix) or "/" in rest[len(prefix) :]:
        return None
    return unseg(rest[len(prefix) :])


def element_id(path: str) -> str:
    """The simulated external id of the element a Redfish path stands for: a port is
    "<owner>/<name>" (as the simulator names it), anything else its last segment."""
    parts = path.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2] == "Ports":
        for anchor in ("Switches", "Systems", "Chassis"):
            if anchor in parts:
                return f"{unseg(parts[parts.index(anchor) + 1])}/{unseg(parts[-1])}"
    return unseg(parts[-1])
