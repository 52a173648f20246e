"""Fixtures of the fabric tests: a tiny simulated world and its manager."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fabric.models import FabricManager
from fabric.services.alerts import alert_scope, register_alert_scope
from fabric.simulator.driver import SimulatedDriver
from tests.fabric.simulated_world import simulated_manager


@pytest.fixture
def sim_manager(db: None) -> FabricManager:
    """A manager on the tiny simulated world `sim`, not yet synchronised."""
    return simulated_manager()


@pytest.fixture
def sim_driver(sim_manager: FabricManager) -> SimulatedDriver:
    return SimulatedDriver(endpoint=sim_manager.endpoint, settings=sim_manager.settings)


@pytest.fixture
def no_scope() -> Iterator[None]:
    """No alert scope registered (the composer registers one when its app is ready); the
    one there was is put back afterwards."""
    before = alert_scope()
    register_alert_scope(None)
    yield
    register_alert_scope(before)
