"""What only the simulated world says: who made an element, and its injected fault as
a Status. The builders every Redfish payload uses are `fabric.redfish_render.build`."""

from __future__ import annotations

from typing import Any

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
