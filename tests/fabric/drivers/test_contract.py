"""The contract every fabric driver keeps, run against each driver.

Each driver plugs in through a harness that builds a small fabric and exposes the knobs
a test needs (fault an element, fail the next calls of an operation, set a latency). A
vendor driver adds a harness (against an emulator or recorded responses) to HARNESSES;
tests that need a knob the harness lacks are skipped for it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections

from fabric.drivers.base import (
    Binding,
    DriverError,
    DriverTimeout,
    FabricDriver,
    HealthReading,
    Inventory,
)
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.drivers.registry import get_driver
from fabric.services.sync import inventory_sync
from fabric.simulator import driver as simulated_driver
from fabric.simulator import store
from fabric.simulator.models import SimulatedElement
from fabric.simulator.redfish import paths
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import simulated_manager
from tests.support import redfish_server
from tests.support.redfish_server import serve
from tests.support.redfish_world import write_world

ROOT = Path(__file__).resolve().parents[3]


class SimulatedHarness:
    """The simulated driver on the tiny world, with direct access to its knobs."""

    name = "simulated"

    def __init__(self) -> None:
        self.manager = simulated_manager(name="contract", fabric="contract")
        self.driver: FabricDriver = get_driver(self.manager)
        self.fabric = store.fabric_get("contract")

    def inject(self, kind: str, external_id: str, action: str) -> None:
        store.element_fault_set(
            fabric=self.fabric, kind=kind, external_id=external_id, action=action
        )

    def fail_operation(self, operation: str, mode: str, count: int = 1) -> None:
        store.operation_fault_set(fabric=self.fabric, operation=operation, mode=mode, count=count)

    def set_latency(self, operation: str, ms: int) -> None:
        store.latency_set(fabric=self.fabric, operation=operation, ms=ms)


class RedfishHarness:
    """The Redfish driver over HTTP, against a small composable world (a mockup folder
    written by tests/support/redfish_world.py) served with state by the test server.

    It has no `inject` (a Redfish manager reports element faults, it is not told them; what
    a fault takes with it is the console's to derive) and no `set_latency` (the latency
    tests measure the simulator's own model). Operation faults are HTTP answers: a 503
    (transient), a 409 (permanent), or a reply that comes after the driver's timeout.
    """

    name = "redfish"
    _METHODS = {
        "discover": "GET",
        "bindings": "GET",
        "health": "GET",
        "bind": "PATCH",
        "unbind": "PATCH",
    }

    def __init__(self) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="redfish-world-"))
        self._server = serve(write_world(self._folder))
        self.service, url = self._server.__enter__()
        self.driver: FabricDriver = RedfishDriver(
            endpoint=url,
            settings={"timeout_s": 1},
            credentials={"username": redfish_server.USERNAME, "password": redfish_server.PASSWORD},
        )

    def fail_operation(self, operation: str, mode: str, count: int = 1) -> None:
        method = self._METHODS[operation]
        for _ in range(count):
            if mode == "timeout":
                self.service.slow_next(method, 1.5)
            else:
                self.service.fail_next(method, 503 if mode == "transient" else 409)

    def close(self) -> None:
        self._server.__exit__(None, None, None)
        shutil.rmtree(self._folder, ignore_errors=True)


class RedfishSimulatedHarness(SimulatedHarness):
    """The Redfish driver over HTTP against the simulated world served as Redfish: the
    tiny world's own state, so that the knobs are the simulator's own (element faults,
    operation faults, latencies), reached through the simulator's store as `sim_fault` and
    `sim_operation_fault` reach them. The server's threads read the database on their own
    connections, so its tests run in committed transactions.

    A Redfish health poll is a discovery (a walk from the service root), so its latency
    is the simulator's "discover" one; the sensor metrics are the simulator's own, served
    as Redfish metrics resources.
    """

    name = "redfish-simulated"
    transactional = True
    latency_trace = ("discover", "bind", "unbind", "discover")

    def __init__(self) -> None:
        simulated_manager(name="contract", fabric="contract")
        self.fabric = store.fabric_get("contract")
        self._server = serve_world("contract", lost_reply_s=5)
        url = self._server.__enter__()
        self.driver = RedfishDriver(
            endpoint=url, settings={"timeout_s": 1}, credentials=credentials()
        )

    def inject(self, kind: str, external_id: str, action: str) -> None:
        """Fault the simulated element that the Redfish id stands for (a link by its two
        ports, as the Redfish driver names links)."""
        element = paths.element_id(external_id)
        if kind == "link":
            ends = {paths.element_id(p) for p in external_id.split("~")}
            element = next(
                e.external_id
                for e in SimulatedElement.objects.filter(fabric=self.fabric, kind="link")
                if {e.data["a_port_id"], e.data["b_port_id"]} == ends
            )
        super().inject(kind, element, action)

    def close(self) -> None:
        self._server.__exit__(None, None, None)


HARNESSES: dict[str, Any] = {
    "simulated": SimulatedHarness,
    "redfish": RedfishHarness,
    "redfish-simulated": RedfishSimulatedHarness,
}


# A harness whose service reads the database from other threads needs what the test writes
# committed: its tests run in transactions of their own.
@pytest.fixture(
    params=[
        pytest.param(name, marks=pytest.mark.django_db(transaction=True))
        if getattr(HARNESSES[name], "transactional", False)
        else name
        for name in sorted(HARNESSES)
    ]
)
def harness(request: pytest.FixtureRequest, db: None) -> Iterator[Any]:
    built = HARNESSES[request.param]()
    yield built
    if hasattr(built, "close"):
        built.close()


def _needs(harness: Any, knob: str) -> None:
    if not hasattr(harness, knob):
        pytest.skip(f"the {harness.name} harness cannot {knob.replace('_', ' ')}")


def _by_kind(readings: list[HealthReading], kind: str) -> dict[str, HealthReading]:
    return {r.external_id: r for r in readings if r.target_kind == kind}


def _first(inventory: Inventory, kind: str) -> Any:
    return next(d for d in inventory.devices if d.kind == kind)


# -- discovery ----------------------------------------------------------------------------


def test_discovery_returns_consistent_references(harness: Any) -> None:
    inventory = harness.driver.discover()
    assert list(inventory.dangling_references()) == []
    counts = inventory.counts()
    assert all(counts[k] > 0 for k in counts), counts
    every = [i.external_id for name in counts for i in getattr(inventory, name)]
    assert len(every) == len(set(every)), "external ids are unique across the inventory"


def test_discovery_of_a_healthy_fabric_reports_everything_ok_and_links_up(harness: Any) -> None:
    inventory = harness.driver.discover()
    assert {d.health for d in inventory.devices} == {"ok"}
    assert {link.state for link in inventory.links} == {"up"}
    assert {link.health for link in inventory.links} == {"ok"}


def test_discovery_is_read_only_and_repeatable(harness: Any) -> None:
    assert harness.driver.discover() == harness.driver.discover()


def test_a_probe_names_the_service_and_counts_what_a_discovery_finds(harness: Any) -> None:
    """The console's "Test connection": what answered, what it holds, how it composes."""
    report = harness.driver.probe()
    assert report.service
    assert dict(report.counts) == harness.driver.discover().counts()
    assert report.composition_methods


# -- bind and unbind ----------------------------------------------------------------------


def test_bind_returns_a_binding_that_bindings_lists(harness: Any) -> None:
    inventory = harness.driver.discover()
    gpu, host = _first(inventory, "gpu"), inventory.hosts[0]
    binding = harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)
    assert isinstance(binding, Binding)
    assert (binding.device_id, binding.host_id, binding.size_gib) == (
        gpu.external_id,
        host.external_id,
        None,
    )
    assert binding in harness.driver.bindings()


