"""What the writes that compose say of the things they make and name: a composed system
(a Composition) as a ComputerSystem, and a ResourceBlock's path for a device or host and
back.

The reads of systems and blocks own how those look (`composer.redfish.systems`,
`composer.redfish.blocks`); the writes answer with the same bodies and accept the same
block ids, through these few functions.
"""

from __future__ import annotations

from typing import Any

from composer.choices import CompositionState
from composer.models import Composition
from composer.redfish.caller import Caller
from composer.redfish.paths import RESOURCE_BLOCKS, SYSTEMS
from fabric.choices import ComponentState, DeviceState
from fabric.models import Device, Host
from fabric.redfish_render.build import health_status, refs, resource

__all__ = [
    "HOST_BLOCK",
    "block_path",
    "block_path_of",
    "block_target",
    "row_id",
    "system_body",
    "system_path",
]

HOST_BLOCK = "host"
# A composition's state as a system's Status.State and Health.
SYSTEM_STATUS: dict[str, tuple[str, str]] = {
    CompositionState.PLACING: ("Starting", "OK"),
    CompositionState.BINDING: ("Starting", "OK"),
    CompositionState.READY: ("Enabled", "OK"),
    CompositionState.DEGRADED: ("Enabled", "Warning"),
    CompositionState.HEALING: ("Updating", "Warning"),
    CompositionState.DECOMPOSING: ("Disabled", "OK"),
    CompositionState.FAILED: ("Disabled", "Critical"),
}


def row_id(text: str) -> int | None:
    """An id in a path as a row's primary key; None for anything no row can have (not
    digits, or past a 64-bit key, which the database would refuse with an error)."""
    return int(text) if text.isdigit() and len(text) <= 18 else None


def system_path(composition: Composition) -> str:
    return f"{SYSTEMS}/{composition.pk}"


def block_path(target: Device | Host) -> str:
    """The ResourceBlock of a device ("gpu-12") or a host as a compute block ("host-3")."""
    if isinstance(target, Host):
        return block_path_of(HOST_BLOCK, target.pk)
    return block_path_of(target.kind, target.pk)


def block_path_of(kind: str, pk: int) -> str:
    """The ResourceBlock of a device of `kind` (or "host") with primary key `pk`."""
    return f"{RESOURCE_BLOCKS}/{kind}-{pk}"


def block_target(path: str) -> Device | Host | None:
    """The device or host a ResourceBlock path names; None when it names none present."""
    prefix = f"{RESOURCE_BLOCKS}/"
    if not path.startswith(prefix):
        return None
    kind, _, key = path[len(prefix) :].rstrip("/").rpartition("-")
    pk = row_id(key)
    if pk is None:
        return None
    if kind == HOST_BLOCK:
        return Host.objects.exclude(state=ComponentState.ABSENT).filter(pk=pk).first()
    found = Device.objects.exclude(state=DeviceState.ABSENT).filter(pk=pk, kind=kind)
    return found.first()


def system_body(composition: Composition, caller: Caller) -> dict[str, Any]:
    """A composed system as a ComputerSystem: its blocks (the host and its devices)."""
    allocations = composition.allocations.filter(released_at__isnull=True).select_related("device")
    blocks = [block_path(a.device) for a in allocations.order_by("pk")]
    if composition.host_id is not None:
        blocks.insert(0, block_path_of(HOST_BLOCK, composition.host_id))
    state, health = SYSTEM_STATUS.get(composition.state, ("Disabled", "OK"))
    return resource(
        system_path(composition),
        composition.name,
        "ComputerSystem",
        SystemType="Composed",
        Status=health_status(health, state),
        Links={"ResourceBlocks": refs(list(dict.fromkeys(blocks)))},
        Oem={"Composer": {"State": composition.state, "Tenant": composition.tenant.slug}},
    )
