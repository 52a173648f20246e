"""The simulated world served as Redfish pushes what a real manager announces: a change of an
element's health, a binding made or undone, as ResourceEvent messages on its EventService's
server-sent event stream, which the Redfish driver reads and the listener turns into a
health poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from composer.management.commands.fabric_events import poll_now
from fabric.choices import AlertSeverity
from fabric.drivers import registry
from fabric.drivers.events import DriverEvent
from fabric.drivers.redfish import sessions
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.health import listen
from fabric.health.listen import Supervisor
from fabric.models import Alert, FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.models import SimulatedElement
from fabric.simulator.redfish import events, paths
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import KEEP_ALIVE_S, Service, make_server, stop
from fabric.simulator.redfish.world import Element, World
from tests.fabric.simulated_world import simulated_manager
from tests.support.redfish_sse import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Service]]:
    """The world "evented" served, with the server's state at hand (its open streams)."""
    monkeypatch.setattr(sessions, "_SESSIONS", type(sessions._SESSIONS)())
    simulated_manager(name="evented", fabric="evented")
    server = make_server("evented")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"http://{host!s}:{port}", server.RequestHandlerClass.service  # type: ignore[attr-defined]
    finally:
        stop(server)
        thread.join(timeout=5)


class Reader:
    """A Redfish driver's event stream read on a thread of its own."""

    def __init__(self, url: str, last_event_id: str = "") -> None:
        self.driver = RedfishDriver(
            endpoint=url, settings={"timeout_s": 5}, credentials=credentials()
        )
        self.events: list[DriverEvent] = []
        self.thread = threading.Thread(target=self._read, args=(last_event_id,), daemon=True)
        self.thread.start()

    def _read(self, last_event_id: str) -> None:
        for event in self.driver.event_stream(last_event_id=last_event_id):
            if not getattr(event, "opened", False):  # the manager's events, not a marker
                self.events.append(event)

    def messages(self) -> list[tuple[str, str]]:
        return [(e.message_id.rsplit(".", 1)[-1], e.origin) for e in self.events]

    def close(self) -> None:
        """Close the stream: the blocked read wakes at once, not at the service's next
        keep-alive line (KEEP_ALIVE_S away)."""
        began = time.monotonic()
        self.driver.close_event_stream()
        self.thread.join(timeout=KEEP_ALIVE_S)
        assert not self.thread.is_alive()
        assert time.monotonic() - began < KEEP_ALIVE_S / 2


def _gpu(kind: str = "gpu") -> SimulatedElement:
    return (
        SimulatedElement.objects.filter(fabric__name="evented", kind="device", data__kind=kind)
        .order_by("external_id")
        .first()
    )


def _path(device: SimulatedElement) -> str:
    return paths.device(device.external_id, device.data["kind"], device.data["enclosure_id"])


def _fault(element: SimulatedElement, action: str) -> None:
    """What `sim_fault` and the fault page do to the simulator's state."""
    store.element_fault_set(
        fabric=store.fabric_get("evented"),
        kind=element.kind,
        external_id=element.external_id,
        action=action,
    )


def _heard(
    served: tuple[str, Service], element: SimulatedElement, action: str, count: int
) -> Reader:
    """A stream opened, `action` done to `element`, `count` events read, the stream closed."""
    url, service = served
    reader = Reader(url)
    try:
        wait_for(lambda: service.events.streams == 1)
        _fault(element, action)
        wait_for(lambda: len(reader.events) == count)
    finally:
        reader.close()
    return reader


def test_the_event_service_offers_a_server_sent_event_stream(served: tuple[str, Any]) -> None:
    url, _service = served
    driver = RedfishDriver(endpoint=url, settings={"timeout_s": 5}, credentials=credentials())
    session = driver._session()
    root = session.request("GET", "/redfish/v1/").body
    assert root["EventService"] == {"@odata.id": events.SERVICE}
    service = session.request("GET", events.SERVICE).body
    assert service["ServerSentEventUri"] == events.SSE and service["ServiceEnabled"] is True