def test_binding_the_same_device_to_the_same_host_again_returns_the_existing_binding(
    harness: Any,
) -> None:
    inventory = harness.driver.discover()
    gpu, host = _first(inventory, "gpu"), inventory.hosts[0]
    first = harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)
    again = harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)
    assert again == first
    assert len(harness.driver.bindings()) == 1


def test_binding_a_device_bound_to_another_host_is_refused_permanently(harness: Any) -> None:
    inventory = harness.driver.discover()
    gpu = _first(inventory, "gpu")
    harness.driver.bind(device_id=gpu.external_id, host_id=inventory.hosts[0].external_id)
    with pytest.raises(DriverError) as caught:
        harness.driver.bind(device_id=gpu.external_id, host_id=inventory.hosts[1].external_id)
    assert caught.value.permanent is True
    assert len(harness.driver.bindings()) == 1


def test_unbind_is_idempotent(harness: Any) -> None:
    inventory = harness.driver.discover()
    gpu, host = _first(inventory, "gpu"), inventory.hosts[0]
    binding = harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)
    harness.driver.unbind(binding_id=binding.binding_id)
    harness.driver.unbind(binding_id=binding.binding_id)
    harness.driver.unbind(binding_id="no-such-binding")
    assert harness.driver.bindings() == []
    # And the device can be bound again, elsewhere.
    harness.driver.bind(device_id=gpu.external_id, host_id=inventory.hosts[1].external_id)


