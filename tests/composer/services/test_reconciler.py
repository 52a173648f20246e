"""The reconciler against the simulated manager with faults injected (eager tasks, real
PostgreSQL in CI): rollbacks retry unbinds, a FAILED composition never holds a device, what
stays bound is held until a run unbinds it, orphans go, in-flight binds stay, missing
bindings come back, and the fabric and the database end in agreement."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import (
    Allocation,
    Composition,
    FindingKind,
    FindingOutcome,
    Job,
    ReconcileRun,
    ReconcileStatus,
    UnbindPending,
)
from composer.services.bindings import bindings_adopt
from composer.services.compositions import composition_decompose, composition_request
from composer.services.reconcile import reconcile_request, reconcile_run
from composer.tasks import composition_compose_task
from fabric.capacity import is_allocatable
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.models import Device, FabricManager, Host
from fabric.services.sync import inventory_sync
from fabric.simulator import store

pytestmark = pytest.mark.django_db

SPEC = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 128}


@pytest.fixture(autouse=True)
def quick_backoff(settings: Any) -> None:
    settings.COMPOSER_UNBIND_BACKOFF_MS = 1


def fault(operation: str, mode: str, count: int) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation=operation, mode=mode, count=count
    )


def compose(acme: Any, alice: Any, spec: dict[str, Any], name: str) -> Composition:
    composition = composition_request(tenant=acme, requested_by=alice, spec=spec, name=name)
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    composition_compose_task.delay(job.pk)
    composition.refresh_from_db()
    return composition


def findings(run: ReconcileRun | None, kind: str) -> list[Any]:
    assert run is not None
    return list(run.findings.filter(kind=kind))


def assert_agreement(driver: FabricDriver) -> None:
    """The manager's bindings are the active allocations' binding ids, nothing is left to
    undo, and no FAILED composition holds anything."""
    reported = {b.binding_id for b in driver.bindings()}
    active = Allocation.objects.filter(released_at__isnull=True)
    assert reported == set(active.values_list("binding_id", flat=True)) - {""}
    assert not UnbindPending.objects.filter(undone_at__isnull=True).exists()
    assert not active.filter(composition__state=CompositionState.FAILED).exists()


def test_a_rollback_retries_transient_unbind_errors_and_undoes_everything(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    fault("bindings", "permanent", 2)  # the verification fails, the rollback cannot look
    fault("unbind", "transient", 2)  # the first unbind succeeds at its third try

    composition = compose(acme, alice, SPEC, "c1")

    assert composition.state == CompositionState.FAILED
    assert driver.bindings() == []
    assert not Allocation.objects.filter(released_at__isnull=True).exists()
    assert not UnbindPending.objects.exists()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}
    assert set(Device.objects.values_list("allocated_gib", flat=True)) == {0}


def test_unbinds_failing_past_the_retries_are_held_until_a_run_undoes_them(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    fault("bindings", "permanent", 2)
    fault("unbind", "transient", 100)

    composition = compose(acme, alice, SPEC, "c1")

    # FAILED, holding nothing; the three bindings are still on the fabric, held for cleanup.
    assert composition.state == CompositionState.FAILED
    assert "cleaned up automatically" in composition.failure_reason
    assert not Allocation.objects.filter(released_at__isnull=True).exists()
    pending = UnbindPending.objects.filter(undone_at__isnull=True)
    assert pending.count() == 3 == len(driver.bindings())
    gpus = Device.objects.filter(pk__in=pending.filter(gib__isnull=True).values("device_id"))
    assert {d.state for d in gpus} == {DeviceState.BOUND}
    for gpu in gpus:
        assert not is_allocatable(partitionable=False, state=gpu.state, health=gpu.health)
    [memory] = Device.objects.filter(pk__in=pending.filter(gib=128).values("device_id"))
    assert memory.allocated_gib == 128
    # Placement refuses them: two of the four GPUs are left.
    refused = composition_request(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 3}]},
        name="too-many",
    )
    assert refused.state == CompositionState.REJECTED

    run = reconcile_run()  # the manager still fails: still held, said so
    assert [f.outcome for f in findings(run, FindingKind.UNBIND_PENDING)] == [
        FindingOutcome.PENDING
    ] * 3
    assert pending.count() == 3 and UnbindPending.objects.filter(attempts=2).count() == 3
    again = reconcile_run()  # still stuck: the same row stands for this run too
    assert again is not None and run is not None and again.pk == run.pk and again.repeats == 2
    assert ReconcileRun.objects.count() == 1

    fault("unbind", "transient", 0)
    run = reconcile_run()

    assert [f.outcome for f in findings(run, FindingKind.UNBIND_PENDING)] == [
        FindingOutcome.REPAIRED
    ] * 3
    assert_agreement(driver)
    assert driver.bindings() == []
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}
    assert set(Device.objects.values_list("allocated_gib", flat=True)) == {0}
    assert not findings(run, FindingKind.ALLOCATED_GIB)  # given back, not recounted


def test_the_issue_burst_ends_in_agreement_with_no_failed_composition_holding_anything(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    """`sim_operation_fault bindings permanent 3` and `unbind transient 4` during a burst
    (tasks eager: each compose runs as it is requested)."""
    fault("bindings", "permanent", 3)
    fault("unbind", "transient", 4)
    specs = [{"items": [{"kind": "gpu", "count": 1}]}] * 4 + [{"memory_gib": 64}] * 2
    compositions = [compose(acme, alice, spec, f"burst-{i}") for i, spec in enumerate(specs)]

    states = [c.state for c in compositions]
    assert CompositionState.FAILED in states and CompositionState.READY in states
    assert not Allocation.objects.filter(
        released_at__isnull=True, composition__state=CompositionState.FAILED
    ).exists()
    assert UnbindPending.objects.filter(undone_at__isnull=True).exists()  # held for cleanup

    for _ in range(3):
        reconcile_run()
        if not UnbindPending.objects.filter(undone_at__isnull=True).exists():
            break

    assert_agreement(driver)
    ready = [c for c in compositions if c.state == CompositionState.READY]
    assert len(driver.bindings()) == sum(c.allocations.count() for c in ready)


def test_an_orphan_binding_is_unbound_and_an_in_flight_one_is_left_alone(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    # In flight: claimed, its compose job queued (not run: no commit in this test), and the
    # job's bind made but not yet recorded.
    flight = composition_request(
        tenant=acme, requested_by=alice, spec={"items": [{"kind": "gpu", "count": 1}]}, name="f"
    )
    [claim] = flight.allocations.select_related("device")
    assert flight.host is not None
    in_flight = driver.bind(device_id=claim.device.external_id, host_id=flight.host.external_id)
    # An orphan: a free GPU bound behind the console's back.
    free = Device.objects.filter(kind="gpu", state=DeviceState.FREE).first()
    assert free is not None
    orphan = driver.bind(device_id=free.external_id, host_id=flight.host.external_id)

    run = reconcile_run()

    [finding] = findings(run, FindingKind.ORPHAN)
    assert finding.binding_id == orphan.binding_id and finding.device == free
    assert finding.outcome == FindingOutcome.REPAIRED
    assert {b.binding_id for b in driver.bindings()} == {in_flight.binding_id}
    free.refresh_from_db()
    assert free.state == DeviceState.FREE


def test_an_orphan_inventory_sync_saw_bound_is_free_once_unbound(
    synced: FabricManager, driver: FabricDriver
) -> None:
    gpu = Device.objects.filter(kind="gpu").first()
    host = Host.objects.filter(manager=synced).first()
    assert gpu is not None and host is not None
    driver.bind(device_id=gpu.external_id, host_id=host.external_id)
    inventory_sync(manager=synced)  # the manager reports it bound: not free here either
    gpu.refresh_from_db()
    assert (gpu.state, gpu.bound_host) == (DeviceState.BOUND, host)

    run = reconcile_run()

    [finding] = findings(run, FindingKind.ORPHAN)
    assert finding.outcome == FindingOutcome.REPAIRED
    gpu.refresh_from_db()
    assert (gpu.state, gpu.bound_host) == (DeviceState.FREE, None)
    assert driver.bindings() == []


def test_an_orphan_that_cannot_be_unbound_holds_its_device_until_it_is(
    synced: FabricManager, driver: FabricDriver
) -> None:
    free = Device.objects.filter(kind="gpu", state=DeviceState.FREE).first()
    host = Host.objects.filter(manager=synced).first()
    assert free is not None and host is not None
    orphan = driver.bind(device_id=free.external_id, host_id=host.external_id)
    fault("unbind", "permanent", 1)

    run = reconcile_run()

    [finding] = findings(run, FindingKind.ORPHAN)
    assert finding.outcome == FindingOutcome.PENDING
    free.refresh_from_db()
    assert (free.state, free.bound_host) == (DeviceState.BOUND, host)  # no claim takes it
    reconcile_run()
    assert driver.bindings() == []
    free.refresh_from_db()
    assert free.state == DeviceState.FREE
    assert orphan.binding_id not in {b.binding_id for b in driver.bindings()}


def test_a_missing_binding_is_reported_and_bound_again(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    composition = compose(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, "m")
    assert composition.state == CompositionState.READY
    [allocation] = composition.allocations.all()
    driver.unbind(binding_id=allocation.binding_id)

    run = reconcile_run()

    [finding] = findings(run, FindingKind.MISSING)
    assert finding.composition == composition and finding.binding_id == allocation.binding_id
    assert finding.outcome == FindingOutcome.REPAIRED
    allocation.refresh_from_db()
    assert [b.binding_id for b in driver.bindings()] == [allocation.binding_id]
    assert_agreement(driver)


def test_a_missing_binding_bound_again_by_a_bind_that_timed_out_is_recorded(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    """The bind happened though its reply timed out: the manager is asked, and what it
    reports is recorded (else the next run would unbind it as an orphan, then find the
    allocation missing again)."""
    composition = compose(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, "m")
    [allocation] = composition.allocations.all()
    driver.unbind(binding_id=allocation.binding_id)
    fault("bind", "timeout", 1)

    run = reconcile_run()

    [finding] = findings(run, FindingKind.MISSING)
    assert finding.outcome == FindingOutcome.REPAIRED
    allocation.refresh_from_db()
    assert [b.binding_id for b in driver.bindings()] == [allocation.binding_id]
    assert_agreement(driver)


def test_a_decompose_refused_an_unbind_releases_and_leaves_the_binding_to_the_reconciler(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """A permanent unbind error no longer leaves the composition decomposing (queued again
    every run, for ever): it is released, and the binding is held until it is undone."""
    composition = compose(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, "d")
    [allocation] = composition.allocations.select_related("device")
    fault("unbind", "permanent", 1)
    with django_capture_on_commit_callbacks(execute=True):
        job = composition_decompose(composition=composition, actor=alice)
    job.refresh_from_db()
    composition.refresh_from_db()
    assert (job.status, composition.state) == (JobStatus.SUCCEEDED, CompositionState.RELEASED)
    pending = UnbindPending.objects.get(undone_at__isnull=True)
    assert (pending.device_id, pending.binding_id) == (allocation.device_id, allocation.binding_id)
    assert Device.objects.get(pk=allocation.device_id).state == DeviceState.BOUND
    assert [b.binding_id for b in driver.bindings()] == [allocation.binding_id]

    with django_capture_on_commit_callbacks(execute=True):
        run = reconcile_run()

    [finding] = findings(run, FindingKind.UNBIND_PENDING)
    assert finding.outcome == FindingOutcome.REPAIRED
    assert Job.objects.filter(kind=JobKind.DECOMPOSE, target_id=composition.pk).count() == 1
    assert Device.objects.get(pk=allocation.device_id).state == DeviceState.FREE
    assert_agreement(driver)
    assert driver.bindings() == []


def test_quiet_scheduled_runs_share_one_row(synced: FabricManager) -> None:
    first = reconcile_run()
    second = reconcile_run()
    third = reconcile_run()

    assert first is not None and second is not None and third is not None
    assert first.pk == second.pk == third.pk
    assert ReconcileRun.objects.count() == 1
    third.refresh_from_db()
    assert third.repeats == 3 and third.managers == 1


def test_an_operators_run_the_broker_refused_is_taken_by_the_next_scheduled_run(
    synced: FabricManager, admin_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Redis away: "Reconcile now" still answers, and its run is not left queued for ever."""
    with (
        mock.patch("composer.tasks.reconcile_task.delay", side_effect=ConnectionError("down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        asked = reconcile_request(requested_by=admin_user)
    asked.refresh_from_db()
    assert asked.status == ReconcileStatus.QUEUED

    run = reconcile_run()  # beat's, once a worker runs again

    assert run is not None and run.pk == asked.pk
    asked.refresh_from_db()
    assert asked.status != ReconcileStatus.QUEUED and asked.requested_by == admin_user


def test_a_resumed_compose_never_takes_a_binding_waiting_to_be_undone(
    synced: FabricManager, driver: FabricDriver, acme: Any, alice: Any
) -> None:
    """A released slice still bound (held by an UnbindPending row) looks like a new slice
    of the same size on the same host: it is the reconciler's, not the resumed job's."""
    composition = compose(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, "p")
    [allocation] = composition.allocations.select_related("device")
    assert composition.host is not None
    UnbindPending.objects.create(
        device=allocation.device,
        host=composition.host,
        binding_id=allocation.binding_id,
        composition=composition,
    )
    Allocation.objects.filter(pk=allocation.pk).update(binding_id="")
    allocation.binding_id = ""

    recorded: list[Any] = []
    rest = bindings_adopt(
        driver, [allocation], composition.host, lambda a, b: recorded.append(b.binding_id)
    )

    assert rest == [allocation] and recorded == []
