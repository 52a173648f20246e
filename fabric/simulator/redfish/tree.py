"""The whole Redfish tree of one simulated world, rendered at once, and how a GET is
answered from it: `$expand` one level, ETags, the OData service document and `$metadata`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fabric.redfish_render import documents
from fabric.redfish_render.build import Resource, collection, ref, resource
from fabric.simulator.redfish import chassis, compute, events, fabric, paths, tasks
from fabric.simulator.redfish.common import status
from fabric.simulator.redfish.world import World

REDFISH_VERSION = "1.20.0"
SERVICE_UUID = "6c6f6361-6c2d-5369-6d75-6c61746f7231"
# What the service supports beyond plain reads, said in the service root.
PROTOCOL_FEATURES = documents.protocol_features()
_TOP = {
    "Systems": paths.SYSTEMS,
    "Chassis": paths.CHASSIS,
    "Fabrics": f"{paths.V1}/Fabrics",
    "CompositionService": paths.COMPOSITION,
    "PowerEquipment": f"{paths.V1}/PowerEquipment",
    "SessionService": f"{paths.V1}/SessionService",
    "EventService": events.SERVICE,
    "Tasks": tasks.SERVICE,
}


def render(world: World, sessions: list[tuple[str, str]]) -> dict[str, Resource]:
    """Every resource of `world` by its path; `sessions` are (id, user name) pairs."""
    return bind(render_unbound(world, sessions), world)


def bind(unbound: dict[str, Resource], world: World) -> dict[str, Resource]:
    """The tree `unbound` (of the same elements) with `world`'s bindings and carved
    chunks shown. Costs what the bindings touch, not the world's size: binds change the
    state far more often than the elements do. `unbound` itself is left as it was."""
    tree = dict(unbound)
    compute.compose(world, tree)
    for device_id in {device for device, _chunk, _size, _bound in chassis.chunk_slices(world)}:
        device = world.by_id[device_id]
        enclosure = str(device.get("enclosure_id"))
        path = paths.device(device_id, str(device.get("kind")), enclosure)
        chassis.domain(world, tree, device, path)
    fabric.connections(world, tree)
    return tree


def render_unbound(world: World, sessions: list[tuple[str, str]]) -> dict[str, Resource]:
    """Every resource of `world`'s elements, as if nothing were bound or carved."""
    world = replace(world, bindings=[], pending=[])
    tree: dict[str, Resource] = {}
    ports = fabric.ports(world)
    tree[paths.V1] = resource(
        paths.V1,
        "Composer simulated fabric manager",
        "ServiceRoot",
        Id="RootService",
        RedfishVersion=REDFISH_VERSION,
        UUID=SERVICE_UUID,
        Vendor="Composer",
        Product=f"Simulated fabric manager ({world.fabric})",
        ProtocolFeaturesSupported=PROTOCOL_FEATURES,
        Links={"Sessions": ref(paths.SESSIONS)},
        **{name: ref(path) for name, path in _TOP.items()},
    )
    service = f"{paths.V1}/SessionService"
    tree[service] = resource(
        service,
        "Session service",
        "SessionService",
        ServiceEnabled=True,
        SessionTimeout=1800,
        Status=status(),
        Sessions=ref(paths.SESSIONS),
    )
    members = [f"{paths.SESSIONS}/{paths.seg(s)}" for s, _user in sessions]
    tree[paths.SESSIONS] = collection(paths.SESSIONS, "Session", "Sessions", members)
    for (_session, user), path in zip(sessions, members, strict=True):
        tree[path] = resource(path, "User session", "Session", UserName=user)
    events.render(tree)
    tasks.render(tree)
    chassis.render(world, tree, ports)
    fabric.render(world, tree, ports)
    compute.render(world, tree, ports)
    return tree


def odata(tree: dict[str, Resource]) -> dict[str, Any]:
    """The OData service document: the root's top-level services."""
    return documents.odata(_TOP)


def metadata(tree: dict[str, Resource]) -> str:
    """`$metadata`: a reference to DMTF's schema of every type the tree holds."""
    return documents.metadata(tree.values())
