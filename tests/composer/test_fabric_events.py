"""`manage.py fabric_events` against the test Redfish service and the real database: a burst
of pushed events makes one health poll of its manager, in a thread and as a process."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from composer.management.commands.fabric_events import poll_now
from fabric.credentials import encrypt
from fabric.drivers import registry
from fabric.drivers.redfish import sessions
from fabric.health import listen
from fabric.health.listen import Supervisor
from fabric.models import FabricManager
from tests.support.redfish_server import PASSWORD, USERNAME, MockService
from tests.support.redfish_sse import wait_for
from tests.support.redfish_world import V1, served_world
from tests.support.worker import database_url, spawn_logged

GPU0 = f"{V1}/CompositionService/ResourceBlocks/GPU0/Processors/GPU0"
STATUS_CHANGED = "ResourceEvent.1.3.ResourceStatusChangedCritical"
CHASSIS = ("GET", f"{V1}/Chassis")  # read once by each health poll's walk


# The command as manage.py runs it, with every logger at DEBUG (the test settings log
# nothing), so that the test sees what it logs, and that no token is among it.
RUN_AT_DEBUG = """
import logging
logging.basicConfig(level=logging.DEBUG)
import django
django.setup()
from django.core.management import call_command
call_command("fabric_events", debounce=0.3, refresh=1, min_interval=0)
"""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[MockService, str]]:
    monkeypatch.setattr(sessions, "_SESSIONS", type(sessions._SESSIONS)())
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 0.05)
    yield from served_world(tmp_path)


def burst(service: MockService) -> int:
    """Five status changes and an event that does not matter; the walks before them."""
    before = service.log.count(CHASSIS)
    for _ in range(5):
        service.events.push(STATUS_CHANGED, GPU0)
    service.events.push("TaskEvent.1.0.TaskStarted")
    return before


@pytest.mark.django_db(transaction=True)
def test_an_event_burst_makes_one_health_poll_of_its_manager(
    world: tuple[MockService, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    service, url = world
    monkeypatch.setattr(
        registry,
        "manager_credentials",
        lambda manager: {"username": USERNAME, "password": PASSWORD},
    )
    manager = FabricManager.objects.create(name="rf", driver="redfish", endpoint=url)
    FabricManager.objects.create(name="other", driver="redfish", endpoint=url, is_enabled=False)
    stop = threading.Event()
    supervisor = Supervisor(on_hint=poll_now, debounce_s=0.3, refresh_s=60, min_interval_s=0)
    thread = threading.Thread(target=supervisor.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(service.events.requests) == 1)
        assert list(supervisor.listeners) == [manager.pk], "disabled managers are not heard"
        wait_for(lambda: service.log.count(CHASSIS) == 1)  # opened afresh: one poll
        before = burst(service)
        wait_for(lambda: service.log.count(CHASSIS) == before + 1)
        time.sleep(0.6)  # two debounce windows: nothing more comes
        assert service.log.count(CHASSIS) == before + 1, "a burst makes one poll"
        manager.refresh_from_db()
        assert manager.last_health_poll_at is not None and manager.poll_requested_at is None
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive() and supervisor.listeners == {}


@pytest.mark.django_db(transaction=True)
def test_the_command_runs_as_a_process_and_polls_on_events(
    world: tuple[MockService, str], tmp_path: Path
) -> None:
    """The process `make run` starts, with the manager's stored (encrypted) credentials, its
    logs at DEBUG; the poll runs inline there (eager tasks), so its result is in the
    database."""
    if connection.vendor != "postgresql":
        pytest.skip("a second process needs the test database on a server (DATABASE_URL)")
    service, url = world
    manager = FabricManager.objects.create(
        name="rf",
        driver="redfish",
        endpoint=url,
        credentials_ciphertext=encrypt({"username": USERNAME, "password": PASSWORD}),
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "COMPOSER_TEST_EAGER": "1",
        "DATABASE_URL": database_url(connection.settings_dict),
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "fabric_events.log"
    process = spawn_logged([sys.executable, "-c", RUN_AT_DEBUG], env=env, log_path=log_path)
    try:
        wait_for(lambda: len(service.events.requests) == 1 or process.poll() is not None, 60)
        assert process.poll() is None, log_path.read_text()
        wait_for(lambda: service.log.count(CHASSIS) == 1, 30)  # opened afresh: one poll
        before = burst(service)
        wait_for(lambda: service.log.count(CHASSIS) > before, 30)
        time.sleep(0.6)
        assert service.log.count(CHASSIS) == before + 1, "a burst makes one poll"
        manager.refresh_from_db()
        assert manager.last_health_poll_at is not None and manager.last_health_poll_error == ""
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    output = log_path.read_text()
    assert code == 0, output
    assert "listening for its events" in output and "its health is polled at once" in output, output
    for token in service.tokens:
        assert token not in output
