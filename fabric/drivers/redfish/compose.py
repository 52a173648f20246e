"""Binding a device to a host by composing resource blocks, and reading bindings back.

A device is bound when its resource block is in `Links.ResourceBlocks` of the host's
system. The binding id is a digest of (host, device): the service's state alone gives it
back, so `bindings()` after a lost reply names the same binding the bind would have.

Every write re-reads what it changes first (the system and the block, fresh), so a
decision is never taken on a discovery's stale copy; a PATCH carries the system's ETag in
If-Match, so a concurrent change is refused (412) rather than overwritten.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Any

from fabric.drivers.base import Binding, DriverError
from fabric.drivers.redfish.client import Reply, Session
from fabric.drivers.redfish.mapping import Index, health_of, rid
from fabric.drivers.redfish.methods import COMPOSE_ACTION, EXPANDABLE, SPECIFIC, Methods
from fabric.drivers.redfish.reader import link

logger = logging.getLogger(__name__)

_BUSY = frozenset({"Composed", "ComposedAndAvailable", "Failed", "Unavailable"})


def binding_id(host_id: str, device_id: str) -> str:
    """Stable and derivable from the service's state (host and device ids)."""
    return "rf-" + hashlib.sha256(f"{host_id}\n{device_id}".encode()).hexdigest()[:24]


def _blocks(ids: Iterable[str]) -> list[dict[str, str]]:
    return [{"@odata.id": i} for i in ids]


