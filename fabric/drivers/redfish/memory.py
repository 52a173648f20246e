"""CXL memory slices: a memory chunk carved from a device's MemoryDomain and connected to
a host's initiator endpoint by a Connection of the fabric.

A slice is bound when a Connection links an endpoint of the host to a chunk of the domain;
its binding id is a digest of the connection's id, its size the chunk's size. Binding
creates the chunk (POST to the domain's MemoryChunks), then the connection (POST to the
fabric's Connections); if the connection is refused the chunk is deleted again, so nothing
is left half-bound.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fabric.drivers.base import Binding, DriverError
from fabric.drivers.redfish.client import Session
from fabric.drivers.redfish.mapping import GIB_MIB, Index, rid
from fabric.drivers.redfish.reader import Reader, link, ref, refs

logger = logging.getLogger(__name__)


def slice_binding_id(connection_id: str) -> str:
    return "rf-" + hashlib.sha256(connection_id.encode()).hexdigest()[:24]


class MemorySlicer:
    """Bind, unbind and read CXL memory slices through one session."""

    def __init__(
        self,
        session: Session,
        index: Index,
        endpoints: Mapping[str, list[str]],
        initiators: Mapping[str, str],
        fabric_connections: Mapping[str, str],
    ) -> None:
        self.session = session
        self.index = index
        self.endpoints = endpoints  # element (host or device) -> its endpoint ids
        self.initiators = initiators  # initiator endpoint -> host
        self.fabric_connections = fabric_connections  # endpoint -> its fabric's Connections

    def _chunk_domain(self) -> dict[str, str]:
        return {rid(c): d for d, chunks in self.index.chunks.items() for c in chunks}

    def bindings(self, connections: Iterable[Mapping[str, Any]], reader: Reader) -> list[Binding]:
        """A binding per connection that gives a host a chunk of a reported memory domain."""
        chunk_domain = self._chunk_domain()
        found = []
        for connection in connections:
            hosts = [
                self.initiators[e.rstrip("/")]
                for e in link(connection, "InitiatorEndpoints")
                if e.rstrip("/") in self.initiators
            ]
            for info in connection.get("MemoryChunkInfo") or []:
                chunk_id = (ref(info.get("MemoryChunk")) or "").rstrip("/")
                domain = chunk_domain.get(chunk_id)
                chunk = reader.get(chunk_id) if chunk_id else None
                if chunk is not None and domain is None:
                    domain = self._domain_of_new_chunk(chunk_id)
                if not hosts or domain is None or chunk is None:
                    continue
                size = int(chunk.get("MemoryChunkSizeMiB") or 0) // GIB_MIB
                found.append(Binding(slice_binding_id(rid(connection)), domain, hosts[0], size))
        return found

    def _domain_of_new_chunk(self, chunk_id: str) -> str | None:
        """A chunk created after discovery: its domain is the one whose collection lists it."""
        for domain_id, domain in self.index.domains.items():
            collection = ref(domain.get("MemoryChunks"))
            if collection and self._listed(collection, chunk_id):
                return domain_id
        return None

    def _listed(self, collection: str, chunk_id: str) -> bool:
        reply = self.session.check(self.session.request("GET", collection), f"read {collection}")
        return chunk_id in {m.rstrip("/") for m in refs(reply.body.get("Members"))}

    def bind(self, device_id: str, host_id: str, size_gib: int, existing: list[Binding]) -> Binding:
        """Carve a `size_gib` chunk and connect it to the host (idempotent per host)."""
        domain = self.index.domains.get(device_id)
        if domain is None or not domain.get("AllowsMemoryChunkCreation"):
            raise DriverError(
                f"Device {device_id!r} cannot be bound in slices: the manager offers no memory "
                "chunks for it; bind it whole (size_gib=None).",
                permanent=True,
            )
        for binding in existing:
            if binding.device_id == device_id and binding.host_id == host_id:
                if binding.size_gib == size_gib:
                    return binding
                raise DriverError(
                    f"Host {host_id!r} already holds a {binding.size_gib} GiB slice of "
                    f"{device_id!r}; unbind it before binding a different size.",
                    permanent=True,
                )
        capacity = int(domain.get("MemorySizeMiB") or 0) // GIB_MIB
        collection = ref(domain.get("MemoryChunks")) or ""
        used = self._used_gib(collection)
        if used + size_gib > capacity:
            raise DriverError(
                f"Device {device_id!r} has {max(capacity - used, 0)} GiB free of {capacity} GiB; "
                f"cannot bind {size_gib} GiB.",
                permanent=True,
            )
        initiator = next((e for e in self.endpoints.get(host_id, []) if e in self.initiators), None)
        targets = [e for e in self.endpoints.get(device_id, []) if e not in self.initiators]
        connections = self.fabric_connections.get(initiator or "")
        if initiator is None or not targets or not connections:
            raise DriverError(
                f"Host {host_id!r} and device {device_id!r} share no fabric the manager can "
                "connect them through (no initiator or target endpoint).",
                permanent=True,
            )
        what = f"bind {size_gib} GiB of {device_id} to {host_id}"
        reply = self.session.request(
            "POST",
            collection,
            body={
                "MemoryChunkSizeMiB": size_gib * GIB_MIB,
                "Links": {"Endpoints": [{"@odata.id": targets[0]}]},
            },
        )
        created = self.session.follow(reply, f"{what} (create the memory chunk)")
        chunk_id = (created.location or str(created.body.get("@odata.id") or "")).rstrip("/")
        chunk_id = chunk_id[chunk_id.find("/redfish/") :] if "/redfish/" in chunk_id else chunk_id
        body = {
            "ConnectionType": "Memory",
            "MemoryChunkInfo": [
                {"AccessCapabilities": ["Read", "Write"], "MemoryChunk": {"@odata.id": chunk_id}}
            ],
            "Links": {
                "InitiatorEndpoints": [{"@odata.id": initiator}],
                "TargetEndpoints": [{"@odata.id": targets[0]}],
            },
        }
        try:
            reply = self.session.request("POST", connections, body=body)
            done = self.session.follow(reply, f"{what} (connect the memory chunk)")
        except DriverError:
            self.session.request("DELETE", chunk_id)  # nothing half-bound
            raise
        connection_id = (done.location or str(done.body.get("@odata.id") or "")).rstrip("/")
        if "/redfish/" in connection_id:
            connection_id = connection_id[connection_id.find("/redfish/") :]
        logger.info(
            "redfish %s: connected %s GiB of %s to %s",
            self.session.endpoint,
            size_gib,
            device_id,
            host_id,
        )
        return Binding(slice_binding_id(connection_id), device_id, host_id, size_gib)

    def _used_gib(self, collection: str) -> int:
        reply = self.session.check(self.session.request("GET", collection), f"read {collection}")
        total = 0
        for member in refs(reply.body.get("Members")):
            chunk = self.session.request("GET", member)
            if chunk.status == 200:
                total += int(chunk.body.get("MemoryChunkSizeMiB") or 0)
        return -(-total // GIB_MIB)

    def unbind(self, connection: Mapping[str, Any]) -> None:
        """Delete the connection, then its chunks."""
        what = f"unbind the memory slice {rid(connection)}"
        reply = self.session.request("DELETE", rid(connection))
        if reply.status != 404:
            self.session.follow(reply, what)
        for info in connection.get("MemoryChunkInfo") or []:
            chunk = ref(info.get("MemoryChunk"))
            if chunk:
                reply = self.session.request("DELETE", chunk)
                if reply.status != 404:
                    self.session.follow(reply, what)
