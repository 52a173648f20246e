"""Fixtures of the fabric tests: a tiny simulated world and its manager."""

from __future__ import annotations

import pytest

from fabric.drivers.simulated.driver import SimulatedDriver
from fabric.models import FabricManager
from tests.fabric.simulated_world import simulated_manager


@pytest.fixture
def sim_manager(db: None) -> FabricManager:
    """A manager on the tiny simulated world `sim`, not yet synchronised."""
    return simulated_manager()


@pytest.fixture
def sim_driver(sim_manager: FabricManager) -> SimulatedDriver:
    return SimulatedDriver(endpoint=sim_manager.endpoint, settings=sim_manager.settings)
