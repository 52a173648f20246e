"""The whole Redfish tree of one simulated world, rendered at once, and how a GET is
answered from it: `$expand` one level, ETags, the OData service document and `$metadata`."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fabric.simulator.redfish import chassis, compute, events, fabric, paths, tasks
from fabric.simulator.redfish.common import VERSIONS, Resource, collection, ref, resource, status
from fabric.simulator.redfish.world import World

REDFISH_VERSION = "1.20.0"
SERVICE_UUID = "6c6f6361-6c2d-5369-6d75-6c61746f7231"
# What the service supports beyond plain reads, said in the service root.
PROTOCOL_FEATURES = {
    "ExpandQuery": {
        "ExpandAll": True,
        "Levels": True,
        "Links": True,
        "NoLinks": True,
        "MaxLevels": 1,
    },
    "FilterQuery": False,
    "SelectQuery": False,
    "OnlyMemberQuery": False,
    "ExcerptQuery": False,
    "TopSkipQuery": False,
    "DeepOperations": {"DeepPATCH": False, "DeepPOST": False},
}
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
        chassis.domain(world, tree, device, paths.device(device_id, "cxl_memory", enclosure))
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


def etag(body: Resource) -> str:
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:20]
    return f'W/"{digest}"'


# How `expand` finds a resource by its path (None where there is none).
Lookup = Callable[[str], Resource | None]
_EXPAND = re.compile(r"^([.*~])(?:\(\$levels=(\d+)\))?$")


def expand(find: Lookup, found: Resource, query: str) -> Resource | None:
    """The resource `found` with `$expand=query` applied (one level): `.` its
    subordinate references (and a collection's members), `~` its Links, `*` both; the
    references are found with `find`. None when the query is not one this service
    supports."""
    match = _EXPAND.match(query)
    if not match or int(match.group(2) or 1) > 1:
        return None
    body = copy.deepcopy(found)
    kind = match.group(1)

    def inline(value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"@odata.id"}:
            return copy.deepcopy(find(str(value["@odata.id"])) or value)
        if isinstance(value, list):
            return [inline(v) for v in value]
        return value

    for name, value in list(body.items()):
        if name == "Links" and kind in "*~" and isinstance(value, dict):
            body["Links"] = {k: inline(v) for k, v in value.items()}
        elif name not in ("Links", "@odata.id") and kind in ".*":
            body[name] = inline(value)
    return body


def odata(tree: dict[str, Resource]) -> dict[str, Any]:
    """The OData service document: the root's top-level services."""
    return {
        "@odata.context": f"{paths.V1}/$metadata",
        "value": [{"name": "Service", "kind": "Singleton", "url": f"{paths.V1}/"}]
        + [{"name": name, "kind": "Singleton", "url": path} for name, path in _TOP.items()],
    }


def metadata(tree: dict[str, Resource]) -> str:
    """`$metadata`: a reference to DMTF's schema of every type the tree holds."""
    namespaces: dict[str, set[str]] = {}
    for body in tree.values():
        parts = str(body.get("@odata.type") or "").lstrip("#").split(".")
        if len(parts) == 3:
            namespaces.setdefault(parts[0], set()).update({parts[0], f"{parts[0]}.{parts[1]}"})
        elif len(parts) == 2:
            namespaces.setdefault(parts[0], set()).add(parts[0])
    for name in VERSIONS:
        namespaces.setdefault(name, {name})
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">',
    ]
    for schema in sorted(namespaces):
        lines.append(f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{schema}_v1.xml">')
        for namespace in sorted(namespaces[schema]):
            lines.append(f'    <edmx:Include Namespace="{namespace}"/>')
        lines.append("  </edmx:Reference>")
    lines += [
        "  <edmx:DataServices>",
        '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">',
        '      <EntityContainer Name="Service" Extends="ServiceRoot.v1_20_0.ServiceContainer"/>',
        "    </Schema>",
        "  </edmx:DataServices>",
        "</edmx:Edmx>",
    ]
    return "\n".join(lines) + "\n"
