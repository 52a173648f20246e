"""What a client's writes do to the simulated world: always through the simulator's own
driver (its latencies, injected operation faults, bind rule and row locks), so that a bind
over Redfish and a bind by the simulated driver are one code path.

- PATCH of a system's `Links.ResourceBlocks`: blocks added are bound whole to the host,
  blocks left out are unbound (expandable composition).
- POST to a memory domain's MemoryChunks carves a chunk (held by the server until it is
  connected); POST to the fabric's Connections gives it to a host: the simulator's slice
  binding. DELETE of the connection unbinds it; DELETE of an unconnected chunk drops it.
- The authenticated read of the service root is where a discovery starts: it takes the
  simulator's "discover" latency and consumes its injected "discover" faults.

A simulator refusal answers 409 (permanent), a busy manager 503, and an injected timeout
loses the reply (`LostReply`): the operation happened, the client hears nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from fabric.drivers.base import DriverError, DriverTimeout
from fabric.kinds import is_sliced
from fabric.simulator import driver as simulated_driver
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.redfish import paths
from fabric.simulator.redfish.world import PendingChunks, World

logger = logging.getLogger(__name__)

GIB_MIB = 1024
T = TypeVar("T")


class Refused(Exception):
    """An HTTP error answer, in an operator's words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class LostReply(Exception):
    """The operation was done (or not), but its reply is lost: the client times out."""


def simulator_call(call: Callable[[], T]) -> T:
    """Run a simulator operation; its DriverError becomes the HTTP answer it means."""
    try:
        return call()
    except DriverTimeout as exc:
        raise LostReply(str(exc)) from exc
    except DriverError as exc:
        raise Refused(409 if exc.permanent else 503, exc.message) from exc


def begin_read(fabric_name: str) -> None:
    """A discovery starts: wait the "discover" latency, consume an injected fault."""
    fabric = store.fabric_get(fabric_name)
    mode = store.operation_fault_take(fabric, "discover")
    if mode == "timeout":
        simulated_driver.sleep(store.latency_seconds(fabric, "timeout"))
        raise LostReply("Simulated discover timed out (injected).")
    simulated_driver.sleep(store.latency_seconds(fabric, "discover"))
    if mode == "transient":
        raise Refused(503, "Simulated discover failed: fabric manager busy (injected).")
    if mode == "permanent":
        raise Refused(403, "Simulated discover refused by the fabric manager (injected).")