class BlockComposer:
    """Compose and decompose resource blocks through one session.

    `prefer` is the operator's choice of method (settings `composition_method`), or "" to
    pick what fits: an existing system is expanded (PATCH) where it may be, else through
    the Compose action; a free compute block gets a new system through the Compose action
    where offered, else by POST to the Systems collection.
    """

    def __init__(self, session: Session, index: Index, methods: Methods, prefer: str) -> None:
        self.session = session
        self.index = index
        self.methods = methods
        self.prefer = prefer
        # Built on first use, once: `bindings` is called once per system, and a fabric of
        # thousands of hosts and devices would otherwise rebuild them per system.
        self._devices_of: dict[str, list[str]] | None = None
        self._anchors: dict[str, str] = {}

    # -- reads ---------------------------------------------------------------------------

    def _read(self, path: str, what: str) -> Reply:
        return self.session.check(self.session.request("GET", path), what)

    def current_system(self, host_id: str) -> str | None:
        """The system the host is now (a compute block's system may have been re-created)."""
        anchor = self.index.host_anchor.get(host_id)
        if anchor is None:
            return self.index.host_system.get(host_id)
        block = self._read(anchor, f"read host {host_id}").body
        systems = [s.rstrip("/") for s in link(block, "ComputerSystems")]
        return systems[0] if systems else None

    def bindings(self, systems: Iterable[dict[str, Any]]) -> list[Binding]:
        """One binding per reported device in a system's resource blocks."""
        if self._devices_of is None:
            self._devices_of = {}
            for device, block in self.index.device_block.items():
                self._devices_of.setdefault(block, []).append(device)
            self._anchors = {a: h for h, a in self.index.host_anchor.items()}
        devices_of, anchors = self._devices_of, self._anchors
        found = []
        for system in systems:
            blocks = [b.rstrip("/") for b in link(system, "ResourceBlocks")]
            host = next((anchors[b] for b in blocks if b in anchors), rid(system))
            for block in blocks:
                for device in sorted(devices_of.get(block, [])):
                    found.append(Binding(binding_id(host, device), device, host))
        return found

    # -- bind ----------------------------------------------------------------------------

    def bind(self, device_id: str, host_id: str) -> Binding:
        """Compose the device's resource block into the host's system (idempotent)."""
        block_id = self.index.device_block.get(device_id)
        if block_id is None:
            raise DriverError(
                f"Device {device_id!r} is in no resource block of the CompositionService; "
                "the manager cannot compose it.",
                permanent=True,
            )
        binding = Binding(binding_id(host_id, device_id), device_id, host_id)
        system_id = self.current_system(host_id)
        system: dict[str, Any] = {}
        etag = ""
        if system_id:
            reply = self._read(system_id, f"read host {host_id}")
            system, etag = reply.body, reply.etag or str(reply.body.get("@odata.etag") or "")
            if block_id in {b.rstrip("/") for b in link(system, "ResourceBlocks")}:
                return binding
        block = self._read(block_id, f"read the resource block of device {device_id}").body
        self._check_free(block, device_id)
        if system_id:
            self._expand(host_id, system_id, system, etag, block_id)
        else:
            self._create(host_id, block_id)
        logger.info("redfish %s: composed %s into %s", self.session.endpoint, block_id, host_id)
        return binding

    def _check_free(self, block: dict[str, Any], device_id: str) -> None:
        status = block.get("CompositionStatus") or {}
        if health_of(block) == "critical":
            raise DriverError(
                f"Device {device_id!r} is failed (its resource block reports critical health).",
                permanent=True,
            )
        if status.get("Reserved"):
            raise DriverError(f"Device {device_id!r} is reserved on the manager.", permanent=True)
        holders = [s.rstrip("/") for s in link(block, "ComputerSystems")]
        sharing = status.get("SharingCapable") and status.get("SharingEnabled")
        if (holders or status.get("CompositionState") in _BUSY) and not sharing:
            named = ", ".join(self.index.system_host.get(h, h) for h in holders) or "another host"
            raise DriverError(f"Device {device_id!r} is already bound to {named}.", permanent=True)

    def _allowed(self, method: str) -> bool:
        return not self.prefer or self.prefer == method

    def _expand(
        self, host_id: str, system_id: str, system: dict[str, Any], etag: str, block_id: str
    ) -> None:
        current = [b.rstrip("/") for b in link(system, "ResourceBlocks")]
        if self._allowed(EXPANDABLE) and self.methods.expandable(system_id, system):
            self.patch_blocks(system_id, etag, [*current, block_id], f"bind to {host_id}")
            return
        if self._allowed(COMPOSE_ACTION) and self.methods.compose_target and current:
            self.compose_action([*current, block_id], f"bind to {host_id}")
            return
        raise DriverError(
            f"The manager offers no way to add a resource block to host {host_id!r}"
            f"{self._offered()}.",
            permanent=True,
        )

    def _create(self, host_id: str, block_id: str) -> None:
        anchor = self.index.host_anchor.get(host_id)
        if anchor is None:
            raise DriverError(f"Unknown host {host_id!r}.", permanent=True)
        if self._allowed(COMPOSE_ACTION) and self.methods.compose_target:
            self.compose_action([anchor, block_id], f"bind to {host_id}")
            return
        if self._allowed(SPECIFIC) and self.methods.specific_target:
            name = str(self.index.blocks.get(anchor, {}).get("Name") or anchor)
            reply = self.session.request(
                "POST",
                self.methods.specific_target,
                body={"Name": name, "Links": {"ResourceBlocks": _blocks([anchor, block_id])}},
            )
            self.session.follow(reply, f"compose a system for {host_id}")
            return
        raise DriverError(
            f"The manager offers no way to compose a system on host {host_id!r}{self._offered()}.",
            permanent=True,
        )

    def _offered(self) -> str:
        names = self.methods.names()
        chosen = f"; composition_method is {self.prefer!r}" if self.prefer else ""
        return f" (it offers: {', '.join(names) or 'none'}{chosen})"

    # -- the three methods ---------------------------------------------------------------

    def patch_blocks(self, system_id: str, etag: str, blocks: list[str], what: str) -> None:
        """Expandable composition: PATCH the system's blocks, refused (412) if it changed."""
        headers = {"If-Match": etag} if etag else {}
        reply = self.session.request(
            "PATCH",
            system_id,
            body={"Links": {"ResourceBlocks": _blocks(blocks)}},
            headers=headers,
        )
        self.session.follow(reply, what)

    def compose_action(self, blocks: list[str], what: str) -> None:
        """The Compose action: a one-stanza manifest, previewed first where allowed."""
        manifest = {
            "Description": f"Composer: {what}",
            "Expand": "None",
            "Stanzas": [
                {
                    "StanzaType": "ComposeSystem",
                    "StanzaId": "composer",
                    "Request": {"Links": {"ResourceBlocks": _blocks(blocks)}},
                }
            ],
        }
        for request_type in (["Preview"] if self.methods.compose_preview else []) + ["Apply"]:
            body = {"RequestFormat": "Manifest", "RequestType": request_type, "Manifest": manifest}
            reply = self.session.request("POST", self.methods.compose_target, body=body)
            self.session.follow(reply, f"{what} ({request_type} of the Compose action)")

    # -- unbind --------------------------------------------------------------------------

    def unbind(self, binding: Binding, system: dict[str, Any], etag: str) -> None:
        """Take the device's block out of the system: PATCH where the system may change,
        else DELETE the system when nothing but its compute block would be left."""
        system_id = rid(system)
        block_id = self.index.device_block[binding.device_id]
        current = [b.rstrip("/") for b in link(system, "ResourceBlocks")]
        remaining = [b for b in current if b != block_id]
        anchors = set(self.index.host_anchor.values())
        what = f"unbind {binding.device_id} from {binding.host_id}"
        if self._allowed(EXPANDABLE) and self.methods.expandable(system_id, system):
            self.patch_blocks(system_id, etag, remaining, what)
        elif set(remaining) <= anchors and (
            self.methods.specific_target or self.methods.compose_target
        ):
            headers = {"If-Match": etag} if etag else {}
            reply = self.session.request("DELETE", system_id, headers=headers)
            if reply.status != 404:
                self.session.follow(reply, what)
        else:
            raise DriverError(
                f"The manager offers no way to take a block out of {binding.host_id!r}"
                f"{self._offered()}.",
                permanent=True,
            )
        logger.info(
            "redfish %s: removed %s from %s", self.session.endpoint, block_id, binding.host_id
        )
