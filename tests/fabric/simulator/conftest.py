"""Fixtures of the simulator's tests: the tiny simulated world, synchronised."""

from __future__ import annotations

import pytest

from fabric.models import FabricManager
from fabric.services.sync import inventory_sync


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    """The tiny simulated world's manager (tests/fabric/conftest.py) with its inventory
    synchronised, as the fault page and API expect."""
    inventory_sync(manager=sim_manager)
    return sim_manager