def _ids(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(
        isinstance(v, Mapping) and isinstance(v.get("@odata.id"), str) for v in value
    ):
        raise Refused(400, f'{what} must be a list of {{"@odata.id": ...}} links.')
    return [str(v["@odata.id"]).rstrip("/") for v in value]


def patch_system(world: World, host_id: str, body: Mapping[str, Any]) -> None:
    """Make the host's whole-device bindings the blocks `Links.ResourceBlocks` lists."""
    links = body.get("Links")
    if set(body) - {"Links"} or not isinstance(links, Mapping) or set(links) != {"ResourceBlocks"}:
        raise Refused(
            400, "Only Links.ResourceBlocks of a system can be changed (expandable composition)."
        )
    wanted: list[str] = []
    for block in _ids(links["ResourceBlocks"], "Links.ResourceBlocks"):
        device = paths.under(block, paths.BLOCKS)
        element = world.by_id.get(device or "")
        if element is None or element.kind != "device" or is_sliced(str(element.get("kind"))):
            raise Refused(400, f"Links.ResourceBlocks names {block}, which is no resource block.")
        wanted.append(element.external_id)
    held = {
        b.device_id: b.binding_id
        for b in world.bindings
        if b.host_id == host_id and b.size_gib is None
    }
    driver = SimulatedDriver(settings={"fabric": world.fabric})
    for device, binding_id in held.items():
        if device not in wanted:
            simulator_call(partial(driver.unbind, binding_id=binding_id))
    for device in dict.fromkeys(wanted):
        if device not in held:
            simulator_call(partial(driver.bind, device_id=device, host_id=host_id))


def _domain_of(world: World, collection: str) -> str:
    """The memory device whose domain's MemoryChunks collection `collection` is."""
    parts = collection.rstrip("/").split("/")
    if len(parts) >= 3 and parts[-1] == "MemoryChunks" and parts[-3] == "MemoryDomains":
        device = world.by_id.get(paths.unseg(parts[-2]))
        if device is not None and is_sliced(str(device.get("kind"))):
            return device.external_id
    raise Refused(405, f"POST is not allowed on {collection}.")


def create_chunk(
    world: World, pending: PendingChunks, collection: str, body: Mapping[str, Any]
) -> str:
    """Carve a chunk of whole GiB from a memory domain, within its free capacity."""
    device_id = _domain_of(world, collection)
    size_mib = body.get("MemoryChunkSizeMiB")
    if not isinstance(size_mib, int) or size_mib <= 0 or size_mib % GIB_MIB:
        raise Refused(400, f"MemoryChunkSizeMiB must be a positive multiple of {GIB_MIB}.")
    device = world.by_id[device_id]
    capacity = int(device.get("memory_gib", 0))
    with pending.lock:  # the capacity check and the carving are one step
        used = sum(
            b.size_gib or capacity for b in world.bindings if b.device_id == device_id
        ) + sum(c.size_gib for c in pending.items.values() if c.device_id == device_id)
        size = size_mib // GIB_MIB
        if used + size > capacity:
            raise Refused(
                409,
                f"Device {device_id!r} has {max(capacity - used, 0)} GiB free of {capacity} "
                f"GiB; cannot carve {size} GiB.",
            )
        chunk = pending.add(device_id, size)
    return f"{collection.rstrip('/')}/{paths.seg(chunk.chunk_id)}"


def create_connection(world: World, pending: PendingChunks, body: Mapping[str, Any]) -> str:
    """Give a carved chunk to the host of the initiator endpoint: the simulator's bind."""
    infos = body.get("MemoryChunkInfo")
    links = body.get("Links")
    links = links if isinstance(links, Mapping) else {}
    if not isinstance(infos, list) or len(infos) != 1 or not isinstance(infos[0], Mapping):
        raise Refused(400, "MemoryChunkInfo must name exactly one memory chunk.")
    named = infos[0].get("MemoryChunk")
    chunk_path = str(named.get("@odata.id") or "") if isinstance(named, Mapping) else ""
    initiators = _ids(links.get("InitiatorEndpoints") or [], "Links.InitiatorEndpoints")
    host_id = paths.under(initiators[0], paths.ENDPOINTS) if len(initiators) == 1 else None
    host = world.by_id.get(host_id or "")
    if host is None or host.kind != "host":
        raise Refused(400, "Links.InitiatorEndpoints must name one host's endpoint.")
    with pending.lock:
        chunk = pending.items.get(paths.last(chunk_path))
    if chunk is None:
        raise Refused(400, f"MemoryChunk {chunk_path} is no unconnected memory chunk.")
    driver = SimulatedDriver(settings={"fabric": world.fabric})
    try:
        binding = simulator_call(
            lambda: driver.bind(
                device_id=chunk.device_id, host_id=host.external_id, size_gib=chunk.size_gib
            )
        )
    except LostReply:
        pending.pop(chunk.chunk_id)  # the bind happened: the chunk is the binding's now
        raise
    pending.pop(chunk.chunk_id)
    return paths.connection(binding.binding_id)


def delete(world: World, pending: PendingChunks, path: str) -> None:
    """DELETE of a connection (unbind the slice) or of an unconnected chunk."""
    binding_id = paths.under(path, paths.CONNECTIONS)
    if binding_id is not None:
        if not any(b.binding_id == binding_id for b in world.bindings):
            raise Refused(404, f"No connection {path}.")
        driver = SimulatedDriver(settings={"fabric": world.fabric})
        simulator_call(lambda: driver.unbind(binding_id=binding_id))
        return
    if "/MemoryChunks/" in path:
        chunk_id = paths.last(path)
        if pending.pop(chunk_id) is not None:
            return
        if any(b.binding_id == chunk_id for b in world.bindings):
            raise Refused(409, f"Memory chunk {path} is connected; delete its connection first.")
        raise Refused(404, f"No memory chunk {path}.")
    raise Refused(405, f"DELETE is not allowed on {path}.")
