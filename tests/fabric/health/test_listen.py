"""Pushed events as hints: the listeners of fabric.health.listen against the test Redfish
service, and their leases (the command that runs them: tests/composer/test_fabric_events.py)."""

from __future__ import annotations

import itertools
import logging
import math
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from fabric.drivers import registry
from fabric.drivers.base import DriverError
from fabric.drivers.events import STREAM_OPENED, DriverEvent
from fabric.drivers.redfish import events, sessions
from fabric.health import listen
from fabric.health.listen import Backoff, Listener, Supervisor
from fabric.models import FabricManager
from tests.fabric.drivers.redfish.conftest import driver_for
from tests.support.redfish_server import PASSWORD, USERNAME, MockService
from tests.support.redfish_sse import wait_for
from tests.support.redfish_world import V1, served_world

GPU0 = f"{V1}/CompositionService/ResourceBlocks/GPU0/Processors/GPU0"
STATUS_CHANGED = "ResourceEvent.1.3.ResourceStatusChangedCritical"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[MockService, str]]:
    monkeypatch.setattr(sessions, "_SESSIONS", type(sessions._SESSIONS)())
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 0.05)
    monkeypatch.setattr(
        registry,
        "manager_credentials",
        lambda manager: {"username": USERNAME, "password": PASSWORD},
    )
    yield from served_world(tmp_path)


def test_a_dropped_stream_reconnects_after_the_last_event_id(
    world: tuple[MockService, str],
) -> None:
    service, url = world
    hints: queue.Queue[int] = queue.Queue()
    listener = Listener(7, driver_for(url), hints, name="rf")
    listener.start()
    try:
        wait_for(lambda: len(service.events.requests) == 1)
        service.events.push(STATUS_CHANGED, GPU0)
        assert [hints.get(timeout=5), hints.get(timeout=5)] == [7, 7], "on opening, on the event"
        service.events.drop()
        service.events.push(STATUS_CHANGED, GPU0)  # while it was away
        assert hints.get(timeout=5) == 7, "what it missed is replayed on reconnect"
    finally:
        listener.stop()
        listener.join(timeout=5)
    assert [r["last_event_id"] for r in service.events.requests] == ["", "1"]
    assert not listener.is_alive()


def test_a_service_without_events_is_polled_only(world: tuple[MockService, str]) -> None:
    service, url = world
    del service.resources[f"{V1}/EventService"]["ServerSentEventUri"]
    hints: queue.Queue[int] = queue.Queue()
    listener = Listener(7, driver_for(url), hints, name="rf")
    listener.start()
    try:
        wait_for(lambda: listener.connects == 1)
        time.sleep(0.3)  # many back-offs' worth: it must not keep asking
        assert listener.connects == 1, "asked again only after RECHECK_S"
    finally:
        listener.stop()
        listener.join(timeout=5)
    assert hints.empty() and service.events.requests == []


@pytest.mark.django_db(transaction=True)
def test_one_process_listens_to_a_manager(world: tuple[MockService, str]) -> None:
    """Two supervisors (two connections, as two processes have): one holds the lease.
    (On SQLite, the single-machine default, there is one listening process and no lease.)"""
    if connection.vendor != "postgresql":
        pytest.skip("the lease is a PostgreSQL advisory lock; SQLite runs one listener")
    _service, url = world
    FabricManager.objects.create(name="rf", driver="redfish", endpoint=url)
    first, second = (Supervisor(on_hint=lambda _: None) for _ in range(2))
    held = threading.Event()
    done = threading.Event()

    def hold() -> None:
        first.refresh()
        held.set()
        done.wait(10)
        first.stop_all()
        connection.close()  # the lease goes with the connection

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        assert held.wait(10)
        second.refresh()
        assert len(first.listeners) == 1 and second.listeners == {}
    finally:
        done.set()
        thread.join(timeout=10)
    second.refresh()
    assert len(second.listeners) == 1, "free again once the holder is gone"
    second.stop_all()


