"""A Redfish client composes and decomposes through a real Celery worker (no eager mode),
following each task monitor as a Redfish tool does: 202 while the job runs, then the
operation's answer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.choices import CompositionState
from composer.models import Composition
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def follow(client: Any, monitor: str, worker: Any, timeout_s: float = 60.0) -> Any:
    """Read the monitor until it stops answering 202."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = client.get(monitor)
        if answer.status_code != 202:
            return answer
        assert answer["Location"] == monitor
        time.sleep(0.2)
    raise AssertionError(f"{monitor} still 202 after {timeout_s}s\n{worker.log()}")


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name="sim-redfish", fabric="sim-redfish")
    inventory_sync(manager=manager)
    return manager


def test_a_redfish_client_follows_the_monitors_of_a_compose_and_a_decompose(
    celery_worker: Any, manager: FabricManager, alice: Any, redfish_as: Any
) -> None:
    client = redfish_as(alice)
    body = {
        "Name": "worked",
        "Processors": [{"@Redfish.RequestedCount": 2, "ProcessorType": "GPU"}],
    }
    accepted = client.post("/redfish/v1/Systems", body)
    assert accepted.status_code == 202, accepted.content
    done = follow(client, accepted["Location"], celery_worker)
    assert done.status_code == 201, f"{done.content!r}\n{celery_worker.log()}"
    system = done["Location"]
    composition = Composition.objects.get(pk=int(system.rsplit("/", 1)[1]))
    assert composition.state == CompositionState.READY
    assert len(get_driver(manager).bindings()) == 2

    removed = client.delete(system)
    assert removed.status_code == 202, removed.content
    assert follow(client, removed["Location"], celery_worker).status_code == 204
    composition.refresh_from_db()
    assert composition.state == CompositionState.RELEASED
    assert get_driver(manager).bindings() == []
