"""The CXL fabric: switches and every port (cabling in `Links.ConnectedPorts`), the
endpoints of hosts (initiators) and devices (targets), one zone of them all, and a
Connection per memory slice that a host holds."""

from __future__ import annotations

from fabric.kinds import all_kinds
from fabric.redfish_render.build import Resource, collection, ref, refs, resource
from fabric.simulator.redfish import paths, sensors
from fabric.simulator.redfish.chassis import chunk_slices
from fabric.simulator.redfish.common import status
from fabric.simulator.redfish.sensors import port_path
from fabric.simulator.redfish.world import Element, World

_PORT_TYPES = {"host": "UpstreamPort", "downstream": "DownstreamPort", "fabric": "InterswitchPort"}
_ENTITY_TYPES = {k.name: k.redfish.entity_type for k in all_kinds()}


def _name(port: Element) -> str:
    return str(port.get("name") or port.external_id.rsplit("/", 1)[-1])


def ports(world: World) -> dict[str, list[Resource]]:
    """Every port rendered, by owner id (switch, host or enclosure). A port reports its
    link: LinkDown when the link failed, a warning when it is degraded, the width it
    trained to (the simulator's model: half when degraded, none when failed) and its
    PortMetrics (sensors.py); its own Status otherwise says only its own fault."""
    by_id = {p.external_id: p for p in world.of("port")}
    data = {p.external_id: p.data for p in world.of("port")}
    cabled: dict[str, list[tuple[str, str]]] = {}  # port -> (other port, link fault)
    widths: dict[str, float] = {}  # port -> its link's trained width
    for link in world.of("link"):
        a, b = str(link.get("a_port_id")), str(link.get("b_port_id"))
        if a in by_id and b in by_id:
            cabled.setdefault(a, []).append((b, link.fault))
            cabled.setdefault(b, []).append((a, link.fault))
            # Width does not move with time: any `now` reads the same.
            width = sensors.link_numbers(link, data, now=0.0)["link_width"]
            widths[a] = widths[b] = width
    found: dict[str, list[Resource]] = {}
    for port in world.of("port"):
        owner_kind = str(port.get("owner_kind"))
        ends = cabled.get(port.external_id, [])
        faults = {fault for _other, fault in ends}
        fault = port.fault or ("degraded" if "degraded" in faults else "")
        lanes = int(port.get("lanes", 16))
        role = str(port.get("role"))
        body = resource(
            port_path(port),
            _name(port),
            "Port",
            PortId=str(port.get("number", "")),
            PortType=_PORT_TYPES.get(role, "UpstreamPort")
            if owner_kind == "switch"
            else "UpstreamPort",
            PortProtocol="CXL",
            CurrentSpeedGbps=float(port.get("speed_gts", 32.0)) * lanes,
            Width=lanes,
            ActiveWidth=int(widths.get(port.external_id, lanes)),
            LinkStatus="NoLink" if not ends else "LinkDown" if "failed" in faults else "LinkUp",
            Status=status(fault),
            Links={"ConnectedPorts": refs([port_path(by_id[o]) for o, _f in ends])},
        )
        if ends:
            body.update(sensors.links(port_path(port), environment=False, metrics=sensors.PORT))
        found.setdefault(str(port.get("owner_id")), []).append(body)
    return found


