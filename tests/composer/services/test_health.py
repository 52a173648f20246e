"""The composer's reaction to fabric health: compositions that lose a device are DEGRADED,
come back READY when it recovers, and self-heal when they opt in; the periodic reconcile
reaches the same end from the tables alone. Against the tiny simulated world."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job, StateChange
from composer.selectors.health import composition_unhealthy_devices
from composer.services.dispatch import job_enqueue
from composer.services.health import compositions_health_reconcile, compositions_react_to_health
from composer.tasks import reconcile_task
from fabric.models import Device, FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.support.compose import composed

pytestmark = pytest.mark.django_db

L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


def compose(tenant: Any, user: Any, spec: dict[str, Any], name: str = "c1") -> Composition:
    return composed(tenant=tenant, user=user, name=name, spec=spec)


def fault(manager: FabricManager, target_type: str, name: str, action: str = "fail") -> None:
    """Inject a fault and let the console learn it, as the poller will."""
    fault_inject(manager=manager, target_type=target_type, target_id=name, action=action)
    inventory_sync(manager=manager)


def gpu_of(composition: Composition) -> Device:
    return composition.allocations.get(device__kind="gpu", released_at__isnull=True).device


@pytest.fixture
def ready(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return compose(acme, alice, L40S)


def test_a_failed_device_degrades_its_composition_and_names_the_device_and_alert(
    synced: FabricManager, ready: Composition
) -> None:
    gpu = gpu_of(ready)
    fault(synced, "device", gpu.name)

    reaction = compositions_react_to_health(
        unhealthy_device_ids=[gpu.pk], healthy_device_ids=[], reason="device failed", alert_id=7
    )

    ready.refresh_from_db()
    assert reaction.degraded == (ready.pk,) and reaction.heal_jobs == ()
    assert ready.state == CompositionState.DEGRADED
    change = ready.state_changes.last()
    assert change is not None and change.from_state == CompositionState.READY
    assert gpu.name in change.reason and "alert 7" in change.reason
    assert change.source == "alert 7"
    assert gpu.name in ready.failure_reason
    assert not Job.objects.filter(kind=JobKind.HEAL).exists()  # it did not opt in


def test_reacting_twice_changes_nothing_the_second_time(
    synced: FabricManager, ready: Composition
) -> None:
    gpu = gpu_of(ready)
    fault(synced, "device", gpu.name)
    args: dict[str, Any] = {
        "unhealthy_device_ids": [gpu.pk],
        "healthy_device_ids": [],
        "reason": "failed",
    }
    compositions_react_to_health(**args)
    changes = StateChange.objects.count()

    again = compositions_react_to_health(**args)

    assert (again.degraded, again.recovered, again.heal_jobs) == ((), (), ())
    assert StateChange.objects.count() == changes


def test_the_composition_is_ready_again_when_the_device_recovers(
    synced: FabricManager, ready: Composition
) -> None:
    gpu = gpu_of(ready)
    fault(synced, "device", gpu.name)
    compositions_react_to_health(
        unhealthy_device_ids=[gpu.pk], healthy_device_ids=[], reason="failed"
    )
    fault(synced, "device", gpu.name, "recover")

    reaction = compositions_react_to_health(
        unhealthy_device_ids=[], healthy_device_ids=[gpu.pk], reason="device recovered"
    )
    again = compositions_react_to_health(
        unhealthy_device_ids=[], healthy_device_ids=[gpu.pk], reason="device recovered"
    )

    ready.refresh_from_db()
    assert reaction.recovered == (ready.pk,) and again.recovered == ()
    assert ready.state == CompositionState.READY and ready.failure_reason == ""


def test_a_device_the_tables_do_not_show_lost_degrades_nothing(ready: Composition) -> None:
    reaction = compositions_react_to_health(
        unhealthy_device_ids=[gpu_of(ready).pk], healthy_device_ids=[], reason="rumour"
    )
    ready.refresh_from_db()
    assert reaction.degraded == () and ready.state == CompositionState.READY


def test_a_failed_switch_cuts_devices_off_and_degrades_the_composition(
    synced: FabricManager, ready: Composition
) -> None:
    # The one leaf carries every host: the devices stay healthy, but no path is left.
    fault(synced, "switch", "cxl-leaf-a")

    problems = composition_unhealthy_devices(ready)
    held = set(ready.allocations.values_list("device_id", flat=True))
    reaction = compositions_react_to_health(
        unhealthy_device_ids=held, healthy_device_ids=[], reason="switch cxl-leaf-a failed"
    )

    assert {p.device_id for p in problems} == held
    assert all(p.why.startswith("cut off from") for p in problems)
    assert reaction.degraded == (ready.pk,)


def test_a_self_heal_composition_gets_one_heal_job(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    composition = compose(acme, alice, {**L40S, "self_heal": True})
    gpu = gpu_of(composition)
    fault(synced, "device", gpu.name)
    args: dict[str, Any] = {
        "unhealthy_device_ids": [gpu.pk],
        "healthy_device_ids": [],
        "reason": "failed",
    }

    with django_capture_on_commit_callbacks() as callbacks:
        first = compositions_react_to_health(**args)
        second = compositions_react_to_health(**args)

    job = Job.objects.get(kind=JobKind.HEAL)
    assert first.heal_jobs == (job.pk,) and second.heal_jobs == ()
    assert job.status == JobStatus.QUEUED and job.requested_by is None
    enqueued = [c for c in callbacks if getattr(c, "func", None) is job_enqueue]
    assert len(enqueued) == 1  # enqueued once, after commit


def test_the_periodic_reconcile_degrades_and_recovers_from_the_tables_alone(
    synced: FabricManager, ready: Composition
) -> None:
    gpu = gpu_of(ready)
    fault(synced, "device", gpu.name)  # and the poll result is lost

    first = compositions_health_reconcile()
    ready.refresh_from_db()
    assert first.reaction.degraded == (ready.pk,)
    assert ready.state == CompositionState.DEGRADED and "periodic" in ready.failure_reason
    assert compositions_health_reconcile().reaction.degraded == ()

    fault(synced, "device", gpu.name, "recover")
    reconcile_task.delay()  # the reconciler runs the health reconcile too

    ready.refresh_from_db()
    assert ready.state == CompositionState.READY


def test_the_reconcile_requeues_a_self_heal_whose_job_was_lost(
    synced: FabricManager, acme: Any, alice: Any, settings: Any
) -> None:
    composition = compose(acme, alice, {**L40S, "self_heal": True})
    gpu = gpu_of(composition)
    fault(synced, "device", gpu.name)
    compositions_react_to_health(
        unhealthy_device_ids=[gpu.pk], healthy_device_ids=[], reason="failed"
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.HEALING
    lost = Job.objects.get(kind=JobKind.HEAL)
    Job.objects.filter(pk=lost.pk).update(status=JobStatus.CANCELLED)  # swept as lost
    settings.COMPOSER_RECONCILE_GRACE_S = 0

    result = compositions_health_reconcile()

    assert result.heal_requeued == (composition.pk,)
    assert Job.objects.filter(kind=JobKind.HEAL, status=JobStatus.QUEUED).count() == 1
    assert compositions_health_reconcile().heal_requeued == ()  # pending now