def test_a_fault_and_a_bind_are_pushed_as_resource_events(served: tuple[str, Service]) -> None:
    url, service = served
    gpu = _gpu()
    reader = Reader(url)
    try:
        wait_for(lambda: service.events.streams == 1)
        _fault(gpu, "fail")
        wait_for(lambda: len(reader.events) == 1)
        assert reader.messages() == [("ResourceStatusChangedCritical", _path(gpu))]
        assert reader.events[0].health_relevant and reader.events[0].event_id == "1"
        assert _path(gpu) in {d.external_id for d in reader.driver.discover().devices}

        _fault(gpu, "recover")
        simulated = SimulatedDriver(settings={"fabric": "evented"})
        host = simulated.discover().hosts[0].external_id
        simulated.bind(device_id=_gpu("nvme").external_id, host_id=host)
        wait_for(lambda: len(reader.events) == 3)
    finally:
        reader.close()
    assert set(reader.messages()[1:]) == {
        ("ResourceStatusChangedOK", _path(gpu)),
        ("ResourceChanged", paths.system(host)),
    }
    assert [e.event_id for e in reader.events] == ["1", "2", "3"]


def test_a_degraded_link_is_announced_by_both_its_ports(served: tuple[str, Service]) -> None:
    link = SimulatedElement.objects.filter(fabric__name="evented", kind="link").first()
    assert link is not None
    reader = _heard(served, link, "degrade", 2)
    origins = {origin for message, origin in reader.messages()}
    assert {m for m, _o in reader.messages()} == {"ResourceStatusChangedWarning"}
    assert all("/Ports/" in o for o in origins) and len(origins) == 2


def test_a_stream_reopened_after_an_event_id_gets_what_it_missed(
    served: tuple[str, Service],
) -> None:
    url, service = served
    drive = _gpu("nvme")
    first = _heard(served, _gpu(), "degrade", 1)
    _fault(drive, "fail")  # while it is away
    wait_for(lambda: len(service.events.log.held) == 2)
    again = Reader(url, last_event_id=first.events[-1].event_id)
    try:
        wait_for(lambda: len(again.events) == 1)
    finally:
        again.close()
    assert again.messages() == [("ResourceStatusChangedCritical", _path(drive))]
    assert again.events[0].event_id == "2"


def test_the_listener_turns_a_pushed_fault_into_a_poll_that_raises_the_alert(
    served: tuple[str, Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a GPU fails in the simulator; the served world pushes the event; the
    listener of the Redfish manager asks for a poll at once (no periodic poll runs here);
    the poll reads the GPU critical and opens the alert."""
    url, service = served
    monkeypatch.setattr(listen, "BACKOFF_MIN_S", 0.05)
    monkeypatch.setattr(registry, "manager_credentials", lambda manager: credentials())
    FabricManager.objects.filter(name="evented").update(is_enabled=False)  # the world's own
    manager = FabricManager.objects.create(
        name="rf", driver="redfish", endpoint=url, settings={"timeout_s": 5}
    )
    inventory_sync(manager=manager)
    stopping = threading.Event()
    supervisor = Supervisor(on_hint=poll_now, debounce_s=0.2, refresh_s=60)
    thread = threading.Thread(target=supervisor.run, args=(stopping,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: service.events.streams == 1)
        assert not Alert.objects.filter(manager=manager).exists()
        _fault(_gpu(), "fail")
        wait_for(
            lambda: Alert.objects.filter(
                manager=manager, source_type="device", severity=AlertSeverity.CRITICAL
            ).exists(),
            20,
        )
    finally:
        stopping.set()
        thread.join(timeout=10)
    manager.refresh_from_db()
    assert manager.last_health_poll_at is not None
    assert not thread.is_alive()


def test_an_element_added_or_removed_is_announced_as_created_or_removed() -> None:
    def world(*elements: Element) -> World:
        built = World(fabric="w")
        for element in elements:
            built.by_id[element.external_id] = element
        return built

    switch = Element("switch", "sw-a", {}, "")
    host = Element("host", "h-1", {}, "")
    records = events.changes(world(switch), world(host))
    assert [(r["MessageId"], r["OriginOfCondition"]["@odata.id"]) for r in records] == [
        ("ResourceEvent.1.0.ResourceCreated", paths.system("h-1")),
        ("ResourceEvent.1.0.ResourceRemoved", paths.switch("sw-a")),
    ]
    assert events.changes(world(switch), world(switch)) == []
