"""The EventService: Composer's events as Redfish server-sent events, under Daphne (the
server `make run` uses) with the real Redis fan-out, each caller hearing only what it may
see; a reconnect with Last-Event-ID misses nothing; no push subscriptions."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.db import connection
from django.test import Client

from composer.choices import CompositionState
from composer.events import events_visible
from composer.models import Job
from composer.redfish.sse import blocks_of
from composer.services.compositions import composition_decompose
from composer.services.health_poll import health_poll_run
from fabric.models import FabricManager
from fabric.simulator.faults import fault_inject
from tests.composer.redfish.conftest import RedfishClient
from tests.factories.composer import PASSWORD
from tests.support.compose import composed
from tests.support.daphne import daphne_running

V1 = "/redfish/v1"
SSE = f"{V1}/EventService/SSE"
L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


# A keep-alive every second; a pool of 4 database connections, that a request waits 5 s
# for: streams that held a connection each would starve the service.
SERVER_ENV = {
    "COMPOSER_EVENTS_HEARTBEAT_S": "1",
    "COMPOSER_DB_POOL_MAX_SIZE": "4",
    "COMPOSER_DB_POOL_TIMEOUT_S": "5",
}
POOL_SIZE = 4


@pytest.fixture(scope="module")
def server(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Daphne on the tests' database (SERVER_ENV); its log is checked for tracebacks when
    the module is done (a client leaving must end its stream cleanly)."""
    log_path = tmp_path_factory.mktemp("daphne") / "daphne.log"
    before = {name: os.environ.get(name) for name in SERVER_ENV}
    os.environ.update(SERVER_ENV)
    try:
        with daphne_running(connection.settings_dict, log_path=log_path) as port:
            yield Server(f"http://127.0.0.1:{port}", log_path)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    log = log_path.read_text(errors="replace")
    assert "Traceback" not in log and "Warning" not in log, log


class Server:
    def __init__(self, url: str, log_path: Path) -> None:
        self.url, self.log_path = url, log_path

    def login(self, user: Any) -> str:
        answer = requests.post(
            f"{self.url}{V1}/SessionService/Sessions",
            json={"UserName": user.username, "Password": PASSWORD},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.headers["X-Auth-Token"])


class Stream:
    """An open SSE stream, read on a thread: `messages` gets (id, Event) and ("", comment)."""

    def __init__(self, url: str, token: str, last_event_id: str = "") -> None:
        headers = {"Accept": "text/event-stream", "X-Auth-Token": token}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self.response = requests.get(url, headers=headers, stream=True, timeout=(5, 30))
        self.messages: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        event_id, data = "", []
        try:
            for raw in self.response.iter_lines():
                line = raw.decode()
                if line.startswith(":"):
                    self.messages.put(("", line[1:].strip()))
                elif line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    self.messages.put((event_id, json.loads("\n".join(data))))
                    event_id, data = "", []
        except Exception:  # closed by the test
            return

    def events(self, *, until: Any, timeout_s: float = 20.0) -> list[tuple[int, Any]]:
        """The events read until `until(events so far)` holds (comments skipped)."""
        found: list[tuple[int, Any]] = []
        deadline = time.monotonic() + timeout_s
        while not until(found):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; got {found}"
            try:
                event_id, body = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if event_id:
                found.append((int(event_id), body))
        return found

    def comments(self, count: int, timeout_s: float = 10.0) -> list[Any]:
        """Wait for `count` comments; return the events read meanwhile."""
        seen, events = 0, []
        deadline = time.monotonic() + timeout_s
        while seen < count:
            event_id, body = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if event_id:
                events.append((int(event_id), body))
            else:
                seen += 1
        return events

    def close(self) -> None:
        self.response.close()


def _records(events: list[tuple[int, Any]]) -> list[tuple[str, str]]:
    """(message name, origin) of every record, in order."""
    return [
        (r["MessageId"].rsplit(".", 1)[-1], r["OriginOfCondition"]["@odata.id"])
        for _id, body in events
        for r in body["Events"]
    ]


def _has(origin: str, message: str) -> Any:
    return lambda events: (message, origin) in _records(events)


@pytest.mark.django_db(transaction=True)
def test_the_stream_needs_a_login(server: Server) -> None:
    refused = requests.get(f"{server.url}{SSE}", timeout=10)
    assert refused.status_code == 401
    assert refused.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(
        "NoValidSession"
    )
    wrong = requests.get(f"{server.url}{SSE}", headers={"X-Auth-Token": "nope"}, timeout=10)
    assert wrong.status_code == 401


