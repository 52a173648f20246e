"""The issue's burst through a real Celery worker (2 prefork processes, no eager mode):
`bindings permanent 3` and `unbind transient 4` while compositions are composed side by
side. No FAILED composition holds a device; an operator's reconcile run, run by the worker,
brings the fabric and the database into agreement."""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.choices import TERMINAL_JOB_STATUSES, CompositionState, JobKind
from composer.models import Allocation, Composition, Job, ReconcileRun, UnbindPending
from composer.services.compositions import composition_request
from composer.services.reconcile import reconcile_request
from fabric.choices import DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from tests.fabric.simulated_world import simulated_manager

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

FABRIC = "sim-reconcile"


def settle(predicate: Any, worker: Any, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} after {timeout_s}s\n{worker.log()}")


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name=FABRIC, fabric=FABRIC)
    inventory_sync(manager=manager)
    return manager


def test_the_issue_burst_on_a_real_worker_ends_in_agreement(
    celery_worker: Any, manager: FabricManager, acme: Any, alice: Any, admin_user: Any
) -> None:
    fabric = store.fabric_get(FABRIC)
    store.operation_fault_set(fabric=fabric, operation="bindings", mode="permanent", count=3)
    store.operation_fault_set(fabric=fabric, operation="unbind", mode="transient", count=4)
    specs = [{"items": [{"kind": "gpu", "count": 1}]}] * 4 + [{"memory_gib": 64}] * 2
    compositions = [
        composition_request(tenant=acme, requested_by=alice, spec=spec, name=f"burst-{i}")
        for i, spec in enumerate(specs)
    ]
    jobs = Job.objects.filter(kind=JobKind.COMPOSE, target_id__in=[c.pk for c in compositions])
    settle(
        lambda: not jobs.exclude(status__in=TERMINAL_JOB_STATUSES).exists(),
        celery_worker,
        "compose jobs unfinished",
    )
    states = set(
        Composition.objects.filter(pk__in=[c.pk for c in compositions]).values_list(
            "state", flat=True
        )
    )
    assert CompositionState.FAILED in states, celery_worker.log()
    assert not Allocation.objects.filter(
        released_at__isnull=True, composition__state=CompositionState.FAILED
    ).exists()

    run = reconcile_request(requested_by=admin_user)  # committed: the worker runs it
    settle(
        lambda: ReconcileRun.objects.get(pk=run.pk).status == "done",
        celery_worker,
        "reconcile run unfinished",
    )

    driver = get_driver(manager)
    active = Allocation.objects.filter(released_at__isnull=True)
    assert {b.binding_id for b in driver.bindings()} == set(
        active.values_list("binding_id", flat=True)
    )
    assert not UnbindPending.objects.filter(undone_at__isnull=True).exists()
    held = set(active.values_list("device_id", flat=True))
    free = Device.objects.exclude(pk__in=held).filter(kind="gpu")
    assert set(free.values_list("state", flat=True)) <= {DeviceState.FREE}
