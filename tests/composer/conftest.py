"""Fixtures of the composer tests: a synchronised tiny simulated fabric, an audit trail."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager
from tests.support.audit import AuditWorld, audit_world


@pytest.fixture
def sim_manager(db: None) -> FabricManager:
    """A manager on the tiny simulated world `sim`, not yet synchronised."""
    return simulated_manager()


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    """`sim_manager` with its inventory synchronised."""
    inventory_sync(manager=sim_manager)
    return sim_manager


@pytest.fixture
def audit_trail(
    admin_user: Any, alice: Any, bob: Any, carol: Any, acme: Any, globex: Any
) -> AuditWorld:
    """One entry of every audit trail, of both tenants (tests/support/audit.py)."""
    return audit_world(admin=admin_user, alice=alice, carol=carol, acme=acme, globex=globex)
