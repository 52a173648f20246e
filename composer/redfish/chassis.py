"""Chassis, read-only: racks and enclosures (GPU chassis, CXL memory boxes, JBOFs, I/O
chassis), with the device blocks each enclosure holds.

Where things stand is fabric detail: operators see every present rack and enclosure; a
tenant's collection is empty and any member is a 404. Ids: `rack-<pk>` and
`enclosure-<pk>` (database ids, stable while the row lives).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from composer.redfish.blocks import block_path
from composer.redfish.caller import Call, Caller
from composer.redfish.inventory import HEALTH, per_request
from composer.redfish.paths import CHASSIS
from composer.redfish.routes import Route
from fabric.choices import ComponentState, DeviceState, EnclosureKind
from fabric.models import Device, Enclosure, Rack
from fabric.redfish_render.build import collection, refs, resource, stated
from fabric.redfish_render.errors import refuse

CHASSIS_TYPES = {EnclosureKind.JBOF: "StorageEnclosure"}  # the others: "Enclosure"


def _status(state: str, health: str) -> dict[str, Any]:
    offline = state == ComponentState.MAINTENANCE
    return {
        "State": "StandbyOffline" if offline else "Enabled",
        "Health": HEALTH.get(health),  # type: ignore[call-overload]
    }


@dataclass
class _Places:
    """Every present rack and enclosure, and the devices of each enclosure: three queries
    whatever their number, read once per request."""

    racks: dict[str, Rack]
    enclosures: dict[str, Enclosure]
    devices: dict[int, list[tuple[str, int]]]  # enclosure pk -> (kind, pk) of its devices


def _read(caller: Caller) -> _Places:
    if not caller.operator:
        return _Places({}, {}, {})
    racks = {f"rack-{r.pk}": r for r in Rack.objects.filter(is_present=True).order_by("pk")}
    enclosures = {
        f"enclosure-{e.pk}": e
        for e in Enclosure.objects.exclude(state=ComponentState.ABSENT).order_by("pk")
    }
    devices: dict[int, list[tuple[str, int]]] = defaultdict(list)
    rows = Device.objects.exclude(state=DeviceState.ABSENT).filter(enclosure__isnull=False)
    for kind, pk, enclosure in rows.order_by("pk").values_list("kind", "pk", "enclosure_id"):
        devices[enclosure].append((kind, pk))
    return _Places(racks, enclosures, dict(devices))


def chassis_list(call: Call) -> dict[str, Any]:
    places = per_request(call, "chassis", _read)
    members = [f"{CHASSIS}/{key}" for key in [*places.racks, *places.enclosures]]
    return collection(CHASSIS, "Chassis", "Chassis", members)


def chassis_get(call: Call) -> dict[str, Any]:
    key = call.params["chassis"]
    places = per_request(call, "chassis", _read)
    rack = places.racks.get(key)
    if rack is not None:
        inside = [k for k, e in places.enclosures.items() if e.rack_id == rack.pk]
        return resource(
            f"{CHASSIS}/{key}",
            rack.name,
            "Chassis",
            ChassisType="Rack",
            Status=_status(ComponentState.ACTIVE, rack.health),
            Links={"Contains": refs([f"{CHASSIS}/{k}" for k in inside])},
        )
    found = places.enclosures.get(key)
    if found is None:
        raise refuse(
            404, f"There is no chassis {call.path}.", "Base.ResourceNotFound", "Chassis", key
        )
    devices = places.devices.get(found.pk, [])
    links: dict[str, Any] = {"ResourceBlocks": refs([block_path(k, p) for k, p in devices])}
    if f"rack-{found.rack_id}" in places.racks:
        links["ContainedBy"] = {"@odata.id": f"{CHASSIS}/rack-{found.rack_id}"}
    return resource(
        f"{CHASSIS}/{key}",
        found.name,
        "Chassis",
        ChassisType=CHASSIS_TYPES.get(found.kind, "Enclosure"),  # type: ignore[call-overload]
        **stated(Manufacturer=found.vendor, Model=found.model, SerialNumber=found.serial),
        Status=_status(found.state, found.health),
        Links=links,
    )


ROUTES = [
    Route(CHASSIS, get=chassis_list),
    Route(f"{CHASSIS}/{{chassis}}", get=chassis_get),
]
