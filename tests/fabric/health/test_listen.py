"""Pushed events as hints: the listeners of fabric.health.listen against the test Redfish
service, and their leases (the command that runs them: tests/composer/test_fabric_events.py)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from fabric.drivers import registry
from fabric.drivers.redfish import sessions
from fabric.health import listen
from fabric.health.listen import Listener, Supervisor
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
        assert hints.get(timeout=5) == 7
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
