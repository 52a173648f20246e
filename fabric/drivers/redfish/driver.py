"""The Redfish driver: a fabric manager that speaks DMTF Redfish (a Composition Service,
Fabrics, Chassis and Systems), behind the same FabricDriver interface as every driver.

Settings (the manager's `settings`, never secrets): `timeout_s` (each call, default 10),
`task_timeout_s` (following a 202, default 60), `verify_tls` (default true), `ca_bundle`
(a PEM file to verify the manager's certificate against), `composition_method` (one of
"expandable", "specific", "compose-action" to use only that one; default: what fits),
`metrics_max_reads` (metrics resources read per health poll, default 256; 0: none),
`use_expand` (default true; false reads every member on its own, for a service whose
`$expand` answers wrongly), `survey_max_age_s` (how long a bind or unbind by a later driver
of this process starts from the latest discovery instead of walking the service, default
300; 0: every job walks; fabric.drivers.redfish.known).
Credentials: {"username": ..., "password": ...}, used to sign in and for nothing else.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from fabric.drivers.base import (
    Binding,
    DriverError,
    HealthReading,
    Inventory,
    ProbeReport,
)
from fabric.drivers.events import DriverEvent, EventsNotOffered
from fabric.drivers.redfish import known
from fabric.drivers.redfish.client import NotFound, Options, Session
from fabric.drivers.redfish.compose import BlockComposer
from fabric.drivers.redfish.events import EventStream, stream_of
from fabric.drivers.redfish.health import readings_of
from fabric.drivers.redfish.mapping import rid
from fabric.drivers.redfish.memory import MemorySlicer
from fabric.drivers.redfish.methods import ALL
from fabric.drivers.redfish.metrics import max_reads_of
from fabric.drivers.redfish.reader import Reader, expand_query, link, ref, use_expand_of
from fabric.drivers.redfish.sessions import session_for
from fabric.drivers.redfish.state import State, state_of
from fabric.kinds import is_sliced

logger = logging.getLogger(__name__)
T = TypeVar("T")


class RedfishDriver:
    """Driver for one Redfish manager. Construction opens nothing; the first call signs in
    (one session per manager and process, shared by every instance)."""

    def __init__(
        self,
        *,
        endpoint: str = "",
        settings: Mapping[str, Any] | None = None,
        credentials: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.settings = dict(settings or {})
        self._credentials = dict(credentials or {})
        self._lock = threading.Lock()
        self._state: State | None = None
        self._stream: EventStream | None = None
        self._stream_closed = False
        # Binds to one host change one system, read then PATCHed with its ETag: two at once
        # from one instance (a compose job binds side by side) would refuse each other
        # (412). They take the host's lock; binds to different hosts still overlap.
        self._host_locks: dict[str, threading.Lock] = {}
        prefer = str(self.settings.get("composition_method") or "")
        if prefer and prefer not in ALL:
            raise DriverError(
                f"Setting composition_method must be one of {', '.join(ALL)}; got {prefer!r}.",
                permanent=True,
            )
        self.prefer = prefer
        self.use_expand = use_expand_of(self.settings)
        self.max_age_s = known.max_age_of(self.settings)
        self._survey_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RedfishDriver(endpoint={self.endpoint!r})"  # never the credentials

    # -- plumbing ------------------------------------------------------------------------

    def _session(self) -> Session:
        if not self.endpoint.startswith(("http://", "https://")):
            raise DriverError(
                f"Endpoint {self.endpoint!r} is not an http(s) URL of a Redfish service.",
                permanent=True,
            )
        options = Options.from_settings(self.settings)
        return session_for(self.endpoint, self._credentials, options)

    def _reader(self, session: Session) -> Reader:
        expand = expand_query(session.root or {}) if self.use_expand else ""
        return Reader(session, expand=expand)

    def survey(self) -> State:
        """A fresh discovery with all it read (kept for the binds that follow, this driver's
        and, for a while, later drivers' of this process; tests and benchmarks read its
        snapshot, reachability and request count)."""
        session = self._session()
        # The root is read afresh each time: a manager's firmware may add a service to it.
        root = session.check(session.request("GET", "/redfish/v1/"), "read the service root")
        if "RedfishVersion" not in root.body:
            raise DriverError(
                f"{self.endpoint} answered 200, but not with a Redfish service root "
                "(no RedfishVersion).",
                permanent=True,
            )
        session.root = root.body
        try:
            return self._map(session)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            logger.warning("redfish %s: unreadable resources", self.endpoint, exc_info=True)
            raise DriverError(
                f"{self.endpoint} answered with resources that are not valid Redfish "
                f"({type(exc).__name__}: {exc}).",
                permanent=True,
            ) from exc

    def _map(self, session: Session) -> State:
        """Walk the service and map what it holds; kept as this driver's known state and
        as the process's latest discovery of this manager (fabric.drivers.redfish.known)."""
        reader = self._reader(session)
        state = state_of(reader)
        with self._lock:
            self._state = state
        known.remember(self._key(), state)
        logger.info(
            "redfish %s: discovered %s in %s requests",
            self.endpoint,
            state.inventory.counts(),
            reader.requests,
        )
        return state

    def _key(self) -> tuple[Any, ...]:
        options = Options.from_settings(self.settings)
        return known.key_of(self.endpoint, self._credentials, options, self.use_expand)

    def _host_lock(self, host_id: str) -> threading.Lock:
        with self._lock:
            return self._host_locks.setdefault(host_id, threading.Lock())

    def _known(self) -> State:
        """This driver's discovery, else the process's latest one of this manager while
        younger than `survey_max_age_s`, else a walk (one at a time: binds side by side in
        a fresh driver wait for the first one's walk rather than each walking)."""
        with self._lock:
            state = self._state
        if state is not None:
            return state
        with self._survey_lock:
            with self._lock:
                state = self._state
            if state is not None:
                return state
            state = known.recall(self._key(), self.max_age_s) if self.max_age_s else None
            if state is None:
                return self.survey()
            with self._lock:
                self._state = state
            return state

    def _on_known(self, op: Callable[[State], T]) -> T:
        """`op` on the known state; where a resource that state names answers 404 (moved
        or gone since it was read), once more on a fresh walk. A 409 or 412 is no sign of a
        stale state: it stays the refusal it is."""
        try:
            return op(self._known())
        except NotFound as exc:
            logger.info("redfish %s: %s; walking the service again", self.endpoint, exc.message)
            return op(self.survey())

    # -- FabricDriver --------------------------------------------------------------------

    def discover(self) -> Inventory:
        """Walk the service and report it (read-only; racks and feeds where it has them)."""
        return self.survey().inventory

    def probe(self) -> ProbeReport:
        """Sign in, discover, and say what answered and how it composes."""
        state = self.survey()
        root = state.snapshot.root
        service = f"Redfish {root.get('RedfishVersion') or '(version not given)'}"
        product = ", ".join(str(root[k]) for k in ("Vendor", "Product") if root.get(k))
        notes = []
        if state.snapshot.composition is None:
            notes.append("no CompositionService: whole devices cannot be bound through it")
        elif not state.methods.names():
            notes.append("the CompositionService offers no composition method this driver uses")
        if state.inventory.links:
            notes.append("no link latency reported: placement estimates it from hop counts")
        if not state.inventory.power_feeds:
            notes.append("no power feeds reported")
        if not state.inventory.racks:
            notes.append("no racks reported")
        if not Options.from_settings(self.settings).verify_tls:
            notes.append("TLS verification is off for this manager (verify_tls false)")
        if state.snapshot.missing:
            notes.append(f"{len(state.snapshot.missing)} linked resources were absent (404)")
        notes.append(self._events_note())
        return ProbeReport(
            service=f"{service}, {product}" if product else service,
            counts=state.inventory.counts(),
            composition_methods=state.methods.names(),
            notes=tuple(notes),
        )

    def _events_note(self) -> str:
        """Whether the service pushes its changes, so an operator knows if faults show at
        once (`manage.py fabric_events` listening) or on the next health poll."""
        try:
            stream_of(self._session())
        except EventsNotOffered:
            return "no server-sent events: its health is polled on its interval only"
        except DriverError as exc:
            return f"its EventService could not be read ({exc.message}): polled only for now"
        return "pushes events (server-sent events): manage.py fabric_events polls on each"

    def _composer(self, state: State) -> BlockComposer:
        return BlockComposer(self._session(), state.index, state.methods, self.prefer)

    def _slicer(self, state: State) -> MemorySlicer:
        return MemorySlicer(
            self._session(),
            state.index,
            state.reach.element_endpoints,
            state.initiators,
            state.fabric_connections,
        )

    def _current(self, state: State) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Reader]:
        """Fresh reads of every system and every connection (the bindings' truth)."""
        reader = self._reader(self._session())
        systems = reader.members(ref(state.snapshot.root.get("Systems")))
        connections = [
            c
            for fabric in state.snapshot.fabrics
            for c in reader.members(ref(fabric.get("Connections")))
        ]
        return systems, connections, reader

    def _bindings(
        self, state: State
    ) -> tuple[State, list[Binding], dict[str, tuple[str, dict[str, Any]]]]:
        """The bindings the service reports now, read with `state` (returned: a fresh walk
        where the reads name a block, a server or an initiator that `state` does not know,
        since a walk that predates them would map their bindings wrongly or not at all, and
        the reconciler unbinds what it takes for an orphan)."""
        systems, connections, reader = self._current(state)
        unknown = unknown_to(state, systems, connections)
        if unknown:
            logger.info("redfish %s: %s, walking the service again", self.endpoint, unknown)
            state = self.survey()
            systems, connections, reader = self._current(state)
        composer, slicer = self._composer(state), self._slicer(state)
        found: list[Binding] = []
        sources: dict[str, tuple[str, dict[str, Any]]] = {}
        for system in systems:
            for binding in composer.bindings([system]):
                found.append(binding)
                sources[binding.binding_id] = ("block", system)
        for connection in connections:
            for binding in slicer.bindings([connection], reader):
                found.append(binding)
                sources[binding.binding_id] = ("memory", connection)
        return state, found, sources

    def bindings(self) -> list[Binding]:
        """Every device in a composed system's resource blocks, every memory slice that a
        connection gives a host; read fresh from the service."""
        return self._on_known(lambda state: self._bindings(state)[1])

    def bind(self, *, device_id: str, host_id: str, size_gib: int | None = None) -> Binding:
        """Compose the device (or connect a `size_gib` memory chunk of it) to the host."""
        return self._on_known(lambda state: self._bind(state, device_id, host_id, size_gib))

    def _bind(self, state: State, device_id: str, host_id: str, size_gib: int | None) -> Binding:
        if device_id not in state.index.devices or host_id not in {
            h.external_id for h in state.inventory.hosts
        }:
            state = self.survey()  # it may have appeared since this driver last looked
        device = state.index.devices.get(device_id)
        if device is None:
            raise DriverError(f"Unknown device {device_id!r}.", permanent=True)
        if host_id not in {h.external_id for h in state.inventory.hosts}:
            raise DriverError(f"Unknown host {host_id!r}.", permanent=True)
        if size_gib is not None:
            if size_gib <= 0:
                raise DriverError(f"size_gib must be positive; got {size_gib}.", permanent=True)
            if not is_sliced(device.kind):
                raise DriverError(
                    f"Device {device_id!r} ({device.kind}) is not partitionable; bind it whole "
                    "(size_gib=None).",
                    permanent=True,
                )
            state, found, _sources = self._bindings(state)
            existing = [b for b in found if b.size_gib is not None]
            return self._slicer(state).bind(device_id, host_id, size_gib, existing)
        if state.snapshot.composition is None:
            raise DriverError(
                f"The manager at {self.endpoint} has no CompositionService: it cannot bind "
                f"device {device_id!r} whole.",
                permanent=True,
            )
        with self._host_lock(host_id):
            return self._composer(state).bind(device_id, host_id)

    def unbind(self, *, binding_id: str) -> None:
        """Undo a binding read back from the service; an unknown id is not an error."""
        self._on_known(lambda state: self._unbind(state, binding_id))

    def _unbind(self, state: State, binding_id: str) -> bool:
        """Undo the binding if the service reports it; False where it reports none of that
        id (a walk that predates its device or host is walked again by `_bindings`)."""
        state, bindings, sources = self._bindings(state)
        binding = next((b for b in bindings if b.binding_id == binding_id), None)
        if binding is None:
            return False
        kind, source = sources[binding_id]
        if kind == "memory":
            self._slicer(state).unbind(source)
            return True
        session = self._session()
        with self._host_lock(binding.host_id):
            reply = session.check(session.request("GET", rid(source)), f"read {rid(source)}")
            etag = reply.etag or str(reply.body.get("@odata.etag") or "")
            self._composer(state).unbind(binding, reply.body, etag)
        return True

    def event_stream(self, *, last_event_id: str = "") -> Iterator[DriverEvent]:
        """The service's server-sent events over this manager's session, resuming after
        `last_event_id` (fabric.drivers.redfish.events); EventsNotOffered without them."""
        stream = stream_of(self._session())
        with self._lock:
            if self._stream_closed:  # closed while it was being opened
                return
            self._stream = stream
        yield from stream.events(last_event_id)

    def close_event_stream(self) -> None:
        """End the stream `event_stream` is reading (from another thread), for good: this
        instance opens none after it."""
        with self._lock:
            self._stream_closed = True
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def health(self) -> list[HealthReading]:
        """A reading per element from a fresh walk, with its metrics
        (fabric.drivers.redfish.health)."""
        state = self.survey()
        reader = self._reader(self._session())
        return readings_of(state, reader, max_reads_of(self.settings))


def unknown_to(
    state: State, systems: list[dict[str, Any]], connections: list[dict[str, Any]]
) -> str:
    """What the fresh reads of systems and connections name that `state` does not know,
    in words ("" when nothing): a resource block, a server, a memory initiator."""
    anchors = set(state.index.host_anchor.values())
    for system in systems:
        blocks = [b.rstrip("/") for b in link(system, "ResourceBlocks")]
        new = [b for b in blocks if b not in state.index.blocks]
        if new:
            return f"system {rid(system)} holds resource block {new[0]} that the walk predates"
        if blocks and rid(system) not in state.index.system_host and not anchors & set(blocks):
            return f"system {rid(system)} is a server the walk predates"
    endpoints = {rid(e) for e in state.snapshot.endpoints}
    for connection in connections:
        if not connection.get("MemoryChunkInfo"):
            continue
        initiators = [e.rstrip("/") for e in link(connection, "InitiatorEndpoints")]
        if any(e not in state.initiators and e not in endpoints for e in initiators):
            return f"connection {rid(connection)} names an endpoint the walk predates"
    return ""
