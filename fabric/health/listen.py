"""Pushed events as hints to poll: one listener per fabric manager whose driver offers them.

Why hints: a manager's event says something changed, not the whole truth, and events can be
lost (a dropped stream, a service that keeps few). So an event only asks for a health poll
of its manager, at once instead of at the end of its interval; the poll reads the truth, and
the periodic polls go on whatever the stream does (the fallback when it is absent or down).

The `Supervisor` runs in one process (`manage.py fabric_events`, started by `make run` as
its own child; in production one or more of them). Each `refresh_s` it reads the enabled
managers, and for each whose driver is an EventSource (fabric.drivers.events) it takes the
manager's lease and starts a `Listener` thread. The lease is a PostgreSQL session advisory
lock held by the supervisor's own connection, so that of several processes exactly one
listens to a manager, and one that dies (its connection gone) frees it for another at that
one's next refresh. (On SQLite, the single-machine default, there is one such process and
the lease is always granted.) A burst of events makes one poll: hints for a manager are
collected for `debounce_s` after the first, then `on_hint(manager_id)` is called once, on
the supervisor's thread (the only one that touches the database).

A Listener reconnects with exponential back-off (BACKOFF_MIN_S to BACKOFF_MAX_S, with
jitter), resuming after the last event id it saw; a manager that offers no events is asked
again every RECHECK_S (its firmware may be updated). Messages are the drivers' DriverError
texts, which never hold a credential.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
import random
import threading
import time
from collections.abc import Callable

from django.db import DatabaseError, close_old_connections, connection

from fabric.drivers.base import DriverError
from fabric.drivers.events import EventsNotOffered, EventSource, event_source
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager

logger = logging.getLogger(__name__)

BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 60.0
RECHECK_S = 300.0  # a manager without events is asked again this often
LEASE_NAMESPACE = 0x5E_E17  # the first key of the advisory locks that are these leases


class Listener(threading.Thread):
    """Reads one manager's event stream, putting its id on `hints` for each health event."""

    def __init__(
        self, manager_id: int, source: EventSource, hints: queue.Queue[int], *, name: str
    ) -> None:
        super().__init__(name=f"events-{manager_id}", daemon=True)
        self.manager_id = manager_id
        self.manager_name = name
        self.source = source
        self.hints = hints
        self.stopped = threading.Event()
        self.last_event_id = ""
        self.connects = 0

    def run(self) -> None:
        delay = BACKOFF_MIN_S
        while not self.stopped.is_set():
            try:
                self.connects += 1
                for event in self.source.event_stream(last_event_id=self.last_event_id):
                    delay = BACKOFF_MIN_S  # it answered: the next drop starts over
                    if event.event_id:
                        self.last_event_id = event.event_id
                    if event.health_relevant:
                        logger.info(
                            "manager %s: event %s (%s): its health is polled at once",
                            self.manager_name,
                            event.event_id or "-",
                            event.message_id or "no message",
                        )
                        self.hints.put(self.manager_id)
                    if self.stopped.is_set():
                        return
                wait = BACKOFF_MIN_S  # the service closed the stream: open it again soon
                logger.info("manager %s: event stream closed; reopening", self.manager_name)
            except EventsNotOffered as exc:
                logger.info("manager %s: %s", self.manager_name, exc.message)
                wait = RECHECK_S
            except DriverError as exc:
                logger.warning(
                    "manager %s: event stream down (%s); reopening in %.0f s, polling meanwhile",
                    self.manager_name,
                    exc.message,
                    delay,
                )
                wait, delay = delay, min(delay * 2, BACKOFF_MAX_S)
            self.stopped.wait(wait * random.uniform(0.8, 1.2))

    def stop(self) -> None:
        """Ask the thread to end, closing its stream so that a blocked read returns."""
        self.stopped.set()
        self.source.close_event_stream()


