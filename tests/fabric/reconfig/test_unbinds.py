"""`unbind`: transient errors tried again with doubling back-off, a bounded number of times;
a permanent error at once given up. `undo`: what a target bound, recorded or only reported,
unbound with those retries, and what could not be undone handed back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.reconfig import BindTarget, unbind, undo, undo_each
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from tests.fabric.reconfig.conftest import Told, fault

pytestmark = pytest.mark.django_db


@pytest.fixture
def driver(sim_driver: SimulatedDriver) -> FabricDriver:
    return sim_driver


@pytest.fixture
def bound(driver: FabricDriver, settings: Any) -> Binding:
    settings.COMPOSER_UNBIND_ATTEMPTS = 3
    settings.COMPOSER_UNBIND_BACKOFF_MS = 100
    inventory = driver.discover()
    gpu = next(d for d in inventory.devices if d.kind == "gpu")
    return driver.bind(device_id=gpu.external_id, host_id=inventory.hosts[0].external_id)


def fail_unbind(mode: str, count: int) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="unbind", mode=mode, count=count
    )


def test_transient_errors_are_tried_again_with_doubling_waits(
    bound: Binding, driver: FabricDriver
) -> None:
    fail_unbind("transient", 2)
    waits: list[float] = []

    assert unbind(driver, bound.binding_id, sleep=waits.append) is None

    assert waits == [0.1, 0.2]
    assert driver.bindings() == []


def test_transient_errors_past_the_attempts_are_given_back(
    bound: Binding, driver: FabricDriver
) -> None:
    fail_unbind("transient", 5)
    waits: list[float] = []

    error = unbind(driver, bound.binding_id, sleep=waits.append)

    assert error is not None and not error.permanent
    assert waits == [0.1, 0.2]  # three tries in all
    assert [b.binding_id for b in driver.bindings()] == [bound.binding_id]


def test_a_permanent_error_is_not_tried_again(bound: Binding, driver: FabricDriver) -> None:
    fail_unbind("permanent", 1)
    waits: list[float] = []

    error = unbind(driver, bound.binding_id, sleep=waits.append)

    assert error is not None and error.permanent
    assert waits == []
    assert [b.binding_id for b in driver.bindings()] == [bound.binding_id]


def flaky(monkeypatch: pytest.MonkeyPatch, failures: dict[str, int]) -> list[str]:
    """The simulated manager's unbind of a binding id in `failures` fails transiently that
    many times first (-1: always); returns the binding ids asked to unbind, in order."""
    real = SimulatedDriver.unbind
    asked: list[str] = []

    def unbind(self: SimulatedDriver, *, binding_id: str) -> None:
        asked.append(binding_id)
        left = failures.get(binding_id, 0)
        if left:
            failures[binding_id] = left - 1
            raise DriverError(f"manager busy with {binding_id}", permanent=False)
        real(self, binding_id=binding_id)

    monkeypatch.setattr(SimulatedDriver, "unbind", unbind)
    return asked


def test_undo_retries_a_transient_failure_then_reports_what_it_could_not_undo(
    sim_driver: SimulatedDriver,
    gpus: list[BindTarget[str]],
    told: Told,
    quick_backoff: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = (
        replace(t, binding_id=sim_driver.bind(device_id=t.device_id, host_id=t.host_id).binding_id)
        for t in gpus[:2]
    )
    asked = flaky(monkeypatch, {first.binding_id: 1, second.binding_id: -1})

    left = undo_each(sim_driver, [first, second], reported=sim_driver.bindings(), narrator=told)

    assert asked == [first.binding_id] * 2 + [second.binding_id] * 3
    assert left == [(second, {second.binding_id: f"manager busy with {second.binding_id}"})]
    assert told.events == [
        ("unbound", first.item, first.binding_id),
        ("unbind_failed", second.item, second.binding_id),
    ]
    assert [b.binding_id for b in sim_driver.bindings()] == [second.binding_id]


def test_undo_also_unbinds_what_the_manager_reports_but_was_never_recorded(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told, quick_backoff: None
) -> None:
    target = gpus[0]  # its reply was lost: no binding id recorded
    made = sim_driver.bind(device_id=target.device_id, host_id=target.host_id)

    assert undo(sim_driver, target, reported=sim_driver.bindings(), narrator=told) == {}

    assert sim_driver.bindings() == []
    assert told.events == [("unbound", target.item, made.binding_id)]


def test_undo_goes_by_the_recorded_id_alone_when_the_manager_could_not_be_read(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told, quick_backoff: None
) -> None:
    first, lost = gpus[:2]
    recorded = replace(
        first,
        binding_id=sim_driver.bind(device_id=first.device_id, host_id=first.host_id).binding_id,
    )
    unrecorded = sim_driver.bind(device_id=lost.device_id, host_id=lost.host_id)

    assert undo_each(sim_driver, [recorded, lost], reported=None, narrator=told) == []

    assert sim_driver.bindings() == [unrecorded]  # left to the reconciliation
    assert told.kinds() == ["unbound"]


def test_a_transient_failure_goes_up_when_the_caller_retries_later(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told, quick_backoff: None
) -> None:
    target = replace(
        gpus[0],
        binding_id=sim_driver.bind(device_id=gpus[0].device_id, host_id=gpus[0].host_id).binding_id,
    )
    fault("unbind", "transient", 3)

    with pytest.raises(DriverError) as caught:
        undo(sim_driver, target, reported=None, narrator=told, raise_transient=True)

    assert not caught.value.permanent and told.events == []
    assert [b.binding_id for b in sim_driver.bindings()] == [target.binding_id]
