"""Fixtures of the reconfiguration workflow's tests: what to bind on the tiny simulated
world, and a narrator that writes down what it was told."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.drivers.base import Binding, DriverError
from fabric.reconfig import BindTarget
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver


class Told:
    """A `Narrator` that keeps each event as (event, item, detail), in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, str]] = []

    def kinds(self) -> list[str]:
        return [event for event, _, _ in self.events]

    def bind_timed_out(self, target: BindTarget[str]) -> None:
        self.events.append(("bind_timed_out", target.item, ""))

    def bind_found(self, target: BindTarget[str], binding: Binding) -> None:
        self.events.append(("bind_found", target.item, binding.binding_id))

    def bind_failed(self, target: BindTarget[str], error: DriverError) -> None:
        self.events.append(("bind_failed", target.item, error.message))

    def adopted(self, target: BindTarget[str], binding: Binding) -> None:
        self.events.append(("adopted", target.item, binding.binding_id))

    def record_failed(self, target: BindTarget[str], error: BaseException) -> None:
        self.events.append(("record_failed", target.item, str(error)))

    def unbound(self, target: BindTarget[str], binding_id: str) -> None:
        self.events.append(("unbound", target.item, binding_id))

    def unbind_failed(self, target: BindTarget[str], binding_id: str, error: DriverError) -> None:
        self.events.append(("unbind_failed", target.item, binding_id))


@pytest.fixture
def told() -> Told:
    return Told()


@pytest.fixture
def gpus(sim_driver: SimulatedDriver) -> list[BindTarget[str]]:
    """Each GPU of the tiny world as a whole-device target on its first host; the item is
    the GPU's external id."""
    inventory = sim_driver.discover()
    host = inventory.hosts[0].external_id
    return [
        BindTarget(item=d.external_id, device_id=d.external_id, host_id=host)
        for d in inventory.devices
        if d.kind == "gpu"
    ]


@pytest.fixture
def quick_backoff(settings: Any) -> None:
    settings.COMPOSER_UNBIND_ATTEMPTS = 3
    settings.COMPOSER_UNBIND_BACKOFF_MS = 1


def fault(operation: str, mode: str, count: int = 1) -> None:
    """The next `count` calls of `operation` on the simulated manager fail with `mode`."""
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation=operation, mode=mode, count=count
    )
