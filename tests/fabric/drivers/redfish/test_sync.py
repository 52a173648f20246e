"""Inventory sync through the Redfish driver: the console's tables from a service over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.drivers import registry
from fabric.models import Device, FabricManager, Host, Link, Switch
from fabric.services.sync.service import inventory_sync
from tests.support.redfish_server import PASSWORD, USERNAME, serve
from tests.support.redfish_world import write_world


@pytest.mark.django_db
def test_a_redfish_manager_syncs_into_the_inventory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        registry,
        "manager_credentials",
        lambda manager: {"username": USERNAME, "password": PASSWORD},
    )
    with serve(write_world(tmp_path)) as (_service, url):
        manager = FabricManager.objects.create(name="redfish", driver="redfish", endpoint=url)
        result = inventory_sync(manager=manager)
    assert result.warnings == []
    manager.refresh_from_db()
    assert manager.last_sync_error == ""
    kinds = sorted(Device.objects.filter(manager=manager).values_list("kind", flat=True))
    assert kinds == ["cxl_memory", "gpu", "gpu"]
    assert Host.objects.filter(manager=manager).count() == 3
    assert Switch.objects.filter(manager=manager).count() == 1
    assert Link.objects.filter(manager=manager).count() == 5
