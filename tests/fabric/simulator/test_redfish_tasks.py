"""The simulated world served as Redfish answers a composition that takes long with 202 and a
task monitor, which the Redfish driver follows to the end (its task-following, end to end)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.simulator import store
from fabric.simulator.redfish import tasks
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import Service, make_server, stop
from tests.fabric.simulated_world import simulated_manager

pytestmark = pytest.mark.django_db(transaction=True)

TASK_AFTER_S = 0.2  # the server's threshold; the bind latency is set on either side of it


@pytest.fixture
def served(settings: Any) -> Iterator[tuple[RedfishDriver, Service]]:
    """The world "tasked" served with latencies at their real scale, all 0 but "bind"."""
    settings.COMPOSER_SIMULATOR_LATENCY_SCALE = 1.0
    simulated_manager(name="tasked", fabric="tasked")
    fabric = store.fabric_get("tasked")
    for operation in store.OPERATIONS:
        store.latency_set(fabric=fabric, operation=operation, ms=0)
    server = make_server("tasked", task_after_s=TASK_AFTER_S)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    driver = RedfishDriver(
        endpoint=f"http://{host!s}:{port}", settings={"timeout_s": 5}, credentials=credentials()
    )
    try:
        yield driver, server.RequestHandlerClass.service  # type: ignore[attr-defined]
    finally:
        stop(server)
        thread.join(timeout=5)


def _bind_first_gpu(driver: RedfishDriver) -> tuple[str, str]:
    inventory = driver.discover()
    gpu = next(d for d in inventory.devices if d.kind == "gpu").external_id
    host = inventory.hosts[0].external_id
    driver.bind(device_id=gpu, host_id=host)
    return gpu, host


def _bind_latency(ms: int) -> None:
    store.latency_set(fabric=store.fabric_get("tasked"), operation="bind", ms=ms)


def test_a_long_bind_is_a_task_the_driver_follows_to_the_end(
    served: tuple[RedfishDriver, Service],
) -> None:
    driver, service = served
    _bind_latency(int(TASK_AFTER_S * 1000) + 200)
    gpu, host = _bind_first_gpu(driver)
    assert (gpu, host) in {(b.device_id, b.host_id) for b in driver.bindings()}
    [task] = service.tasks.held.values()
    assert task.body()["TaskState"] == "Completed" and task.answer is not None
    assert task.answer[0] == 200
    session = driver._session()
    listed = session.request("GET", tasks.TASKS).body
    assert listed["Members"] == [{"@odata.id": task.path}]
    assert session.request("GET", task.path).body["TaskMonitor"] == task.monitor


def test_a_refused_task_is_a_permanent_error_with_the_managers_message(
    served: tuple[RedfishDriver, Service],
) -> None:
    driver, service = served
    _bind_latency(int(TASK_AFTER_S * 1000) + 100)
    store.operation_fault_set(fabric=store.fabric_get("tasked"), operation="bind", mode="permanent")
    with pytest.raises(DriverError) as refused:
        _bind_first_gpu(driver)
    assert refused.value.permanent and "409" in refused.value.message
    assert "injected" in refused.value.message  # the Resolution of the GeneralError
    [task] = service.tasks.held.values()
    body = task.body()
    assert body["TaskState"] == "Exception" and body["TaskStatus"] == "Critical"
    [message] = body["Messages"]
    assert message["MessageId"].endswith(".GeneralError") and "injected" in message["Resolution"]
    assert driver.bindings() == []


def test_a_quick_bind_is_answered_at_once(served: tuple[RedfishDriver, Service]) -> None:
    driver, service = served
    _bind_latency(0)
    gpu, host = _bind_first_gpu(driver)
    assert (gpu, host) in {(b.device_id, b.host_id) for b in driver.bindings()}
    assert not service.tasks.held
