"""The served world's EventService: what a real manager would announce, as server-sent events.

A real manager tells its clients when an element's health changes or something is
composed; the simulator changes its state in the database (`sim_fault`, the fault page,
the simulated driver's binds), so the server notices by polling the state's version
(world.version, two queries) every WATCH_S while a stream is open, and turns the
difference between the world before and after into ResourceEvent messages:

- an element's own fault changed: `ResourceStatusChangedOK` / `...Warning` /
  `...Critical`, OriginOfCondition the element's resource (a link: each of its ports);
- an element appeared or went: `ResourceCreated` / `ResourceRemoved`;
- a binding made or undone: `ResourceChanged` of the host's system.

Each event has an id, counting from 1 for the life of the server; the last KEEP are held,
so a stream reopened with `Last-Event-ID` gets what it missed. The watcher goes on for
GRACE_S after the last stream closes (a client reconnecting misses nothing), then stops
until the next stream opens.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.db import connections

from fabric.drivers.base import DriverError
from fabric.redfish_render.build import Resource, collection, event, ref, resource
from fabric.simulator.redfish import paths
from fabric.simulator.redfish.common import status
from fabric.simulator.redfish.sensors import port_path
from fabric.simulator.redfish.world import Element, World

logger = logging.getLogger(__name__)

SERVICE = f"{paths.V1}/EventService"
SSE = f"{SERVICE}/SSE"
SUBSCRIPTIONS = f"{SERVICE}/Subscriptions"
WATCH_S = 0.5  # how often an open stream's server checks the state's version
GRACE_S = 60.0  # how long the watcher outlives the last stream
KEEP = 1000  # events held for replay
_REGISTRY = "ResourceEvent.1.0"
_HEALTH = {"": "OK", "degraded": "Warning", "failed": "Critical"}


def render(tree: dict[str, Resource]) -> None:
    """The EventService (server-sent events only: no push subscriptions are taken)."""
    tree[SERVICE] = resource(
        SERVICE,
        "Event service",
        "EventService",
        ServiceEnabled=True,
        DeliveryRetryAttempts=3,
        DeliveryRetryIntervalSeconds=30,
        EventFormatTypes=["Event"],
        RegistryPrefixes=["ResourceEvent"],
        ServerSentEventUri=SSE,
        Status=status(),
        Subscriptions=ref(SUBSCRIPTIONS),
    )
    tree[SUBSCRIPTIONS] = collection(SUBSCRIPTIONS, "EventDestination", "Subscriptions", [])


def element_paths(world: World, element: Element) -> list[str]:
    """The resources that show `element`'s own Status (none for a kind not served)."""
    kind, eid = element.kind, element.external_id
    if kind == "device":
        return [paths.device(eid, str(element.get("kind")), str(element.get("enclosure_id")))]
    if kind == "host":
        return [paths.system(eid)]
    if kind in ("rack", "enclosure"):
        return [paths.chassis(eid)]
    if kind == "switch":
        return [paths.switch(eid)]
    if kind == "power_feed":
        return [paths.pdu(eid)]
    if kind == "port":
        return [port_path(element)]
    if kind == "link":
        ends = [world.by_id.get(str(element.get(end))) for end in ("a_port_id", "b_port_id")]
        return [port_path(port) for port in ends if port is not None]
    return []


def _record(message: str, origin: str, severity: str, text: str) -> dict[str, Any]:
    return {
        "MessageId": f"{_REGISTRY}.{message}",
        "Message": text,
        "MessageArgs": [origin],
        "MessageSeverity": severity,
        "OriginOfCondition": ref(origin),
    }


