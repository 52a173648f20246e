"""The heal job for shares of a GPU, against the simulated driver: each composition that held
a share of a failed GPU gets a share of the same size again (a GPU already shared on its
host with room first, else a whole free one broken into shares), a replacement GPU is bound
once however many compositions land on it, the failed GPU's shares are given back and it is
unbound with the last, and the database's counts stay exact; no share to be had leaves the
composition degraded with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import AllocationState, CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job, UnbindPending
from composer.services.allocations.shares import devices_shares_reconcile, shares_held
from composer.services.heal import HEALING_KEY, heal_request
from composer.services.health import compositions_react_to_health
from composer.services.unbinds import unbinds_pending_retry
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.models import Device, FabricManager
from fabric.services.pools import pools_assign, pools_ensure_defaults
from fabric.simulator import store
from tests.composer.services.test_health import compose, fault

pytestmark = pytest.mark.django_db

H100 = "H100 PCIe 80GB"
HOST = "host-a-01"


@pytest.fixture
def pooled(synced: FabricManager) -> FabricManager:
    """The tiny world with its default pools, one per GPU model: a spare comes from the
    lost device's pool."""
    pools_ensure_defaults(manager=synced)
    pools_assign(manager=synced)
    return synced


def share_spec(share: int, model: str | None = H100, **extra: Any) -> dict[str, Any]:
    item = {"kind": "gpu", "share": share} | ({"model": model} if model else {})
    return {"items": [item], "host": HOST, **extra}


def held(composition: Composition) -> Allocation:
    """The one allocation the composition holds now."""
    return composition.allocations.select_related("device").get(released_at__isnull=True)


def figures(device: Device) -> tuple[str, int, str | None, str | None]:
    device.refresh_from_db()
    shared = device.shared_host.name if device.shared_host else None
    bound = device.bound_host.name if device.bound_host else None
    return device.state, device.allocated_shares, shared, bound


def bindings_of(driver: FabricDriver, device: Device) -> list[str]:
    return [b.binding_id for b in driver.bindings() if b.device_id == device.external_id]


def fail(manager: FabricManager, device: Device, *compositions: Composition) -> None:
    """Fail `device` in the fabric and let the composer react (no self-heal job runs)."""
    fault(manager, "device", device.name)
    compositions_react_to_health(
        unhealthy_device_ids=[device.pk], healthy_device_ids=[], reason="device failed"
    )
    for composition in compositions:
        composition.refresh_from_db()
        assert composition.state == CompositionState.DEGRADED


def heal(composition: Composition, alice: Any, capture: Any) -> Job:
    with capture(execute=True):
        job = heal_request(composition=composition, actor=alice)
    job.refresh_from_db()
    composition.refresh_from_db()
    return job


def test_two_compositions_sharing_a_failed_gpu_both_land_on_one_replacement_bound_once(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    first = compose(acme, alice, share_spec(250, self_heal=True), name="first")
    second = compose(acme, alice, share_spec(500, self_heal=True), name="second")
    lost_first, lost_second = held(first), held(second)
    failed = lost_first.device
    assert lost_second.device == failed  # best fit: both on one GPU
    assert figures(failed) == (DeviceState.BOUND, 750, HOST, HOST)

    fault(synced, "device", failed.name)
    with django_capture_on_commit_callbacks(execute=True):
        reaction = compositions_react_to_health(
            unhealthy_device_ids=[failed.pk], healthy_device_ids=[], reason="device failed"
        )

    assert len(reaction.heal_jobs) == 2
    jobs = list(Job.objects.filter(kind=JobKind.HEAL).order_by("pk"))
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED] * 2, [j.error for j in jobs]
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == second.state == CompositionState.READY
    new_first, new_second = held(first), held(second)
    spare = new_first.device
    # The same size again, both on the one other H100, shared on the same host.
    assert (new_first.share, new_second.share) == (250, 500)
    assert new_second.device == spare and spare.model == H100 and spare != failed
    assert figures(spare) == (DeviceState.BOUND, 750, HOST, HOST)
    # Bound once: the second share recorded the binding the first made.
    assert new_first.binding_id and new_second.binding_id == new_first.binding_id
    assert bindings_of(driver, spare) == [new_first.binding_id]
    heal_lines = list(jobs[1].log_lines.values_list("message", "tenant_message"))
    assert any("is bound to" in m and "already" in t for m, t in heal_lines), heal_lines
    # The failed GPU gave both shares back and was unbound with the last one.
    for lost in (lost_first, lost_second):
        lost.refresh_from_db()
        assert lost.state == AllocationState.RELEASED
    assert figures(failed) == (DeviceState.FAILED, 0, None, None)
    assert bindings_of(driver, failed) == []
    # The counts are exact: nothing for the reconciler to correct.
    assert shares_held([spare.pk, failed.pk]) == {spare.pk: 750}
    assert devices_shares_reconcile() == []
    # The plans name the share held now.
    for composition, share in ((first, 250), (second, 500)):
        plan = composition.placement
        assert [(p["name"], p["share"]) for p in plan["devices"]] == [(spare.name, share)]
        assert HEALING_KEY not in plan and plan["healed"][-1]["replacement"] == [spare.name]
        assert f"a {share}/1000 share of {spare.name}" in plan["explanation"][-1]


