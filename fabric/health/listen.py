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

A burst that goes on (an event storm) is held to one poll per `min_interval_s` for each
manager, the hints that come meanwhile folded into one trailing poll, so that none is lost.

A Listener reconnects with exponential back-off (BACKOFF_MIN_S to BACKOFF_MAX_S, with
jitter), resuming after the last event id it saw. The back-off starts over only after a
stream stayed open STREAM_STABLE_S: a service that answers and hangs up at once is a
failure like any other, not a reason to reconnect at once for ever. A stream opened
without a Last-Event-ID (a listener started, restarted or taken over) asks for one poll,
for what happened while nobody listened. A permanent error (a refused stored token) is
asked again every BACKOFF_MAX_S and logged at WARNING once; a manager that offers no
events is asked again every RECHECK_S (its firmware may be updated). Anything else a
listener meets (a driver's bug, a malformed answer) is logged by its type and retried with
back-off, and a listener thread found dead is started again at the next refresh: whoever
holds the lease listens. Messages are the drivers' DriverError texts, which never hold a
credential.

If PostgreSQL drops a supervisor's session without its noticing, another process may take
the lease while the first still listens, until the first's next refresh fails: for that
while both ask for polls (hints, so a few duplicate polls at most).
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
STREAM_STABLE_S = 30.0  # a stream open this long starts the back-off over when it ends
RECHECK_S = 300.0  # a manager without events is asked again this often
LEASE_NAMESPACE = 0x5E_E17  # the first key of the advisory locks that are these leases


class Backoff:
    """The waits before reopening one stream: doubling from BACKOFF_MIN_S to BACKOFF_MAX_S,
    starting over only after a stream that stayed open STREAM_STABLE_S."""

    def __init__(self) -> None:
        self.delay = BACKOFF_MIN_S

    def after(self, open_s: float) -> float:
        """The wait after a stream that ended (closed or failed) `open_s` after its start."""
        if open_s >= STREAM_STABLE_S:
            self.delay = BACKOFF_MIN_S
        wait, self.delay = self.delay, min(self.delay * 2, BACKOFF_MAX_S)
        return wait


class Listener(threading.Thread):
    """Reads one manager's event stream, putting its id on `hints` for each health event
    (and once for each stream it opens without a Last-Event-ID)."""

    def __init__(
        self,
        manager_id: int,
        source: EventSource,
        hints: queue.Queue[int],
        *,
        name: str,
        last_event_id: str = "",
    ) -> None:
        super().__init__(name=f"events-{manager_id}", daemon=True)
        self.manager_id = manager_id
        self.manager_name = name
        self.source = source
        self.hints = hints
        self.stopped = threading.Event()
        self.last_event_id = last_event_id
        self.connects = 0
        self._refused = ""  # the permanent error last logged at WARNING

    def run(self) -> None:
        backoff = Backoff()
        while not self.stopped.is_set():
            started = time.monotonic()
            try:
                self.connects += 1
                self._listen()
                if self.stopped.is_set():
                    return
                wait = backoff.after(time.monotonic() - started)
                logger.info(
                    "manager %s: event stream closed by the service; reopening in %.1f s",
                    self.manager_name,
                    wait,
                )
            except EventsNotOffered as exc:
                logger.info("manager %s: %s", self.manager_name, exc.message)
                wait = RECHECK_S
            except DriverError as exc:
                if exc.permanent:
                    wait = BACKOFF_MAX_S
                    self._say_refused(exc.message)
                else:
                    wait = backoff.after(time.monotonic() - started)
                    logger.warning(
                        "manager %s: event stream down (%s); reopening in %.1f s, polling "
                        "meanwhile",
                        self.manager_name,
                        exc.message,
                        wait,
                    )
            except Exception as exc:  # a bug or a malformed answer must not end the thread
                wait = backoff.after(time.monotonic() - started)
                logger.warning(
                    "manager %s: event listener failed (%s); reopening in %.1f s, polling "
                    "meanwhile",
                    self.manager_name,
                    type(exc).__name__,  # the type only: its text may hold a header or URL
                    wait,
                )
            self.stopped.wait(wait * random.uniform(0.8, 1.2))

    def _listen(self) -> None:
        """One stream, from opening to its end (raises what the source raises)."""
        resumed, opened = bool(self.last_event_id), False
        for event in self.source.event_stream(last_event_id=self.last_event_id):
            if not opened:
                opened, self._refused = True, ""
                if not resumed:
                    # Nothing replays what happened before: one poll reads it.
                    logger.info(
                        "manager %s: event stream open without a Last-Event-ID; its health "
                        "is polled once for what came before",
                        self.manager_name,
                    )
                    self.hints.put(self.manager_id)
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

    def _say_refused(self, message: str) -> None:
        """A permanent error: at WARNING the first time, then quietly until it changes."""
        level = logging.DEBUG if message == self._refused else logging.WARNING
        self._refused = message
        logger.log(
            level,
            "manager %s: event stream refused (%s); asked again every %.0f s, polling meanwhile",
            self.manager_name,
            message,
            BACKOFF_MAX_S,
        )

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
    hints into `on_hint(manager_id)` calls: one per burst, and at most one per
    `min_interval_s` for each manager (hints meanwhile make one trailing call). `clock` is
    for tests."""

    def __init__(
        self,
        *,
        on_hint: Callable[[int], None],
        debounce_s: float = 1.0,
        refresh_s: float = 15.0,
        min_interval_s: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.on_hint = on_hint
        self.debounce_s = debounce_s
        self.refresh_s = refresh_s
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.hints: queue.Queue[int] = queue.Queue()
        self.listeners: dict[int, tuple[Listener, str]] = {}
        self._pending: dict[int, float] = {}
        self._hinted: dict[int, float] = {}  # when on_hint was last called, by manager
        self._no_driver: dict[int, str] = {}  # the last "no driver" message logged

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
                if self._no_driver.get(manager.pk) != exc.message:  # not every refresh
                    self._no_driver[manager.pk] = exc.message
                    logger.info("manager %s: no driver to listen with (%s)", manager.name, exc)
                continue
            self._no_driver.pop(manager.pk, None)
            if source is not None:
                wanted[manager.pk] = (manager, source, _fingerprint(manager))
        resume: dict[int, str] = {}  # dead listeners whose lease is still held
        for manager_id, (listener, fingerprint) in list(self.listeners.items()):
            if manager_id not in wanted or wanted[manager_id][2] != fingerprint:
                self._stop(manager_id)
                self._lease(manager_id, take=False)
            elif not listener.is_alive():
                logger.warning(
                    "manager %s: its event listener had stopped; starting it again",
                    listener.manager_name,
                )
                del self.listeners[manager_id]
                resume[manager_id] = listener.last_event_id
        for manager_id, (manager, source, fingerprint) in wanted.items():
            if manager_id in self.listeners:
                continue
            # The lock is re-entrant: taken twice, it would need two unlocks to free.
            if manager_id not in resume and not self._lease(manager_id, take=True):
                continue
            listener = Listener(
                manager_id,
                source,
                self.hints,
                name=manager.name,
                last_event_id=resume.get(manager_id, ""),
            )
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
        first hint is `debounce_s` old and whose last call is `min_interval_s` old."""
        try:
            manager_id = self.hints.get(timeout=wait_s)
            while True:
                self._pending.setdefault(manager_id, self.clock())
                manager_id = self.hints.get_nowait()
        except queue.Empty:
            pass
        now = self.clock()
        for manager_id, first in list(self._pending.items()):
            last = self._hinted.get(manager_id)
            if now - first >= self.debounce_s and (
                last is None or now - last >= self.min_interval_s
            ):
                del self._pending[manager_id]
                self._hinted[manager_id] = now
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
