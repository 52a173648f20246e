"""Fixtures of the composer tests: a synchronised tiny simulated fabric."""

from __future__ import annotations

import pytest

from fabric.models import FabricManager
from tests.fabric.simulated_world import simulated_manager


@pytest.fixture
def sim_manager(db: None) -> FabricManager:
    """A manager on the tiny simulated world `sim`, not yet synchronised."""
    return simulated_manager()
