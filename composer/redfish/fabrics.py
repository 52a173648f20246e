"""Fabrics, read-only: one per fabric manager, with its switches.

Fabric internals are for operators: a tenant's collection is empty and any member a 404.
Ids: the manager's and the switch's database ids. Nothing of a manager's endpoint,
settings or credentials is shown: only its name and its switches.
"""

from __future__ import annotations

from typing import Any

from composer.redfish.caller import Call
from composer.redfish.inventory import HEALTH
from composer.redfish.paths import FABRICS, row_id
from composer.redfish.routes import Route
from fabric.choices import ComponentState, SwitchProtocol
from fabric.models import FabricManager, Switch
from fabric.redfish_render.build import collection, ref, resource, stated
from fabric.redfish_render.errors import RedfishError, refuse

PROTOCOLS = {SwitchProtocol.CXL: "CXL", SwitchProtocol.PCIE: "PCIe"}


def _missing(call: Call, kind: str, key: str) -> RedfishError:
    return refuse(404, f"There is no {kind} {call.path}.", "Base.ResourceNotFound", kind, key)


def _manager(call: Call) -> FabricManager:
    key = call.params["fabric"]
    found = None
    number = row_id(key)
    if call.caller.operator and number is not None:
        found = FabricManager.objects.filter(pk=number).only("pk", "name").first()
    if found is None:
        raise _missing(call, "Fabric", key)
    return found


def _switches(manager: FabricManager) -> Any:
    return Switch.objects.filter(manager=manager).exclude(state=ComponentState.ABSENT)


def fabric_list(call: Call) -> dict[str, Any]:
    ids = FabricManager.objects.order_by("pk").values_list("pk", flat=True)
    members = [f"{FABRICS}/{pk}" for pk in ids] if call.caller.operator else []
    return collection(FABRICS, "Fabric", "Fabrics", members)


def fabric_get(call: Call) -> dict[str, Any]:
    manager = _manager(call)
    path = f"{FABRICS}/{manager.pk}"
    protocols = set(_switches(manager).values_list("protocol", flat=True))
    kind = "CXL" if SwitchProtocol.CXL in protocols else "PCIe"
    return resource(
        path,
        manager.name,
        "Fabric",
        FabricType=kind,
        Status={"State": "Enabled", "Health": "OK"},
        Switches=ref(f"{path}/Switches"),
    )


def switch_list(call: Call) -> dict[str, Any]:
    manager = _manager(call)
    path = f"{FABRICS}/{manager.pk}/Switches"
    ids = _switches(manager).order_by("pk").values_list("pk", flat=True)
    return collection(path, "Switch", "Switches", [f"{path}/{pk}" for pk in ids])


def switch_get(call: Call) -> dict[str, Any]:
    manager = _manager(call)
    key = call.params["switch"]
    found = None
    number = row_id(key)
    if number is not None:
        found = _switches(manager).filter(pk=number).first()
    if found is None:
        raise _missing(call, "Switch", key)
    return resource(
        f"{FABRICS}/{manager.pk}/Switches/{found.pk}",
        found.name,
        "Switch",
        SwitchType=PROTOCOLS.get(found.protocol, "PCIe"),
        **stated(
            Manufacturer=found.vendor,
            Model=found.model,
            SerialNumber=found.serial,
            FirmwareVersion=found.firmware,
        ),
        Status={
            "State": "StandbyOffline" if found.state == ComponentState.MAINTENANCE else "Enabled",
            "Health": HEALTH.get(found.health),
        },
    )


ROUTES = [
    Route(FABRICS, get=fabric_list),
    Route(f"{FABRICS}/{{fabric}}", get=fabric_get),
    Route(f"{FABRICS}/{{fabric}}/Switches", get=switch_list),
    Route(f"{FABRICS}/{{fabric}}/Switches/{{switch}}", get=switch_get),
]