class Scripted:
    """An event source that plays one step per connect (the last one again after): an
    exception is raised, a list of events is yielded and the stream then ends."""

    def __init__(self, *steps: BaseException | Iterable[DriverEvent]) -> None:
        self.steps = steps
        self.calls: list[str] = []

    def event_stream(self, *, last_event_id: str = "") -> Iterator[DriverEvent]:
        self.calls.append(last_event_id)
        step = self.steps[min(len(self.calls), len(self.steps)) - 1]
        if isinstance(step, BaseException):
            raise step
        yield from step

    def close_event_stream(self) -> None:
        pass


def ended(listener: Listener) -> bool:
    """Stop `listener`; whether its thread ended."""
    listener.stop()
    listener.join(timeout=5)
    return not listener.is_alive()


@contextmanager
def running(listener: Listener) -> Iterator[Listener]:
    """`listener` started, and stopped on exit (its thread must end)."""
    listener.start()
    try:
        yield listener
    finally:
        assert ended(listener)


@pytest.mark.parametrize("kind", ["silent", "cut"])
def test_a_stream_silent_past_its_timeout_or_cut_mid_chunk_is_reopened(
    world: tuple[MockService, str], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """urllib3's own errors (a read timeout, a broken chunk) once ended the thread, and with
    it the listening, while its process kept the lease."""
    service, url = world
    monkeypatch.setattr(events, "STREAM_IDLE_S", 0.3)
    service.events.misbehave_next(kind)
    hints: queue.Queue[int] = queue.Queue()
    with running(Listener(7, driver_for(url), hints, name="rf")) as listener:
        wait_for(lambda: len(service.events.requests) == 1)
        if kind == "silent":
            time.sleep(0.5)  # past the idle timeout
            service.events.drop()  # the test service's thread lets go of it
        wait_for(lambda: len(service.events.requests) == 2)
        service.events.push(STATUS_CHANGED, GPU0)
        wait_for(lambda: hints.qsize() >= 2)  # its opening (no event id yet), the event
        assert listener.is_alive()


def test_a_malformed_event_service_leaves_the_listener_running(
    world: tuple[MockService, str],
) -> None:
    service, url = world
    service.resources[V1]["EventService"] = f"{V1}/EventService"  # a string, not a link
    with running(Listener(7, driver_for(url), queue.Queue(), name="rf")) as listener:
        wait_for(lambda: listener.connects == 1)
        time.sleep(0.2)
        assert listener.is_alive() and listener.connects == 1, "asked again after RECHECK_S"
    assert service.events.requests == []


def test_an_unexpected_error_is_logged_by_its_type_and_retried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 0.01)
    source = Scripted(KeyError("X-Auth-Token: secret"), [STREAM_OPENED])
    caplog.set_level(logging.WARNING, logger="fabric.health.listen")
    with running(Listener(7, source, queue.Queue(), name="rf")) as listener:
        wait_for(lambda: listener.connects >= 2)
        assert listener.is_alive()
    assert "event listener failed (KeyError)" in caplog.text and "secret" not in caplog.text


def test_a_service_that_hangs_up_at_once_is_reopened_with_back_off(
    world: tuple[MockService, str],
) -> None:
    """It once answered 200 and closed, and was reopened every BACKOFF_MIN_S for ever."""
    service, url = world
    service.events.misbehave_next("hang_up", 1000)
    with running(Listener(7, driver_for(url), queue.Queue(), name="rf")):
        time.sleep(1.0)  # waits of 0.05, 0.1, 0.2, 0.4 (±20 %): five opens at most
    assert 2 <= len(service.events.requests) <= 6, len(service.events.requests)