def test_memory_slices_are_limited_by_capacity(harness: Any) -> None:
    inventory = harness.driver.discover()
    memory = _first(inventory, "cxl_memory")
    capacity = memory.memory_gib
    h1, h2, h3 = (h.external_id for h in inventory.hosts[:3])
    harness.driver.bind(device_id=memory.external_id, host_id=h1, size_gib=capacity - 100)
    with pytest.raises(DriverError) as caught:
        harness.driver.bind(device_id=memory.external_id, host_id=h2, size_gib=101)
    assert caught.value.permanent is True
    harness.driver.bind(device_id=memory.external_id, host_id=h2, size_gib=100)
    with pytest.raises(DriverError):
        harness.driver.bind(device_id=memory.external_id, host_id=h3, size_gib=1)
    sizes = sorted(b.size_gib or 0 for b in harness.driver.bindings())
    assert sizes == [100, capacity - 100]


def test_a_memory_slice_bound_again_to_the_same_host_returns_the_existing_one(
    harness: Any,
) -> None:
    inventory = harness.driver.discover()
    memory, host = _first(inventory, "cxl_memory"), inventory.hosts[0].external_id
    first = harness.driver.bind(device_id=memory.external_id, host_id=host, size_gib=64)
    assert harness.driver.bind(device_id=memory.external_id, host_id=host, size_gib=64) == first


def test_a_device_that_is_not_partitionable_cannot_be_sliced(harness: Any) -> None:
    inventory = harness.driver.discover()
    gpu = _first(inventory, "gpu")
    with pytest.raises(DriverError) as caught:
        harness.driver.bind(
            device_id=gpu.external_id, host_id=inventory.hosts[0].external_id, size_gib=8
        )
    assert caught.value.permanent is True


def test_binding_an_unknown_device_or_host_is_a_permanent_error(harness: Any) -> None:
    inventory = harness.driver.discover()
    gpu, host = _first(inventory, "gpu"), inventory.hosts[0]
    for kwargs in (
        {"device_id": "no-such-device", "host_id": host.external_id},
        {"device_id": gpu.external_id, "host_id": "no-such-host"},
    ):
        with pytest.raises(DriverError) as caught:
            harness.driver.bind(**kwargs)
        assert caught.value.permanent is True


# -- health: raw readings ------------------------------------------------------------------
# A driver reports each element's own health; what a fault takes with it is the console's
# to derive (tests/fabric/health/test_propagation.py, on raw readings, for any driver).


@pytest.mark.parametrize("kind", ["power_feed", "enclosure", "switch", "link", "device"])
def test_a_fault_is_reported_on_the_element_that_failed_and_nowhere_else(
    harness: Any, kind: str
) -> None:
    _needs(harness, "inject")
    inventory = harness.driver.discover()
    target = getattr(
        inventory, {"power_feed": "power_feeds", "switch": "switches"}.get(kind, f"{kind}s")
    )[0].external_id
    harness.inject(kind, target, "fail")

    readings = harness.driver.health()
    unwell = {(r.target_kind, r.external_id) for r in readings if r.health != "ok"}
    assert unwell == {(kind, target)}
    (reading,) = [r for r in readings if r.external_id == target]
    assert reading.health == "critical" and reading.detail
    rediscovered = harness.driver.discover()
    reported = {
        i.external_id: i.health
        for name in rediscovered.counts()
        for i in getattr(rediscovered, name)
    }
    assert {e for e, health in reported.items() if health != "ok"} == {target}
    if kind == "link":
        assert {x.state for x in rediscovered.links if x.external_id == target} == {"down"}
    else:
        assert {x.state for x in rediscovered.links} == {"up"}

    harness.inject(kind, target, "recover")
    assert {r.health for r in harness.driver.health()} == {"ok"}


def test_a_device_of_a_failed_enclosure_cannot_be_bound(harness: Any) -> None:
    """The manager's own rule: it binds nothing it cannot power, whatever it reports."""
    _needs(harness, "inject")
    inventory = harness.driver.discover()
    gpu = _first(inventory, "gpu")
    harness.inject("enclosure", gpu.enclosure_id, "fail")
    with pytest.raises(DriverError) as caught:
        harness.driver.bind(device_id=gpu.external_id, host_id=inventory.hosts[0].external_id)
    assert caught.value.permanent is True