def changes(before: World, after: World) -> list[dict[str, Any]]:
    """The event records that announce how `after` differs from `before`."""
    records = []
    for eid in sorted(before.by_id.keys() | after.by_id.keys()):
        old, new = before.by_id.get(eid), after.by_id.get(eid)
        if new is None and old is not None:
            for origin in element_paths(before, old):
                records.append(_record("ResourceRemoved", origin, "OK", f"{origin} was removed."))
        elif old is None and new is not None:
            for origin in element_paths(after, new):
                records.append(_record("ResourceCreated", origin, "OK", f"{origin} was created."))
        elif old is not None and new is not None and old.fault != new.fault:
            health = _HEALTH.get(new.fault, "OK")
            for origin in element_paths(after, new):
                records.append(
                    _record(
                        f"ResourceStatusChanged{health}",
                        origin,
                        health,
                        f"The health of {origin} changed to {health}.",
                    )
                )
    held_before = {(b.binding_id, b.host_id) for b in before.bindings}
    held_after = {(b.binding_id, b.host_id) for b in after.bindings}
    for host in sorted({h for _b, h in held_before ^ held_after}):
        origin = paths.system(host)
        records.append(
            _record("ResourceChanged", origin, "OK", f"What is composed into {origin} changed.")
        )
    return records


class EventLog:
    """The events sent so far (the last KEEP), and a condition to wait for new ones on."""

    def __init__(self) -> None:
        self.held: deque[tuple[int, Resource]] = deque(maxlen=KEEP)
        self.changed = threading.Condition()
        self._ids = itertools.count(1)

    def publish(self, records: list[dict[str, Any]]) -> None:
        """One Event per record, each with its own id."""
        with self.changed:
            for record in records:
                event_id = next(self._ids)
                at = datetime.now(UTC).isoformat(timespec="seconds")
                stamped = {"EventId": str(event_id), "EventTimestamp": at, **record}
                body = event(str(event_id), "Resource event", [stamped])
                self.held.append((event_id, body))
            self.changed.notify_all()

    def after(self, last_id: int, wait_s: float) -> list[tuple[int, Resource]]:
        """The events after `last_id`, waiting up to `wait_s` for one."""
        with self.changed:
            found = [(i, body) for i, body in self.held if i > last_id]
            if not found:
                self.changed.wait(wait_s)
                found = [(i, body) for i, body in self.held if i > last_id]
            return found


class Events:
    """The event log of one server and the watcher that fills it while streams are open."""

    def __init__(self, read: Callable[[], World], stopping: threading.Event) -> None:
        self.read = read  # the world as it is now (the same object while unchanged)
        self.stopping = stopping
        self.log = EventLog()
        self.streams = 0
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._idle_since = 0.0

    def open(self) -> None:
        """A stream opens: make sure the watcher runs. Its first read happens here, before
        the stream is answered (and counted), so that any change after it is announced."""
        with self._lock:
            if self._watcher is None:
                baseline = self.read()
                self._watcher = threading.Thread(
                    target=self._watch, args=(baseline,), name="redfish-events", daemon=True
                )
                self._watcher.start()
            self.streams += 1

    def close(self) -> None:
        with self._lock:
            self.streams -= 1
            self._idle_since = time.monotonic()

    def join(self, timeout: float) -> None:
        watcher = self._watcher
        if watcher is not None:
            watcher.join(timeout)

    def _idle(self) -> bool:
        with self._lock:
            if self.streams or time.monotonic() - self._idle_since < GRACE_S:
                return False
            self._watcher = None
            return True

    def _watch(self, before: World) -> None:
        try:
            while not self.stopping.wait(WATCH_S) and not self._idle():
                after = self.read()
                if after is not before:
                    self.log.publish(changes(before, after))
                    before = after
        except DriverError as exc:  # the fabric is gone: nothing more to announce
            logger.warning("redfish events stopped: %s", exc.message)
        except Exception:  # the database is away: the next stream starts another watcher
            logger.exception("redfish events stopped")
        finally:
            with self._lock:
                if self._watcher is threading.current_thread():
                    self._watcher = None
            connections.close_all()  # this thread's database connection ends with it
