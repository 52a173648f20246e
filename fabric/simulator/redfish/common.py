"""What only the simulated world says: who made an element, and its injected fault as
a Status. The builders every Redfish payload uses are `fabric.redfish_render.build`."""

from __future__ import annotations

from typing import Any

from fabric.drivers.base import RACK_UNIT_MM
from fabric.redfish_render.build import health_status

_HEALTH = {"": "OK", "degraded": "Warning", "failed": "Critical"}


def made(element: Any) -> dict[str, str]:
    """Who made a simulated element, as Redfish says it on any physical part."""
    return {
        "Manufacturer": str(element.get("vendor")),
        "Model": str(element.get("model")),
        "SerialNumber": str(element.get("serial")),
    }


def status(fault: str = "") -> dict[str, str]:
    """An element's own Status: its injected fault alone ("" ok, degraded, failed)."""
    return health_status(_HEALTH.get(fault, "OK"))


def height_mm(units: Any) -> float:
    """A height in rack units as Redfish gives it (`HeightMm`)."""
    return round(int(units) * RACK_UNIT_MM, 2)


def rack_placement(element: Any, rack: Any) -> dict[str, Any]:
    """Where a switch, host or enclosure sits in `rack`, as a chassis says it: its height
    (`HeightMm`) and, where it has a unit, `Location.Placement` (`RackOffset`, the lowest
    unit, counted from 1 at the bottom, in EIA-310 units)."""
    body: dict[str, Any] = {"HeightMm": height_mm(element.get("height_u", 1))}
    if rack is not None and element.get("rack_unit", None) is not None:
        body["Location"] = {
            "Placement": {
                "Rack": str(rack.get("name") or rack.external_id),
                "RackOffset": int(element.get("rack_unit")),
                "RackOffsetUnits": "EIA_310",
            }
        }
    return body
