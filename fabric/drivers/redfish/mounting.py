"""Where a chassis sits in its rack, as Redfish says it: `Location.Placement.RackOffset`
(the lowest unit it occupies, counted from 1 at the bottom) in `RackOffsetUnits` (EIA-310
units of 44.45 mm, or Open Compute's OpenU of 48 mm), and its height, `HeightMm`.

Both are optional in Redfish: a chassis that gives no offset reports `rack_unit` None (the
console lists it under its rack, not placed in a unit), one that gives no height takes one
unit, and a rack that gives no height is `DEFAULT_RACK_HEIGHT_U` tall.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabric.drivers.base import DEFAULT_RACK_HEIGHT_U, RACK_UNIT_MM

__all__ = ["mounted_at", "rack_height_u"]

_UNIT_MM = {"EIA_310": RACK_UNIT_MM, "OpenU": 48.0}


def _placement(chassis: Mapping[str, Any]) -> Mapping[str, Any]:
    location = chassis.get("Location")
    placement = location.get("Placement") if isinstance(location, Mapping) else None
    return placement if isinstance(placement, Mapping) else {}


def _units(height_mm: Any, unit_mm: float) -> int | None:
    """A height in mm as whole units (a 4U box reports 177.8 mm), None when not a number."""
    try:
        units = round(float(height_mm) / unit_mm)
    except (TypeError, ValueError):
        return None
    return units if units >= 1 else None


def rack_height_u(rack: Mapping[str, Any]) -> int:
    """A rack chassis's height in units: its `HeightMm`, else `DEFAULT_RACK_HEIGHT_U`."""
    unit_mm = _UNIT_MM.get(str(_placement(rack).get("RackOffsetUnits")), RACK_UNIT_MM)
    return _units(rack.get("HeightMm"), unit_mm) or DEFAULT_RACK_HEIGHT_U


def mounted_at(chassis: Mapping[str, Any] | None) -> dict[str, Any]:
    """`rack_unit` and `height_u` of a switch's, host's or enclosure's chassis, ready to
    pass to its Info (None and 1 where the service does not say)."""
    if not chassis:
        return {"rack_unit": None, "height_u": 1}
    placement = _placement(chassis)
    unit_mm = _UNIT_MM.get(str(placement.get("RackOffsetUnits")), RACK_UNIT_MM)
    offset = placement.get("RackOffset")
    unit = offset if isinstance(offset, int) and not isinstance(offset, bool) else None
    return {
        "rack_unit": unit if unit is not None and unit >= 1 else None,
        "height_u": _units(chassis.get("HeightMm"), unit_mm) or 1,
    }
