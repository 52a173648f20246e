"""Fixtures of the composer tests: a synchronised tiny simulated fabric."""

from __future__ import annotations

import pytest

from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager


@pytest.fixture
def sim_manager(db: None) -> FabricManager:
    """A manager on the tiny simulated world `sim`, not yet synchronised."""
    return simulated_manager()


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    """`sim_manager` with its inventory synchronised."""
    inventory_sync(manager=sim_manager)
    return sim_manager