def test_a_bind_is_refused_when_the_power_feed_of_the_enclosure_or_of_the_host_failed(
    harness: Any,
) -> None:
    _needs(harness, "inject")
    inventory = harness.driver.discover()
    gpu = _first(inventory, "gpu")
    feed_of = {e.external_id: e.power_feed_id for e in inventory.enclosures}
    enclosure_feed = feed_of[gpu.enclosure_id]
    host = next(h for h in inventory.hosts if h.power_feed_id != enclosure_feed)
    assert enclosure_feed and host.power_feed_id

    for feed in (enclosure_feed, host.power_feed_id):
        harness.inject("power_feed", feed, "fail")
        with pytest.raises(DriverError) as caught:
            harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)
        assert caught.value.permanent is True and "failed" in caught.value.message
        harness.inject("power_feed", feed, "recover")
    assert harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)


def test_a_degraded_link_reports_degraded_and_recovers(harness: Any) -> None:
    _needs(harness, "inject")
    link = harness.driver.discover().links[0]
    harness.inject("link", link.external_id, "degrade")
    reading = _by_kind(harness.driver.health(), "link")[link.external_id]
    assert (reading.health, reading.state) == ("warning", "degraded")
    assert (
        next(x for x in harness.driver.discover().links if x.external_id == link.external_id).state
        == "degraded"
    )

    harness.inject("link", link.external_id, "recover")
    reading = _by_kind(harness.driver.health(), "link")[link.external_id]
    assert (reading.health, reading.state) == ("ok", "up")


def test_a_degraded_device_reports_a_warning_with_metrics(harness: Any) -> None:
    _needs(harness, "inject")
    if not getattr(harness, "reports_metrics", True):
        pytest.skip(f"the {harness.name} harness's driver reads no sensor metrics")
    gpu = _first(harness.driver.discover(), "gpu")
    harness.inject("device", gpu.external_id, "degrade")
    reading = _by_kind(harness.driver.health(), "device")[gpu.external_id]
    assert reading.health == "warning"
    assert reading.metrics["temperature_c"] > 70


# -- latency and operation faults ---------------------------------------------------------


def test_latency_is_applied_to_every_operation(harness: Any, settings: Any) -> None:
    _needs(harness, "set_latency")
    settings.COMPOSER_SIMULATOR_LATENCY_SCALE = 1.0
    harness.set_latency("bindings", 60)
    started = time.monotonic()
    harness.driver.bindings()
    assert time.monotonic() - started >= 0.06


def test_latency_defaults_are_realistic_and_scaled(
    harness: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs(harness, "set_latency")
    slept: list[float] = []
    monkeypatch.setattr(simulated_driver, "sleep", slept.append)
    settings.COMPOSER_SIMULATOR_LATENCY_SCALE = 0.5
    inventory = harness.driver.discover()
    binding = harness.driver.bind(
        device_id=_first(inventory, "gpu").external_id, host_id=inventory.hosts[0].external_id
    )
    harness.driver.unbind(binding_id=binding.binding_id)
    harness.driver.health()
    # discover, bind, unbind, health: each operation's default latency, halved.
    trace = getattr(harness, "latency_trace", ("discover", "bind", "unbind", "health"))
    assert slept == pytest.approx([store.DEFAULT_LATENCY_MS[op] / 2000 for op in trace])


def test_a_transient_operation_fault_fails_the_next_calls_then_clears(harness: Any) -> None:
    _needs(harness, "fail_operation")
    harness.fail_operation("discover", "transient", count=2)
    for _ in range(2):
        with pytest.raises(DriverError) as caught:
            harness.driver.discover()
        assert caught.value.permanent is False
    assert harness.driver.discover().devices


def test_a_permanent_operation_fault_is_permanent(harness: Any) -> None:
    _needs(harness, "fail_operation")
    inventory = harness.driver.discover()
    harness.fail_operation("bind", "permanent")
    with pytest.raises(DriverError) as caught:
        harness.driver.bind(
            device_id=_first(inventory, "gpu").external_id, host_id=inventory.hosts[0].external_id
        )
    assert caught.value.permanent is True
    assert harness.driver.bindings() == []


def test_a_timed_out_bind_may_still_have_bound_so_callers_reconcile(harness: Any) -> None:
    _needs(harness, "fail_operation")
    inventory = harness.driver.discover()
    gpu, host = _first(inventory, "gpu"), inventory.hosts[0]
    harness.fail_operation("bind", "timeout")
    with pytest.raises(DriverTimeout) as caught:
        harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id)
    assert caught.value.permanent is False
    [binding] = harness.driver.bindings()
    assert (binding.device_id, binding.host_id) == (gpu.external_id, host.external_id)
    # Retrying the bind is safe: it returns the binding the lost reply was about.
    assert harness.driver.bind(device_id=gpu.external_id, host_id=host.external_id) == binding