def test_the_back_off_starts_over_only_after_a_stream_that_stayed_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 1.0)
    monkeypatch.setattr(listen, "BACKOFF_MAX_S", 8.0)
    backoff = Backoff()
    assert [backoff.after(0.1) for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff.after(listen.STREAM_STABLE_S) == 1.0
    assert backoff.after(1.0) == 2.0


def test_a_refused_token_waits_the_longest_and_warns_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 0.01)
    monkeypatch.setattr(listen, "BACKOFF_MAX_S", 0.1)
    refused = DriverError("the stored credentials were refused (401).", permanent=True)
    caplog.set_level(logging.DEBUG, logger="fabric.health.listen")
    with running(Listener(7, Scripted(refused), queue.Queue(), name="rf")) as listener:
        time.sleep(0.45)  # BACKOFF_MAX_S between tries: four or five of them
        assert 2 <= listener.connects <= 6, listener.connects
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "credentials were refused" in warnings[0].getMessage()


def test_a_stream_opened_without_a_last_event_id_asks_for_one_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing replays what happened before it opened (a listener restarted, a lease taken
    over): one poll reads it. A resumed stream replays, and asks for none."""
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 0.01)
    quiet = [STREAM_OPENED, DriverEvent(event_id="4", health_relevant=False)]
    for last, wanted in (("", 1), ("3", 0)):
        hints: queue.Queue[int] = queue.Queue()
        source = Scripted(quiet, DriverError("down", permanent=True))
        listener = Listener(7, source, hints, name="rf", last_event_id=last)
        with running(listener):
            wait_for(lambda: len(source.calls) == 2)  # noqa: B023
        assert hints.qsize() == wanted and listener.last_event_id == "4"


def test_an_event_storm_polls_once_per_interval_and_loses_no_hint() -> None:
    now = [0.0]
    polls: list[float] = []
    supervisor = Supervisor(
        on_hint=lambda _: polls.append(now[0]),
        debounce_s=0.5,
        min_interval_s=2.0,
        clock=lambda: now[0],
    )
    for tick in range(50):  # ten hints a second for five seconds
        now[0] = tick / 10
        supervisor.hints.put(7)
        supervisor.drain(wait_s=0)
    while now[0] < 10:
        now[0] += 0.1
        supervisor.drain(wait_s=0)
    assert len(polls) <= math.ceil(5 / 2.0) + 1, polls
    assert all(b - a >= 2.0 - 1e-9 for a, b in itertools.pairwise(polls)), polls
    assert polls[-1] >= 4.9, "the last hint has its poll"


@pytest.mark.django_db(transaction=True)
def test_a_listener_thread_that_died_is_started_again(world: tuple[MockService, str]) -> None:
    _service, url = world
    manager = FabricManager.objects.create(name="rf", driver="redfish", endpoint=url)
    supervisor = Supervisor(on_hint=lambda _: None)
    supervisor.refresh()
    try:
        dead, _ = supervisor.listeners[manager.pk]
        dead.last_event_id = "5"
        dead.stop()  # as a thread that died would, it holds the lease and listens no more
        dead.join(timeout=5)
        supervisor.refresh()
        listener, _ = supervisor.listeners[manager.pk]
        assert listener is not dead and listener.is_alive()
        assert listener.last_event_id == "5", "it resumes where the dead one stopped"
    finally:
        supervisor.stop_all()
    if connection.vendor == "postgresql":  # the lease was taken once: one unlock frees it
        supervisor._lease(manager.pk, take=False)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = "
                "pg_backend_pid()"
            )
            assert cursor.fetchone()[0] == 0


@pytest.mark.django_db
def test_a_manager_without_a_driver_is_logged_once_per_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = FabricManager.objects.create(name="gone", driver="nosuch", endpoint="http://x")
    supervisor = Supervisor(on_hint=lambda _: None)
    caplog.set_level(logging.INFO, logger="fabric.health.listen")
    for _ in range(3):
        supervisor.refresh()
    FabricManager.objects.filter(pk=manager.pk).update(driver="other")
    supervisor.refresh()
    said = [r.getMessage() for r in caplog.records if "no driver" in r.getMessage()]
    assert len(said) == 2 and "'nosuch'" in said[0] and "'other'" in said[1], said