def _fingerprint(manager: FabricManager) -> str:
    """What a listener was started with: a changed endpoint, setting or secret restarts it
    (the digest keeps the ciphertext itself out of memory that outlives the read)."""
    text = json.dumps(
        [manager.driver, manager.endpoint, manager.settings, manager.credentials_ciphertext],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


class Supervisor:
    """Starts and stops the listeners of the managers it holds the lease of, and turns their
    hints into `on_hint(manager_id)` calls, one per burst."""

    def __init__(
        self,
        *,
        on_hint: Callable[[int], None],
        debounce_s: float = 1.0,
        refresh_s: float = 15.0,
    ) -> None:
        self.on_hint = on_hint
        self.debounce_s = debounce_s
        self.refresh_s = refresh_s
        self.hints: queue.Queue[int] = queue.Queue()
        self.listeners: dict[int, tuple[Listener, str]] = {}
        self._pending: dict[int, float] = {}

    # -- leases ------------------------------------------------------------------------

    def _lease(self, manager_id: int, *, take: bool) -> bool:
        if connection.vendor != "postgresql":
            return True
        with connection.cursor() as cursor:
            call = "pg_try_advisory_lock" if take else "pg_advisory_unlock"
            cursor.execute(f"SELECT {call}(%s, %s)", [LEASE_NAMESPACE, manager_id])
            return bool(cursor.fetchone()[0])

    # -- listeners ---------------------------------------------------------------------

    def refresh(self) -> None:
        """Match the listeners to the enabled managers that offer events and whose lease
        this process holds or can take."""
        wanted: dict[int, tuple[FabricManager, EventSource, str]] = {}
        for manager in FabricManager.objects.filter(is_enabled=True).order_by("pk"):
            try:
                source = event_source(get_driver(manager))
            except DriverError as exc:
                logger.info("manager %s: no driver to listen with (%s)", manager.name, exc)
                continue
            if source is not None:
                wanted[manager.pk] = (manager, source, _fingerprint(manager))
        for manager_id, (_listener, fingerprint) in list(self.listeners.items()):
            if manager_id not in wanted or wanted[manager_id][2] != fingerprint:
                self._stop(manager_id)
                self._lease(manager_id, take=False)
        for manager_id, (manager, source, fingerprint) in wanted.items():
            if manager_id in self.listeners or not self._lease(manager_id, take=True):
                continue
            listener = Listener(manager_id, source, self.hints, name=manager.name)
            self.listeners[manager_id] = (listener, fingerprint)
            listener.start()
            logger.info("manager %s: listening for its events", manager.name)

    def _stop(self, manager_id: int) -> None:
        listener, _ = self.listeners.pop(manager_id)
        listener.stop()
        listener.join(timeout=5)

    def stop_all(self) -> None:
        """Stop every listener (their leases go with the connection or the next refresh)."""
        for manager_id in list(self.listeners):
            self._stop(manager_id)

    # -- hints -------------------------------------------------------------------------

    def drain(self, *, wait_s: float) -> None:
        """Collect hints for up to `wait_s`, then call `on_hint` for each manager whose
        first hint is `debounce_s` old."""
        try:
            manager_id = self.hints.get(timeout=wait_s)
            while True:
                self._pending.setdefault(manager_id, time.monotonic())
                manager_id = self.hints.get_nowait()
        except queue.Empty:
            pass
        now = time.monotonic()
        for manager_id, first in list(self._pending.items()):
            if now - first >= self.debounce_s:
                del self._pending[manager_id]
                try:
                    self.on_hint(manager_id)
                except DatabaseError as exc:
                    logger.warning("could not ask for a poll of manager %s: %s", manager_id, exc)

    def run(self, stop: threading.Event) -> None:
        """Until `stop` is set: refresh every `refresh_s`, act on hints in between. A
        database error stops every listener (the leases may be gone with the connection)
        and starts over at the next refresh; polling goes on meanwhile."""
        next_refresh = 0.0
        try:
            while not stop.is_set():
                if time.monotonic() >= next_refresh:
                    next_refresh = time.monotonic() + self.refresh_s
                    try:
                        self.refresh()
                    except DatabaseError as exc:
                        logger.warning("event listeners: database unavailable (%s)", exc)
                        self.stop_all()
                        close_old_connections()
                        connection.close()
                self.drain(wait_s=min(0.2, self.debounce_s))
        finally:
            self.stop_all()
            connection.close()  # the leases go with it, for another process to take