# -- shared state ---------------------------------------------------------------------------


@pytest.fixture
def shared_database_env(transactional_db: None) -> Iterator[dict[str, str]]:
    """Environment for a child process that uses this test's database."""
    from tests.support.worker import database_url

    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("sqlite3") and (
        settings_dict["NAME"] == ":memory:" or "mode=memory" in str(settings_dict["NAME"])
    ):
        pytest.skip("an in-memory SQLite test database cannot be shared with another process")
    yield {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "DATABASE_URL": database_url(settings_dict),
    }


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_state_is_shared_by_every_process(shared_database_env: dict[str, str]) -> None:
    manager = simulated_manager(name="shared", fabric="shared")
    inventory_sync(manager=manager)
    driver = get_driver(manager)
    switch = driver.discover().switches[0]

    # Another process fails the switch and makes the next bind fail ...
    out = _manage(
        shared_database_env, "sim_fault", "switch", switch.name, "fail", "--manager", "shared"
    )
    assert "failed" in out
    _manage(shared_database_env, "sim_operation_fault", "bind", "transient", "--fabric", "shared")

    # ... and this process's driver sees both.
    assert _by_kind(driver.health(), "switch")[switch.external_id].health == "critical"
    inventory = driver.discover()
    with pytest.raises(DriverError):
        driver.bind(
            device_id=_first(inventory, "gpu").external_id, host_id=inventory.hosts[0].external_id
        )
    assert SimulatedElement.objects.get(external_id=switch.external_id).fault == "failed"

    # A binding made here is what the other process's driver reports.
    binding = driver.bind(
        device_id=_first(inventory, "gpu").external_id, host_id=inventory.hosts[0].external_id
    )
    code = (
        "from fabric.drivers.registry import get_driver; "
        "from fabric.models import FabricManager; "
        "manager = FabricManager.objects.get(name='shared'); "
        "print([b.binding_id for b in get_driver(manager).bindings()])"
    )
    assert binding.binding_id in _manage(shared_database_env, "shell", "-c", code)


# -- concurrency ----------------------------------------------------------------------------


def _race(count: int, attempt: Any) -> list[Any]:
    """Run `attempt(i)` in `count` threads at once (each with its own connection)."""
    barrier = threading.Barrier(count)
    outcomes: list[Any] = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[i] = attempt(i)
        except Exception as exc:
            outcomes[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_concurrent_binds_of_one_device_bind_it_once(harness: Any) -> None:
    inventory = harness.driver.discover()
    gpu = _first(inventory, "gpu").external_id
    hosts = [h.external_id for h in inventory.hosts]

    outcomes = _race(6, lambda i: harness.driver.bind(device_id=gpu, host_id=hosts[i % len(hosts)]))

    bound = harness.driver.bindings()
    assert len(bound) == 1
    winners = [o for o in outcomes if isinstance(o, Binding)]
    assert winners and all(w.host_id == bound[0].host_id for w in winners)
    losers = [o for o in outcomes if not isinstance(o, Binding)]
    assert all(isinstance(o, DriverError) and o.permanent for o in losers), losers


@pytest.mark.django_db(transaction=True)
def test_concurrent_memory_slices_never_exceed_capacity(harness: Any) -> None:
    inventory = harness.driver.discover()
    memory = _first(inventory, "cxl_memory")
    hosts = [h.external_id for h in inventory.hosts]
    size = memory.memory_gib // 2 + 1  # two of these do not fit

    def bind(i: int) -> Binding:
        return harness.driver.bind(device_id=memory.external_id, host_id=hosts[i], size_gib=size)

    outcomes = _race(len(hosts), bind)

    assert sum(b.size_gib or 0 for b in harness.driver.bindings()) <= memory.memory_gib
    assert sum(isinstance(o, Binding) for o in outcomes) == 1, outcomes
