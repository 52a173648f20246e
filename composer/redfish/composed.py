"""What the writes that compose say of the things they make and name, through the reads'
own functions: a composed system's body (`composer.redfish.systems`), a ResourceBlock's
path for a device or host, and the device or host a block a client names stands for, as
that client may see it (`composer.redfish.blocks`). So a write answers with the same
bodies, and accepts the same block ids, as the reads serve.
"""

from __future__ import annotations

from composer.redfish import paths
from composer.redfish.blocks import HOST, device_of_block, host_of_block, is_compute_block
from composer.redfish.caller import Caller
from composer.redfish.systems import system_body
from fabric.models import Device, Host

__all__ = [
    "HOST_BLOCK",
    "block_path",
    "block_path_of",
    "block_target",
    "row_id",
    "system_body",
]

HOST_BLOCK = HOST


row_id = paths.row_id


def block_path(target: Device | Host) -> str:
    """The ResourceBlock of a device ("gpu-12") or a host as a compute block ("host-3")."""
    if isinstance(target, Host):
        return paths.resource_block(HOST, target.pk)
    return paths.resource_block(target.kind, target.pk)


def block_path_of(kind: str, pk: int) -> str:
    """The ResourceBlock of a device of `kind` (or "host") with primary key `pk`."""
    return paths.resource_block(kind, pk)


def block_target(link: object, caller: Caller, pointer: str) -> Device | Host:
    """The device or host a block link names, if `caller` may use it; else the 400
    `Composition.ResourceBlockNotFound` naming it at `pointer`."""
    if is_compute_block(link, pointer):
        return host_of_block(link, caller, pointer)
    return device_of_block(link, caller, pointer)
