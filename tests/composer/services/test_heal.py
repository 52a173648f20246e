"""The heal job against the simulated driver: a lost device is replaced from a spare under
the composition's own rules and unbound; no spare, or a permanent fault on the spare's bind,
leaves the composition DEGRADED with the reason and nothing half-done; a redelivered job
resumes and never binds twice; an unbind that fails is kept and retried."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from composer.choices import AllocationState, CompositionState, JobKind, JobStatus
from composer.errors import InvalidTransition
from composer.models import Allocation, Composition, Job, UnbindPending
from composer.placement.load import build_snapshot
from composer.runner import JobRetry
from composer.services.heal import (
    HEALING_KEY,
    composition_heal_run,
    heal_reconcile,
    heal_request,
    spare_exclusions,
)
from composer.services.heal import spares as heal_spares
from composer.services.health import compositions_react_to_health
from composer.services.reconcile import reconcile_run
from composer.services.unbinds import unbinds_pending_retry
from composer.tasks import composition_heal_task
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from tests.composer.services.test_composition_jobs import fail_after_first_bind, fail_bind
from tests.composer.services.test_health import compose, fault
from tests.fabric.simulated_world import TINY, simulated_manager

pytestmark = pytest.mark.django_db

SPREAD = {"items": [{"kind": "gpu", "count": 2}], "policy": "enclosure", "memory_gib": 64}
BOTH_H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2}]}
ONE_OF_EACH = {
    "items": [
        {"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1},
        {"kind": "gpu", "model": "L40S 48GB", "count": 1},
    ]
}


def held(composition: Composition) -> set[str]:
    """Names of the devices the composition holds now."""
    return set(
        composition.allocations.filter(released_at__isnull=True).values_list(
            "device__name", flat=True
        )
    )


def bound_names(driver: FabricDriver, composition: Composition) -> set[str]:
    """Names of the devices the fabric manager reports bound to the composition's host."""
    host = composition.host
    assert host is not None
    external = {b.device_id for b in driver.bindings() if b.host_id == host.external_id}
    return set(Device.objects.filter(external_id__in=external).values_list("name", flat=True))


