"""Fixtures of the composition service tests: the tiny simulated world, synchronised."""

from __future__ import annotations

from typing import Any

import pytest

from composer import celery_app
from fabric.drivers.base import FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    """The tiny world (4 GPUs: 2 H100, 2 L40S; 1 TiB of CXL memory; 2 NVMe; 2 NICs;
    3 hosts), learnt through an inventory sync."""
    inventory_sync(manager=sim_manager)
    return sim_manager


@pytest.fixture
def driver(synced: FabricManager) -> FabricDriver:
    return get_driver(synced)


@pytest.fixture
def eager_retries() -> Any:
    """Eager mode runs a retry at once only when the Retry signal is not re-raised."""
    before = celery_app.conf.task_eager_propagates
    celery_app.conf.update(task_eager_propagates=False)
    yield
    celery_app.conf.update(task_eager_propagates=before)
