"""The Redfish driver's pushed events: the service's server-sent event stream, read over the
driver's signed-in session, as hints that something changed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.events import DriverEvent, EventsNotOffered, event_source
from fabric.drivers.redfish import events
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.drivers.redfish.events import health_relevant, parse
from tests.fabric.drivers.redfish.conftest import driver_for
from tests.support.redfish_server import MockService
from tests.support.redfish_sse import wait_for
from tests.support.redfish_world import V1, served_world

GPU0 = f"{V1}/CompositionService/ResourceBlocks/GPU0/Processors/GPU0"


@contextmanager
def reading(driver: RedfishDriver, last_event_id: str = "") -> Iterator[list[DriverEvent]]:
    """Read the driver's stream on a thread into a list, closed on exit."""
    found: list[DriverEvent] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            found.extend(
                e for e in driver.event_stream(last_event_id=last_event_id) if not e.opened
            )
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        driver.close_event_stream()
        thread.join(timeout=5)
    assert not thread.is_alive(), "closing the stream ends its reading"
    assert not errors, errors


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[MockService, str]]:
    """The contract's world, with its EventService, on a local port."""
    yield from served_world(tmp_path)


def test_the_redfish_driver_offers_events_and_reads_them(
    world: tuple[MockService, str],
) -> None:
    service, url = world
    driver = driver_for(url)
    assert event_source(driver) is driver
    with reading(driver) as found:
        wait_for(lambda: len(service.events.requests) == 1)
        service.events.push("ResourceEvent.1.3.ResourceStatusChangedCritical", GPU0)
        service.events.push("TaskEvent.1.0.TaskStarted")
        wait_for(lambda: len(found) == 2)
    critical, task = found
    assert (critical.event_id, critical.health_relevant, critical.origin) == ("1", True, GPU0)
    assert (task.event_id, task.health_relevant) == ("2", False)


def test_the_stream_resumes_after_the_last_event_id(world: tuple[MockService, str]) -> None:
    service, url = world
    for _ in range(3):
        service.events.push("ResourceEvent.1.3.ResourceChanged", GPU0)
    with reading(driver_for(url), last_event_id="2") as found:
        wait_for(lambda: len(found) == 1)
    assert found[0].event_id == "3", "only what was missed is replayed"
    assert service.events.requests[0]["last_event_id"] == "2"


def test_a_401_on_the_stream_signs_in_again(world: tuple[MockService, str]) -> None:
    service, url = world
    driver = driver_for(url)
    driver.discover()  # signed in
    service.events.refuse_next()  # the session expires as the stream opens
    with reading(driver) as found:
        wait_for(lambda: len(service.events.requests) == 2)
        service.events.push("ResourceEvent.1.3.ResourceRemoved", GPU0)
        wait_for(lambda: len(found) == 1)
    assert [r["allowed"] for r in service.events.requests] == ["False", "True"]
    assert service.logins() == 2


def test_a_service_without_a_server_sent_event_uri_offers_none(
    world: tuple[MockService, str],
) -> None:
    service, url = world
    del service.resources[f"{V1}/EventService"]["ServerSentEventUri"]
    with pytest.raises(EventsNotOffered, match="ServerSentEventUri"):
        next(iter(driver_for(url).event_stream()))
    assert service.events.requests == []


def test_no_token_reaches_the_logs(
    world: tuple[MockService, str], caplog: pytest.LogCaptureFixture
) -> None:
    service, url = world
    caplog.set_level(logging.DEBUG)
    driver = driver_for(url)
    driver.discover()
    service.expire_sessions()
    with reading(driver) as found:
        service.events.push("ResourceEvent.1.3.ResourceStatusChangedWarning", GPU0)
        wait_for(lambda: len(found) == 1)
    assert service.tokens, "a session was open"
    for token in service.tokens:
        assert token not in caplog.text


@pytest.mark.parametrize(
    ("record", "relevant"),
    [
        ({"MessageId": "ResourceEvent.1.3.ResourceStatusChangedOK"}, True),
        ({"MessageId": "ResourceEvent.1.0.ResourceAdded"}, True),
        ({"EventType": "Alert", "MessageId": "Contoso.1.0.FanSlow"}, True),
        ({"MessageId": "Contoso.1.0.Overheat", "MessageSeverity": "Critical"}, True),
        ({"MessageId": "TaskEvent.1.0.TaskCompletedOK", "MessageSeverity": "OK"}, False),
        ({"MessageId": "ResourceEvent.1.0.LicenseAdded"}, False),
    ],
)
def test_which_events_matter_to_health(record: dict[str, str], relevant: bool) -> None:
    assert health_relevant(record) is relevant


def test_a_message_that_is_not_json_is_skipped() -> None:
    assert parse("9", "not json") == []


def test_a_refused_stored_token_is_final_on_the_stream(world: tuple[MockService, str]) -> None:
    service, url = world
    driver = RedfishDriver(endpoint=url, credentials={"token": service.issue_token()})
    service.events.refuse_next()
    with pytest.raises(DriverError, match="refused the stored credentials") as caught:
        next(iter(driver.event_stream()))
    assert caught.value.permanent and service.logins() == 0
    assert [r["allowed"] for r in service.events.requests] == ["False"]


def test_test_connection_says_whether_the_service_pushes_events(
    world: tuple[MockService, str],
) -> None:
    """An operator reads on the manager's page whether faults show at once or on the next
    poll; the probe opens no stream to find out."""
    service, url = world
    assert "pushes events" in " ".join(driver_for(url).probe().notes)
    del service.resources[f"{V1}/EventService"]["ServerSentEventUri"]
    assert "no server-sent events" in " ".join(driver_for(url).probe().notes)
    assert service.events.requests == []


def test_a_silent_stream_past_the_idle_timeout_is_a_transient_error(
    world: tuple[MockService, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """urllib3's own ReadTimeoutError (neither requests' nor OSError) becomes the driver's
    transient error, so a listener reopens the stream instead of dying."""
    service, url = world
    monkeypatch.setattr(events, "STREAM_IDLE_S", 0.3)
    service.events.misbehave_next("silent")
    try:
        with pytest.raises(DriverError, match="sent nothing") as caught:
            list(driver_for(url).event_stream())
    finally:
        service.events.drop()
    assert not caught.value.permanent


def test_a_stream_cut_mid_chunk_is_a_transient_error(world: tuple[MockService, str]) -> None:
    service, url = world
    service.events.misbehave_next("cut")
    with pytest.raises(DriverError, match="broke off mid-message") as caught:
        list(driver_for(url).event_stream())
    assert not caught.value.permanent


def test_a_200_that_is_not_an_event_stream_is_refused_naming_its_type(
    world: tuple[MockService, str],
) -> None:
    service, url = world
    service.events.misbehave_next("json")
    with pytest.raises(DriverError, match="application/json, not text/event-stream") as caught:
        list(driver_for(url).event_stream())
    assert not caught.value.permanent


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [
        (V1, "EventService", "/redfish/v1/EventService"),
        (f"{V1}/EventService", "ServerSentEventUri", {"@odata.id": "/sse"}),
    ],
)
def test_a_malformed_event_service_offers_no_events_naming_the_field(
    world: tuple[MockService, str], path: str, field: str, value: object
) -> None:
    service, url = world
    service.resources[path][field] = value
    with pytest.raises(EventsNotOffered, match=field):
        next(iter(driver_for(url).event_stream()))
    assert service.events.requests == []