def degrade(manager: FabricManager, composition: Composition, *names: str) -> None:
    """Fail devices in the fabric and let the composer react (no self-heal job runs)."""
    for name in names:
        fault(manager, "device", name)
    compositions_react_to_health(
        unhealthy_device_ids=Device.objects.filter(name__in=names).values_list("pk", flat=True),
        healthy_device_ids=[],
        reason="device failed",
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.DEGRADED


def heal_job(composition: Composition) -> Job:
    return Job.objects.filter(kind=JobKind.HEAL, target_id=composition.pk).latest("id")


def test_self_heal_replaces_a_failed_gpu_under_the_policy_and_ends_ready(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, {**SPREAD, "self_heal": True})
    assert held(composition) == {"gpu-a-01-1", "gpu-a-02-1", "mem-a-01-1"}
    fault(synced, "device", "gpu-a-01-1")

    with django_capture_on_commit_callbacks(execute=True):
        reaction = compositions_react_to_health(
            unhealthy_device_ids=[Device.objects.get(name="gpu-a-01-1").pk],
            healthy_device_ids=[],
            reason="device failed",
        )

    composition.refresh_from_db()
    job = heal_job(composition)
    assert reaction.heal_jobs == (job.pk,)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert composition.state == CompositionState.READY and composition.failure_reason == ""
    # Spread across enclosures: gpu-a-02-2 is nearer, but shares gpu-a-02-1's enclosure.
    assert held(composition) == {"gpu-a-01-2", "gpu-a-02-1", "mem-a-01-1"}
    assert bound_names(driver, composition) == held(composition)
    lost = Allocation.objects.get(device__name="gpu-a-01-1")
    assert lost.state == AllocationState.RELEASED and lost.released_at is not None
    assert Device.objects.get(name="gpu-a-01-2").state == DeviceState.BOUND
    plan = composition.placement
    assert {p["name"] for p in plan["devices"]} == {"gpu-a-01-2", "gpu-a-02-1"}
    assert HEALING_KEY not in plan and plan["healed"][0]["replacement"] == ["gpu-a-01-2"]
    assert "gpu-a-01-1" in plan["explanation"][-1]
    assert list(composition.state_changes.values_list("to_state", flat=True))[-3:] == [
        "degraded",
        "healing",
        "ready",
    ]
    assert job.progress_percent == 100
    messages = list(job.log_lines.values_list("message", flat=True))
    assert any("spare for gpu-a-01-1: gpu-a-01-2" in m for m in messages)
    assert any(m.startswith("unbound gpu-a-01-1") for m in messages)


def test_a_failed_cxl_slice_is_replaced_by_a_slice_of_the_same_size(
    acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    manager = simulated_manager(spec=replace(TINY, memory_devices_per_box=2, memory_box_gib=512))
    from fabric.services.sync import inventory_sync

    inventory_sync(manager=manager)
    composition = compose(acme, alice, {"memory_gib": 200, "cores": 4})
    [slice_before] = composition.allocations.all()
    degrade(manager, composition, slice_before.device.name)

    with django_capture_on_commit_callbacks(execute=True):
        job = heal_request(composition=composition, actor=alice)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    [slice_after] = composition.allocations.filter(released_at__isnull=True)
    assert slice_after.gib == 200 and slice_after.device != slice_before.device
    bindings = get_driver(manager).bindings()
    assert [(b.device_id, b.size_gib) for b in bindings] == [(slice_after.device.external_id, 200)]
    assert [p["gib"] for p in composition.placement["memory"]] == [200]


def test_no_spare_leaves_it_degraded_with_the_reason_and_nothing_claimed(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, BOTH_H100)
    before = driver.bindings()
    degrade(synced, composition, "gpu-a-01-1")

    with django_capture_on_commit_callbacks(execute=True):
        job = heal_request(composition=composition, actor=alice)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "No spare GPU of model H100 PCIe 80GB that host" in job.error
    assert composition.state == CompositionState.DEGRADED
    reason = composition.failure_reason
    assert reason.startswith("No spare GPU of model H100 PCIe 80GB") and "gpu-a-01-1" in reason
    assert "nearest alternative: none" in reason
    assert composition.state_changes.last().reason == reason
    assert held(composition) == {"gpu-a-01-1", "gpu-a-01-2"}  # nothing claimed, nothing lost
    assert driver.bindings() == before
    assert HEALING_KEY not in composition.placement


def test_the_no_spare_reason_names_the_latency_ceiling_and_the_nearest_alternative(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # host-a-01 sees gpu-a-02 at 285 ns and gpu-a-01 at 304 ns.
    composition = compose(
        acme,
        alice,
        {"items": [{"kind": "gpu", "count": 1}], "max_latency_ns": 290, "host": "host-a-01"},
    )
    [gpu] = held(composition)
    other = {"gpu-a-02-1": "gpu-a-02-2", "gpu-a-02-2": "gpu-a-02-1"}[gpu]
    Device.objects.filter(name=other).update(state=DeviceState.MAINTENANCE)
    degrade(synced, composition, gpu)

    with django_capture_on_commit_callbacks(execute=True):
        heal_request(composition=composition, actor=alice)

    composition.refresh_from_db()
    assert composition.state == CompositionState.DEGRADED
    assert "No spare GPU within 290 ns of host host-a-01" in composition.failure_reason
    assert "nearest alternative: gpu-a-01-1 at 304 ns, over the latency ceiling" in (
        composition.failure_reason
    )


def test_a_permanent_fault_on_the_spares_bind_rolls_the_heal_back(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, SPREAD)
    before = driver.bindings()
    degrade(synced, composition, "gpu-a-01-1")
    fail_bind("permanent")

    with django_capture_on_commit_callbacks(execute=True):
        job = heal_request(composition=composition, actor=alice)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.FAILED and "permanent" in job.error
    assert composition.state == CompositionState.DEGRADED
    assert composition.failure_reason.startswith("Self-heal rolled back:")
    assert held(composition) == {"gpu-a-01-1", "gpu-a-02-1", "mem-a-01-1"}
    spare = Allocation.objects.get(device__name="gpu-a-01-2")
    assert spare.state == AllocationState.RELEASED
    assert Device.objects.get(name="gpu-a-01-2").state == DeviceState.FREE
    assert driver.bindings() == before
    assert HEALING_KEY not in composition.placement


def test_a_redelivered_heal_resumes_and_never_binds_twice(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    composition = compose(acme, alice, ONE_OF_EACH)
    degrade(synced, composition, "gpu-a-01-1", "gpu-a-02-1")
    job = heal_request(composition=composition, actor=alice)  # not run: no on-commit here
    fail_after_first_bind(monkeypatch, "transient")
    binds: list[str] = []
    real = SimulatedDriver.bind

    def counting(self: SimulatedDriver, **kwargs: Any) -> Any:
        binds.append(kwargs["device_id"])
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", counting)

    with pytest.raises(JobRetry):
        composition_heal_run(job)
    composition.refresh_from_db()
    assert job.status == JobStatus.QUEUED and composition.state == CompositionState.HEALING
    assert len(composition.placement[HEALING_KEY]) == 2
    first = Allocation.objects.exclude(binding_id="").get(
        device__name__in=["gpu-a-01-2", "gpu-a-02-2"]
    )

    composition_heal_run(job)  # the redelivery
    composition_heal_task.delay(job.pk)  # and a duplicate after success: a no-op

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and composition.state == CompositionState.READY
    assert held(composition) == {"gpu-a-01-2", "gpu-a-02-2"}
    assert bound_names(driver, composition) == {"gpu-a-01-2", "gpu-a-02-2"}
    assert len(driver.bindings()) == 2
    assert Allocation.objects.get(pk=first.pk).binding_id == first.binding_id
    assert sorted(binds).count(first.device.external_id) == 1
    assert job.log_lines.filter(message__contains="already bound").count() == 1


def test_an_unbind_of_the_lost_device_that_fails_is_kept_and_retried(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, SPREAD)
    lost = Allocation.objects.get(device__name="gpu-a-01-1")
    degrade(synced, composition, "gpu-a-01-1")
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="unbind", mode="permanent", count=1
    )

    with django_capture_on_commit_callbacks(execute=True):
        job = heal_request(composition=composition, actor=alice)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert composition.state == CompositionState.READY
    assert "gpu-a-01-1" not in held(composition)
    [pending] = UnbindPending.objects.filter(composition=composition, undone_at__isnull=True)
    assert pending.binding_id == lost.binding_id and pending.device.name == "gpu-a-01-1"
    assert lost.binding_id in {b.binding_id for b in driver.bindings()}  # recorded, not lost
    lost.refresh_from_db()
    assert lost.state == AllocationState.RELEASED
    assert Device.objects.get(name="gpu-a-01-1").state == DeviceState.FAILED  # out of the pool

    assert [a.pending.binding_id for a in unbinds_pending_retry() if a.undone] == [lost.binding_id]

    assert not UnbindPending.objects.filter(undone_at__isnull=True).exists()
    assert lost.binding_id not in {b.binding_id for b in driver.bindings()}
    assert unbinds_pending_retry() == []


def test_a_spare_taken_by_a_concurrent_request_is_placed_again_once(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    globex: Any,
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, {"items": [{"kind": "gpu", "count": 1}]})
    [lost] = held(composition)
    degrade(synced, composition, lost)
    real = heal_spares.allocations_claim
    rival = Composition.objects.create(tenant=globex, name="rival", spec={})
    taken: list[int] = []

    def racing(**kwargs: Any) -> Any:
        if not taken:  # another request claims the chosen spare first
            taken.extend(c.device_id for c in kwargs["claims"])
            real(composition=rival, claims=kwargs["claims"], host=None)
        return real(**kwargs)

    monkeypatch.setattr(heal_spares, "allocations_claim", racing)

    with django_capture_on_commit_callbacks(execute=True):
        job = heal_request(composition=composition, actor=alice)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    [spare] = composition.allocations.filter(released_at__isnull=True)
    assert spare.device_id not in taken and spare.device.name != lost
    assert list(rival.allocations.values_list("device_id", flat=True)) == taken  # never twice
    assert job.log_lines.filter(message__contains="was taken").count() == 1


def test_heal_request_refuses_a_ready_composition_and_reuses_a_pending_job(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    composition = compose(acme, alice, SPREAD)
    with pytest.raises(InvalidTransition) as refused:
        heal_request(composition=composition, actor=alice)
    assert refused.value.field == "state"

    degrade(synced, composition, "gpu-a-01-1")
    first = heal_request(composition=composition, actor=alice, remote_addr="10.0.0.9")
    assert heal_request(composition=composition) == first
    composition.refresh_from_db()
    assert composition.state == CompositionState.HEALING and first.requested_by == alice
    change = composition.state_changes.last()
    assert (change.to_state, change.actor, change.remote_addr) == ("healing", alice, "10.0.0.9")


def test_a_heal_whose_worker_died_is_queued_again_and_resumes(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, SPREAD)
    degrade(synced, composition, "gpu-a-01-1")
    job = heal_request(composition=composition, actor=alice)
    fail_bind("transient")
    with pytest.raises(JobRetry):
        composition_heal_run(job)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)  # swept as lost
    settings.COMPOSER_RECONCILE_GRACE_S = 0

    with django_capture_on_commit_callbacks(execute=True):
        requeued = heal_reconcile()

    composition.refresh_from_db()
    assert requeued == [composition.pk]
    assert heal_job(composition).status == JobStatus.SUCCEEDED
    assert composition.state == CompositionState.READY
    assert held(composition) == {"gpu-a-01-2", "gpu-a-02-1", "mem-a-01-1"}


def test_spares_behind_another_switch_are_excluded_for_same_switch(
    synced: FabricManager,
) -> None:
    snapshot = build_snapshot()
    gpus = {d.id for d in snapshot.devices.values() if d.kind == "gpu"}
    jbof = next(e.id for e in snapshot.enclosures.values() if e.name == "jbof-a-01")
    gpu_a_02 = next(e.id for e in snapshot.enclosures.values() if e.name == "gpu-a-02")

    def excluded(**kwargs: Any) -> set[str]:
        return spare_exclusions(snapshot, kind="gpu", **kwargs)

    # The JBOF hangs off the spines, every GPU off the leaf: none shares its switch.
    assert excluded(policy="none", spread_from=(), together_with=[jbof]) == gpus
    assert excluded(policy="none", spread_from=(), together_with=[gpu_a_02]) == set()
    assert excluded(policy="switch", spread_from=[gpu_a_02], together_with=()) == gpus
    assert {
        snapshot.devices[d].enclosure
        for d in excluded(policy="enclosure", spread_from=[gpu_a_02], together_with=())
    } == {gpu_a_02}


def test_a_heal_rollback_whose_unbind_keeps_failing_leaves_the_spare_held_for_the_reconciler(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    settings.COMPOSER_UNBIND_BACKOFF_MS = 1
    composition = compose(acme, alice, SPREAD)
    degrade(synced, composition, "gpu-a-01-1")
    sim = store.fabric_get("sim")
    # The spare binds; the verification cannot read the manager; its unbind keeps failing.
    store.operation_fault_set(fabric=sim, operation="bindings", mode="permanent", count=2)
    store.operation_fault_set(fabric=sim, operation="unbind", mode="transient", count=100)

    with django_capture_on_commit_callbacks(execute=True):
        job = heal_request(composition=composition, actor=alice)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert composition.state == CompositionState.DEGRADED
    spare = Allocation.objects.get(device__name="gpu-a-01-2")
    assert spare.state == AllocationState.RELEASED  # the composition does not hold it...
    [pending] = UnbindPending.objects.filter(undone_at__isnull=True)
    assert pending.device_id == spare.device_id  # ...this row does, still BOUND
    assert Device.objects.get(name="gpu-a-01-2").state == DeviceState.BOUND

    store.operation_fault_set(fabric=sim, operation="unbind", mode="transient", count=0)
    reconcile_run()

    assert Device.objects.get(name="gpu-a-01-2").state == DeviceState.FREE
    assert spare.device.external_id not in {b.device_id for b in driver.bindings()}
    assert not UnbindPending.objects.filter(undone_at__isnull=True).exists()


def test_the_no_spare_reason_names_the_spread_in_the_policys_words(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    composition = compose(
        acme,
        alice,
        {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}], "policy": "switch"},
    )
    [gpu] = held(composition)
    Device.objects.filter(model="H100 PCIe 80GB").exclude(name=gpu).update(
        state=DeviceState.MAINTENANCE
    )
    degrade(synced, composition, gpu)

    with django_capture_on_commit_callbacks(execute=True):
        heal_request(composition=composition, actor=alice)

    composition.refresh_from_db()
    assert composition.state == CompositionState.DEGRADED
    assert "(spread across switches" in composition.failure_reason
