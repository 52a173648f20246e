"""Self-heal through a real Celery worker process (no eager mode): a self-heal composition
loses a GPU in the simulated fabric, the composer reacts as the health poller will, and the
heal job the worker runs binds a spare and releases the failed device: READY again."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Allocation, Job
from composer.services.compositions import composition_request
from composer.services.health import compositions_react_to_health
from fabric.choices import DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.composer.test_compositions_worker import wait_for
from tests.fabric.simulated_world import simulated_manager

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name="sim-heal", fabric="sim-heal")
    inventory_sync(manager=manager)
    return manager


def test_a_real_worker_heals_a_composition_that_lost_a_gpu(
    celery_worker: Any, manager: FabricManager, acme: Any, alice: Any
) -> None:
    driver = get_driver(manager)
    composition = composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 2}], "policy": "enclosure", "self_heal": True},
        name="worker-heal",
    )
    job = wait_for(Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk), celery_worker)
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, f"{job.error}\n{celery_worker.log()}"
    lost = composition.allocations.select_related("device").get(device__enclosure__name="gpu-a-01")

    # The fault, then what the poller does: the tables learn it, the composer reacts.
    fault_inject(manager=manager, target_type="device", target_id=lost.device.name, action="fail")
    inventory_sync(manager=manager)
    reaction = compositions_react_to_health(
        unhealthy_device_ids=[lost.device_id],
        healthy_device_ids=[],
        reason=f"device {lost.device.name} failed",
        alert_id=None,
    )

    assert reaction.degraded == (composition.pk,) and len(reaction.heal_jobs) == 1
    heal = wait_for(Job.objects.get(pk=reaction.heal_jobs[0]), celery_worker)
    composition.refresh_from_db()
    assert heal.status == JobStatus.SUCCEEDED, f"{heal.error}\n{celery_worker.log()}"
    assert composition.state == CompositionState.READY
    assert "composition_heal_task" in celery_worker.log()
    active = list(composition.allocations.filter(released_at__isnull=True))
    assert lost.pk not in {a.pk for a in active} and len(active) == 2
    # The spare is in the failed device's enclosure: the other holds the kept GPU (policy).
    spare = next(a for a in active if a.device.enclosure_id == lost.device.enclosure_id)
    assert spare.device.name != lost.device.name
    bindings = driver.bindings()
    assert {b.binding_id for b in bindings} == {a.binding_id for a in active}
    assert lost.device.external_id not in {b.device_id for b in bindings}
    assert Allocation.objects.get(pk=lost.pk).released_at is not None
    assert Device.objects.get(pk=lost.device_id).state == DeviceState.FAILED
    assert [c.to_state for c in composition.state_changes.order_by("at", "id")][-3:] == [
        "degraded",
        "healing",
        "ready",
    ]