def render(world: World, tree: dict[str, Resource], rendered: dict[str, list[Resource]]) -> None:
    """Add the fabric (switches and their ports, endpoints, zones, connections)."""
    fabric = paths.FABRIC
    tree[f"{paths.V1}/Fabrics"] = collection(f"{paths.V1}/Fabrics", "Fabric", "Fabrics", [fabric])
    tree[fabric] = resource(
        fabric,
        f"CXL fabric of {world.fabric}",
        "Fabric",
        FabricType="CXL",
        Status=status(),
        Switches=ref(paths.SWITCHES),
        Endpoints=ref(paths.ENDPOINTS),
        Zones=ref(paths.ZONES),
        Connections=ref(paths.CONNECTIONS),
    )
    switches = world.of("switch")
    tree[paths.SWITCHES] = collection(
        paths.SWITCHES, "Switch", "Switches", [paths.switch(s.external_id) for s in switches]
    )
    for switch in switches:
        path = paths.switch(switch.external_id)
        members = rendered.get(switch.external_id, [])
        tree[path] = resource(
            path,
            str(switch.get("name") or switch.external_id),
            "Switch",
            SwitchType="CXL" if switch.get("protocol", "cxl") == "cxl" else "PCIe",
            Manufacturer=str(switch.get("vendor")),
            Model=str(switch.get("model")),
            SerialNumber=str(switch.get("serial")),
            FirmwareVersion=str(switch.get("firmware")),
            Status=status(switch.fault),
            Ports=ref(f"{path}/Ports"),
            **sensors.links(path),
            Links=(
                {"Chassis": ref(paths.chassis(switch.external_id))}
                if switch.get("rack_id") in world.by_id
                else {}
            ),
        )
        tree[f"{path}/Ports"] = collection(
            f"{path}/Ports", "Port", "Ports", [p["@odata.id"] for p in members]
        )
        for port in members:
            tree[port["@odata.id"]] = port
    endpoints = _endpoints(world, tree)
    tree[paths.ZONES] = collection(paths.ZONES, "Zone", "Zones", [f"{paths.ZONES}/all"])
    tree[f"{paths.ZONES}/all"] = resource(
        f"{paths.ZONES}/all",
        "Every host and device of the fabric",
        "Zone",
        ZoneType="ZoneOfEndpoints",
        Status=status(),
        Links={"Endpoints": refs(endpoints)},
    )
    connections(world, tree)


def _endpoint(
    tree: dict[str, Resource], element: Element, role: str, entity_type: str, entity: str
) -> str:
    """The endpoint of a host (its CPU, the initiator) or of a device (the target)."""
    path = paths.endpoint(element.external_id)
    tree[path] = resource(
        path,
        f"{element.get('name') or element.external_id} {role.lower()}",
        "Endpoint",
        EndpointProtocol="CXL",
        Status=status(),
        ConnectedEntities=[
            {"EntityRole": role, "EntityType": entity_type, "EntityLink": ref(entity)}
        ],
    )
    return path


def _endpoints(world: World, tree: dict[str, Resource]) -> list[str]:
    members = [
        _endpoint(
            tree,
            host,
            "Initiator",
            "Processor",
            f"{paths.system(host.external_id)}/Processors/{paths.CPU}",
        )
        for host in world.of("host")
    ]
    for device in world.of("device"):
        kind = str(device.get("kind"))
        entity = paths.device(device.external_id, kind, str(device.get("enclosure_id")))
        members.append(
            _endpoint(tree, device, "Target", _ENTITY_TYPES.get(kind, "Processor"), entity)
        )
    tree[paths.ENDPOINTS] = collection(paths.ENDPOINTS, "Endpoint", "Endpoints", members)
    return members


def connections(world: World, tree: dict[str, Resource]) -> None:
    """A Connection per connected memory chunk: the host's endpoint to the device's."""
    hosts = {b.binding_id: b.host_id for b in world.bindings}
    members = []
    for device_id, chunk_id, size, bound in chunk_slices(world):
        if not bound:
            continue
        device = world.by_id[device_id]
        path = paths.connection(chunk_id)
        members.append(path)
        domain = paths.device(device_id, str(device.get("kind")), str(device.get("enclosure_id")))
        tree[path] = resource(
            path,
            f"{size} GiB of {device.get('name') or device_id} to {hosts[chunk_id]}",
            "Connection",
            ConnectionType="Memory",
            Status=status(),
            MemoryChunkInfo=[
                {
                    "AccessCapabilities": ["Read", "Write"],
                    "MemoryChunk": ref(f"{paths.chunks(domain)}/{paths.seg(chunk_id)}"),
                }
            ],
            Links={
                "InitiatorEndpoints": refs([paths.endpoint(hosts[chunk_id])]),
                "TargetEndpoints": refs([paths.endpoint(device_id)]),
            },
        )
    tree[paths.CONNECTIONS] = collection(paths.CONNECTIONS, "Connection", "Connections", members)
