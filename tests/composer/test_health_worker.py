"""The whole health chain through a real Celery worker (no eager mode), from an API call:
a switch fails → the poll the injection queued opens one alert with the right blast radius →
the composition it cuts off is DEGRADED → its self-heal job binds a spare on the other leaf →
READY again; recovering the switch closes the alert. Every step is an event in the log.
And without self-heal: a GPU fails and comes back → DEGRADED → READY again by itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from composer.choices import CompositionState, EventType, JobKind, JobStatus
from composer.models import Composition, Event, Job
from composer.services.compositions import composition_decompose, composition_request
from composer.services.jobs import inventory_sync_request
from fabric.choices import DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import Alert, FabricManager, Host, Switch
from fabric.services.sync import inventory_sync
from tests.composer.test_compositions_worker import wait_for
from tests.fabric.simulated_world import TINY, simulated_manager

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Two racks: host-a-01/02 and gpu-a-01 (2 H100) behind cxl-leaf-a; host-b-01 and gpu-b-01
# (2 H100) behind cxl-leaf-b; both leaves on both spines.
TWO_RACKS = replace(TINY, racks=2)
H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}


def until(check: Callable[[], bool], worker: Any, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen in {timeout_s} s\n{worker.log()}")
        time.sleep(0.2)


def composed(worker: Any, **kwargs: Any) -> Composition:
    composition = composition_request(**kwargs)
    job = wait_for(Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk), worker)
    assert job.status == JobStatus.SUCCEEDED, f"{job.error}\n{worker.log()}"
    composition.refresh_from_db()
    return composition


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name="sim-health", fabric="sim-health", spec=TWO_RACKS)
    inventory_sync(manager=manager)
    return manager


def test_a_switch_failure_degrades_then_self_heals_through_a_real_worker(
    celery_worker: Any, manager: FabricManager, acme: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    host_a = Host.objects.get(name="host-a-01")
    # Fill rack A's GPUs first, so the self-heal composition on host-a-01 gets its H100
    # from rack B (through a spine); then free them: they are the spares.
    filler = composed(
        celery_worker,
        tenant=acme,
        requested_by=alice,
        name="filler",
        spec={**H100, "items": [{**H100["items"][0], "count": 2}], "host": "host-a-02"},
    )
    healing = composed(
        celery_worker,
        tenant=acme,
        requested_by=alice,
        name="train-b",
        spec={**H100, "host": host_a.name, "self_heal": True},
    )
    lost = healing.allocations.select_related("device__enclosure").get()
    assert lost.device.enclosure.name == "gpu-b-01"
    decompose = composition_decompose(composition=filler, actor=alice)
    assert wait_for(decompose, celery_worker).status == JobStatus.SUCCEEDED

    leaf_b = Switch.objects.get(name="cxl-leaf-b")
    response = api_as(admin_user).post(
        "/api/v1/simulator/faults/",
        {"target_type": "switch", "target_id": leaf_b.name, "action": "fail"},
        format="json",
    )
    assert response.status_code == 202, response.content

    # The worker's poll opens one alert for the switch, naming what it cuts off.
    until(
        lambda: Alert.objects.filter(source_type="switch", source_id=leaf_b.pk).exists(),
        celery_worker,
        "the switch alert",
    )
    alert = Alert.objects.get(source_type="switch", source_id=leaf_b.pk)
    assert (alert.severity, alert.state) == ("critical", "open")
    assert [c["id"] for c in alert.blast_radius["compositions"]] == [healing.pk]
    assert alert.blast_radius["tenants"] == [acme.pk]
    assert lost.device_id in alert.blast_radius["devices"]
    assert Host.objects.get(name="host-b-01").pk in alert.blast_radius["hosts"]
    assert Alert.objects.filter(state="open").count() == 1  # one failure, one alert

    # Degraded, healed by the worker, READY again with a rack-A GPU.
    until(
        lambda: Job.objects.filter(kind=JobKind.HEAL, target_id=healing.pk).exists(),
        celery_worker,
        "the heal job",
    )
    heal = wait_for(Job.objects.get(kind=JobKind.HEAL, target_id=healing.pk), celery_worker)
    assert heal.status == JobStatus.SUCCEEDED, f"{heal.error}\n{celery_worker.log()}"
    healing.refresh_from_db()
    assert healing.state == CompositionState.READY
    states = [c.to_state for c in healing.state_changes.order_by("at", "id")]
    assert states[-3:] == ["degraded", "healing", "ready"]
    spare = healing.allocations.select_related("device__enclosure").get(released_at__isnull=True)
    assert spare.device.enclosure.name == "gpu-a-01"
    assert {b.binding_id for b in get_driver(manager).bindings()} == {spare.binding_id}

    # Recovery closes the alert (the beat is not running here: poll as it would).
    api_as(admin_user).post(
        "/api/v1/simulator/faults/",
        {"target_type": "switch", "target_id": leaf_b.pk, "action": "recover"},
        format="json",
    )
    for _ in range(3):
        api_as(admin_user).post(
            "/api/v1/simulator/faults/",
            {"target_type": "switch", "target_id": leaf_b.pk, "action": "recover"},
            format="json",
        )
        time.sleep(0.3)
    until(lambda: Alert.objects.get(pk=alert.pk).state == "closed", celery_worker, "recovery")

    # Each step left its event: the alert opening and closing, the composition's states.
    alert_states = [
        e.payload["alert"]["state"]
        for e in Event.objects.filter(type=EventType.FABRIC_ALERT, payload__alert__id=alert.pk)
    ]
    assert alert_states[0] == "open" and alert_states[-1] == "closed"
    composition_events = [
        e.payload["to"]
        for e in Event.objects.filter(type=EventType.COMPOSITION_STATE, composition=healing)
    ]
    assert composition_events[-3:] == ["degraded", "healing", "ready"]


def test_a_composition_is_ready_again_by_itself_once_its_gpu_is_back(
    celery_worker: Any, manager: FabricManager, acme: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    """Fault injection → DEGRADED → recovery → READY, with nobody pressing *Heal now*: the
    poll the recovery queued sees the GPU back, although the inventory sync that ran while it
    was down still has it FAILED."""
    composition = composed(celery_worker, tenant=acme, requested_by=alice, name="infer", spec=H100)
    gpu = composition.allocations.select_related("device").get().device
    api = api_as(admin_user)

    def fault(action: str) -> None:
        response = api.post(
            "/api/v1/simulator/faults/",
            {"target_type": "device", "target_id": gpu.name, "action": action},
            format="json",
        )
        assert response.status_code == 202, response.content

    def state() -> str:
        return Composition.objects.get(pk=composition.pk).state

    fault("fail")
    until(lambda: state() == CompositionState.DEGRADED, celery_worker, "the degradation")
    sync = wait_for(inventory_sync_request(manager=manager), celery_worker)
    assert sync.status == JobStatus.SUCCEEDED, f"{sync.error}\n{celery_worker.log()}"
    gpu.refresh_from_db()
    assert gpu.state == DeviceState.FAILED

    fault("recover")
    until(lambda: state() == CompositionState.READY, celery_worker, "the recovery")

    composition.refresh_from_db()
    assert composition.failure_reason == ""
    change = composition.state_changes.order_by("at", "id").last()
    assert (change.from_state, change.to_state) == ("degraded", "ready")
    assert change.reason.startswith(f"Recovered: {gpu.name} back")
    assert not Job.objects.filter(kind=JobKind.HEAL).exists()
    # The tenant's page hears it: the state change is an event for Acme.
    event = Event.objects.filter(type=EventType.COMPOSITION_STATE, composition=composition).last()
    assert (event.payload["from"], event.payload["to"]) == ("degraded", "ready")
    assert list(event.audience.values_list("tenant_id", flat=True)) == [acme.pk]