@pytest.mark.django_db(transaction=True)
def test_a_compose_and_a_fault_reach_operators_and_their_tenant_never_another(
    server: Server, synced: FabricManager, admin_user: Any, alice: Any, carol: Any, acme: Any
) -> None:
    streams = {
        user.username: Stream(f"{server.url}{SSE}", server.login(user))
        for user in (admin_user, alice, carol)
    }
    try:
        for stream in streams.values():
            assert stream.response.status_code == 200
            assert stream.response.headers["Content-Type"].startswith("text/event-stream")
            stream.comments(1)  # open, and in its groups

        ready = composed(tenant=acme, user=alice, name="c1", spec=L40S)
        system = f"{V1}/Systems/{ready.pk}"
        heard: dict[str, list[tuple[int, Any]]] = {"admin": [], "alice": []}
        for name in ("admin", "alice"):
            got = streams[name].events(until=_has(system, "ResourceStateChanged"))
            heard[name] += got
            assert ("ResourceCreated", system) in _records(got)
            body = got[-1][1]
            assert body["@odata.type"].startswith("#Event.v1_")
            record = next(
                r for r in body["Events"] if r["MessageId"].endswith(".ResourceStateChanged")
            )
            assert record["MessageId"].startswith("ResourceEvent.1.4.3.")
            assert record["MessageArgs"] == [system, "Enabled"]
            assert record["EventTimestamp"] and record["EventType"] == "Other"
            blocks = [o for m, o in _records(got) if m == "ResourceBlockCompositionStateChanged"]
            assert blocks and all("/ResourceBlocks/" in block for block in blocks)

        allocation = ready.allocations.get(device__kind="gpu")
        enclosure = allocation.device.enclosure
        fault_inject(
            manager=synced, target_type="enclosure", target_id=enclosure.name, action="fail"
        )
        health_poll_run(manager=synced)
        # The alert: the system's health is Critical; the composition degraded: Warning.
        wanted = {(f"ResourceStatusChanged{h}", system) for h in ("Critical", "Warning")}
        for name in ("admin", "alice"):
            heard[name] += streams[name].events(until=lambda got: wanted <= set(_records(got)))
        # Alice's records name her system, its blocks and her task, nothing of the fabric's.
        tasks = Job.objects.filter(tenant=acme).values_list("pk", flat=True)
        own = {system, *blocks_of(ready.pk), *(f"{V1}/TaskService/Tasks/{pk}" for pk in tasks)}
        assert {origin for _m, origin in _records(heard["alice"])} == own
        # Carol heard keep-alives, and nothing of Acme's composition or of the fabric.
        assert streams["carol"].comments(3) == []
    finally:
        for stream in streams.values():
            stream.close()


@pytest.mark.django_db(transaction=True)
def test_last_event_id_resumes_with_everything_missed(
    server: Server, synced: FabricManager, alice: Any, acme: Any
) -> None:
    token = server.login(alice)
    first = Stream(f"{server.url}{SSE}", token)
    first.comments(1)
    ready = composed(tenant=acme, user=alice, name="c1", spec=L40S)
    system = f"{V1}/Systems/{ready.pk}"
    seen = first.events(until=_has(system, "ResourceStateChanged"))
    first.close()
    last = seen[-1][0]

    # Away: the composition is decomposed (the job runs eagerly, here).
    composition_decompose(composition=ready, actor=alice)
    ready.refresh_from_db()
    assert ready.state == CompositionState.RELEASED

    again = Stream(f"{server.url}{SSE}", token, last_event_id=str(last))
    try:
        missed = again.events(until=_has(system, "ResourceRemoved"))
    finally:
        again.close()
    ids = [event_id for event_id, _body in missed]
    assert ids == sorted(ids) and ids[0] > last
    # Every event of Acme's after the last one seen, and nothing else, in order (those
    # with a Redfish record: here, every one).
    expected = list(events_visible(alice, since=last).values_list("id", flat=True))
    assert ids == expected[: len(ids)]


@pytest.mark.django_db(transaction=True)
def test_idle_streams_hold_no_database_connection(server: Server, alice: Any) -> None:
    token = server.login(alice)
    streams = [Stream(f"{server.url}{SSE}", token) for _ in range(POOL_SIZE + 2)]
    try:
        for stream in streams:
            stream.comments(2)  # open, and idle through a keep-alive
        started = time.monotonic()
        answer = requests.get(
            f"{server.url}{V1}/EventService", headers={"X-Auth-Token": token}, timeout=30
        )
        assert answer.status_code == 200
        assert time.monotonic() - started < 3, "the request waited for a database connection"
    finally:
        for stream in streams:
            stream.close()


@pytest.mark.django_db
def test_the_event_service_offers_the_stream_and_takes_no_subscriptions(
    alice: Any, redfish_as: Any
) -> None:
    session: RedfishClient = redfish_as(alice)
    service = session.get(f"{V1}/EventService").json()
    assert service["ServerSentEventUri"] == SSE
    assert service["ServiceEnabled"] is True
    assert not any(service["SSEFilterPropertiesSupported"].values())
    assert service["RegistryPrefixes"] == ["Composition", "ResourceEvent"]
    subscriptions = session.get(f"{V1}/EventService/Subscriptions").json()
    assert subscriptions["Members"] == [] and subscriptions["Members@odata.count"] == 0
    assert SSE in subscriptions["Description"]
    refused = session.post(f"{V1}/EventService/Subscriptions", {"Destination": "http://x"})
    assert refused.status_code == 405
    assert refused["Allow"] == "GET, HEAD"
    filtered = session.get(f"{SSE}?$filter=MessageId eq 'x'")
    assert filtered.status_code == 501
    bad = session.get(SSE, **{"Last-Event-ID": "yesterday"})
    assert bad.status_code == 400
    registry = session.get(f"{V1}/Registries/ResourceEvent").json()["Location"][0]
    assert (
        registry["PublicationUri"] == "https://redfish.dmtf.org/registries/ResourceEvent.1.4.3.json"
    )
    assert Client().get(f"{V1}/EventService").status_code == 401