def test_a_share_goes_first_on_a_gpu_already_shared_on_the_host_and_none_left_degrades(
    pooled: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # Any model: the 250 that finds the first GPU full breaks the other GPU of its
    # enclosure, of the same model, so of the same pool.
    first = compose(acme, alice, share_spec(500, model=None), name="first")
    second = compose(acme, alice, share_spec(500, model=None), name="second")
    third = compose(acme, alice, share_spec(250, model=None), name="third")
    failed, other = held(first).device, held(third).device
    assert held(second).device == failed and other != failed
    assert (other.pool, other.model) == (failed.pool, failed.model)
    other_binding = held(third).binding_id
    fail(pooled, failed, first, second)

    job = heal(first, alice, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert first.state == CompositionState.READY
    moved = held(first)
    assert (moved.device, moved.share, moved.binding_id) == (other, 500, other_binding)
    assert figures(other) == (DeviceState.BOUND, 750, HOST, HOST)
    assert bindings_of(driver, other) == [other_binding]  # no fabric operation
    # The second still holds its share of the failed GPU, which stays bound for it.
    assert figures(failed) == (DeviceState.FAILED, 500, HOST, HOST)
    assert len(bindings_of(driver, failed)) == 1

    job = heal(second, alice, django_capture_on_commit_callbacks)

    # No GPU of the pool has 500/1000 free: degraded, with the reason in words.
    assert job.status == JobStatus.FAILED
    assert second.state == CompositionState.DEGRADED
    reason = second.failure_reason
    assert failed.pool is not None
    assert reason.startswith(
        f"No spare 500/1000 share of a GPU that host {HOST} reaches (from pool "
        f"{failed.pool.name}) to replace {failed.name}: "
    ), reason
    assert "has 500/1000 free; a 500/1000 share asked" in reason
    assert reason.endswith("from another pool."), reason
    assert held(second).device == failed and held(second).share == 500
    assert figures(other) == (DeviceState.BOUND, 750, HOST, HOST)
    assert devices_shares_reconcile() == []


def test_a_heal_rolled_back_never_unbinds_a_replacement_another_composition_shares(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    first = compose(acme, alice, share_spec(250), name="first")
    second = compose(acme, alice, share_spec(500), name="second")
    failed = held(first).device
    fail(synced, failed, first, second)
    assert heal(first, alice, django_capture_on_commit_callbacks).status == JobStatus.SUCCEEDED
    spare = held(first)
    # The second's spare share lands on the same GPU; its verification cannot read the
    # manager, so its heal is rolled back.
    sim = store.fabric_get("sim")
    store.operation_fault_set(fabric=sim, operation="bindings", mode="permanent", count=2)

    job = heal(second, alice, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.FAILED
    assert second.state == CompositionState.DEGRADED
    assert second.failure_reason.startswith("Self-heal rolled back:")
    assert Allocation.objects.get(composition=second, device=spare.device).state == (
        AllocationState.RELEASED
    )
    assert held(second).device == failed  # still its lost share, nothing half-done
    # The first's share of the replacement is untouched, and still bound.
    assert figures(spare.device) == (DeviceState.BOUND, 250, HOST, HOST)
    assert bindings_of(driver, spare.device) == [spare.binding_id]
    assert devices_shares_reconcile() == []


def test_a_whole_gpu_heals_while_a_gpu_of_another_pool_is_shared_on_the_host(
    pooled: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    compose(acme, alice, share_spec(250, model="L40S 48GB"), name="notebook")
    whole = compose(
        acme, alice, {"items": [{"kind": "gpu", "model": H100, "count": 1}], "host": HOST}
    )
    failed = held(whole).device
    fail(pooled, failed, whole)

    job = heal(whole, alice, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.SUCCEEDED, job.error
    replacement = held(whole)
    assert replacement.share is None and replacement.device.model == H100
    assert replacement.device != failed


def test_the_last_shares_unbind_of_the_failed_gpu_that_fails_is_kept_and_retried(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, share_spec(250))
    lost = held(composition)
    failed = lost.device
    fail(synced, failed, composition)
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="unbind", mode="permanent", count=1
    )

    job = heal(composition, alice, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["replaced"][0]["unbind_pending"] == [lost.binding_id]
    [pending] = UnbindPending.objects.filter(undone_at__isnull=True)
    assert (pending.device, pending.binding_id) == (failed, lost.binding_id)
    # No share held any more, but still bound to the host: the pending row holds it.
    assert figures(failed) == (DeviceState.FAILED, 0, None, HOST)
    assert devices_shares_reconcile() == []

    assert [a.pending.binding_id for a in unbinds_pending_retry() if a.undone] == [lost.binding_id]
    assert figures(failed) == (DeviceState.FAILED, 0, None, None)
    assert bindings_of(driver, failed) == []
