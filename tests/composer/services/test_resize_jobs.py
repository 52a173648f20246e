"""The resize job with faults injected into the simulated fabric: a failed bind or
verification rolls the additions back and leaves the composition ready with what it had
and the reason; a retried or resumed job never binds twice; an unbind that fails is held
by an UnbindPending row, never orphaned; a resize no job finishes is ended by the
reconciler, or failed with its rollback when its worker keeps dying."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone

from composer.choices import AllocationState, CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job, Quota, UnbindPending
from composer.runner import JobRetry
from composer.selectors.quotas import quota_usage
from composer.services.heal import heal_request
from composer.services.job_leases import jobs_lease_sweep
from composer.services.reconcile import compositions_reconcile
from composer.services.resize import RESIZING_KEY, composition_resize_run, resize_request
from composer.services.unbinds import unbinds_pending_retry
from composer.tasks import composition_resize_task
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.models import Device, FabricManager
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from tests.composer.services.test_composition_jobs import fail_after_first_bind
from tests.composer.services.test_heal import degrade
from tests.composer.services.test_health import compose
from tests.composer.services.test_resize import bound, held

pytestmark = pytest.mark.django_db

ONE_H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}
TWO_MORE = [{"kind": "gpu", "count": 2}]


@pytest.fixture
def ready(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return compose(acme, alice, ONE_H100)


def queued(composition: Composition, user: Any, add: Any = TWO_MORE, remove: Any = ()) -> Job:
    """A resize requested, its job queued and not run (nothing runs it on commit)."""
    job = resize_request(composition=composition, add=add, remove=list(remove), requested_by=user)
    composition.refresh_from_db()
    assert composition.state == CompositionState.RESIZING
    return Job.objects.select_related("requested_by").get(pk=job.pk)


def fail_unbind(mode: str, count: int = 1) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="unbind", mode=mode, count=count
    )


def assert_as_before(composition: Composition, driver: FabricDriver, kept: set[str]) -> None:
    """READY with what it had: the kept device held and bound, nothing else held, every
    device the resize claimed free again, and the request and plan untouched."""
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY
    assert held(composition) == kept == bound(driver, composition)
    assert len(driver.bindings()) == len(kept)
    assert RESIZING_KEY not in composition.placement
    assert [(i["model"], i["count"]) for i in composition.spec["items"]] == [("H100 PCIe 80GB", 1)]
    assert {p["name"] for p in composition.placement["devices"]} == kept
    assert set(Device.objects.exclude(name__in=kept).values_list("state", flat=True)) <= {
        DeviceState.FREE
    }


def test_a_permanent_bind_error_rolls_the_additions_back_and_says_why(
    ready: Composition, driver: FabricDriver, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = held(ready)
    job = queued(ready, alice)
    fail_after_first_bind(monkeypatch, "permanent")

    composition_resize_task.delay(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert_as_before(ready, driver, kept)
    assert ready.failure_reason.startswith("Resize rolled back: The fabric manager refused")
    assert job.log_lines.filter(message__startswith="unbound ").count() == 1
    added = Allocation.objects.filter(composition=ready, released_at__isnull=False)
    assert added.count() == 2 and set(added.values_list("state", flat=True)) == {"released"}
    assert list(ready.state_changes.values_list("to_state", flat=True))[-2:] == [
        "resizing",
        "ready",
    ]


def test_a_failed_verification_rolls_the_additions_back(
    ready: Composition, driver: FabricDriver, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = held(ready)
    kept_id = ready.allocations.get().binding_id
    job = queued(ready, alice, add=[{"kind": "gpu"}])
    real = SimulatedDriver.bindings
    monkeypatch.setattr(
        SimulatedDriver, "bindings", lambda self: [b for b in real(self) if b.binding_id == kept_id]
    )

    composition_resize_task.delay(job.pk)
    monkeypatch.setattr(SimulatedDriver, "bindings", real)

    assert_as_before(ready, driver, kept)
    assert "Verification failed" in ready.failure_reason


@pytest.mark.usefixtures("eager_retries")
def test_transient_bind_errors_are_retried_and_nothing_is_bound_twice(
    ready: Composition, driver: FabricDriver, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued(ready, alice)
    fail_after_first_bind(monkeypatch, "transient", count=2)

    composition_resize_task.delay(job.pk)

    job.refresh_from_db()
    ready.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 3), job.error
    assert ready.state == CompositionState.READY and len(held(ready)) == 3
    bindings = driver.bindings()
    assert len(bindings) == 3 == len({b.device_id for b in bindings})
    assert job.log_lines.filter(message__contains="already bound").count() == 2


def test_a_resumed_resize_records_a_bind_whose_reply_was_lost_and_never_binds_it_again(
    ready: Composition, driver: FabricDriver, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued(ready, alice, add=[{"kind": "gpu"}])
    [added] = Allocation.objects.filter(composition=ready, binding_id="")
    assert ready.host is not None
    # The worker bound it and died before recording the reply.
    made = driver.bind(device_id=added.device.external_id, host_id=ready.host.external_id)
    Job.objects.filter(pk=job.pk).update(resumes=1)
    binds: list[str] = []
    real = SimulatedDriver.bind

    def bind(self: SimulatedDriver, **kwargs: Any) -> Any:
        binds.append(kwargs["device_id"])
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", bind)

    composition_resize_task.delay(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert binds == []
    assert Allocation.objects.get(pk=added.pk).binding_id == made.binding_id
    assert job.log_lines.filter(message__contains="never recorded: recorded").exists()


def test_a_redelivered_resize_resumes_where_it_stopped(
    ready: Composition, driver: FabricDriver, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued(ready, alice)
    fail_after_first_bind(monkeypatch, "transient")
    with pytest.raises(JobRetry):
        composition_resize_run(job)
    first = Allocation.objects.filter(composition=ready).exclude(binding_id="")
    assert first.count() == 2 and len(driver.bindings()) == 2  # the kept one and one added

    composition_resize_run(job)  # the redelivery
    composition_resize_task.delay(job.pk)  # and a duplicate after success: a no-op

    job.refresh_from_db()
    ready.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and ready.state == CompositionState.READY
    bindings = driver.bindings()
    assert len(bindings) == 3 == len({b.device_id for b in bindings})


@pytest.mark.usefixtures("eager_retries")
def test_a_transient_unbind_error_retries_the_removals_without_binding_again(
    ready: Composition, driver: FabricDriver, alice: Any, settings: Any
) -> None:
    settings.COMPOSER_UNBIND_BACKOFF_MS = 1
    old = ready.allocations.get()
    job = queued(ready, alice, add=[{"kind": "gpu"}], remove=[old.pk])
    fail_unbind("transient", count=settings.COMPOSER_UNBIND_ATTEMPTS)

    composition_resize_task.delay(job.pk)

    job.refresh_from_db()
    ready.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 2), job.error
    assert ready.state == CompositionState.READY and old.device.name not in held(ready)
    assert bound(driver, ready) == held(ready) and len(driver.bindings()) == 1
    assert not job.log_lines.filter(message__contains="already bound").exists()


def test_an_unbind_that_fails_for_good_is_held_until_the_reconciler_undoes_it(
    ready: Composition, driver: FabricDriver, alice: Any, settings: Any
) -> None:
    settings.COMPOSER_UNBIND_BACKOFF_MS = 1
    old = ready.allocations.get()
    job = queued(ready, alice, add=[{"kind": "gpu"}], remove=[old.pk])
    fail_unbind("permanent")

    composition_resize_task.delay(job.pk)

    job.refresh_from_db()
    ready.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert ready.state == CompositionState.READY and old.device.name not in held(ready)
    old.refresh_from_db()
    assert old.state == AllocationState.RELEASED
    pending = UnbindPending.objects.get(allocation=old)
    assert pending.binding_id == old.binding_id and pending.undone_at is None
    assert Device.objects.get(pk=old.device_id).state == DeviceState.BOUND  # still held

    [attempt] = unbinds_pending_retry()

    assert attempt.undone
    assert Device.objects.get(pk=old.device_id).state == DeviceState.FREE
    assert bound(driver, ready) == held(ready)


def test_the_reconciler_rolls_back_a_resize_no_job_works_on(
    ready: Composition, driver: FabricDriver, alice: Any
) -> None:
    kept = held(ready)
    job = queued(ready, alice)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    Composition.objects.filter(pk=ready.pk).update(updated_at=timezone.now() - timedelta(hours=1))

    result = compositions_reconcile()

    assert result.resize_ended == [ready.pk]
    assert_as_before(ready, driver, kept)
    assert ready.failure_reason == (
        "Resize rolled back: Its resize job ended without finishing it."
    )


def test_a_resize_stopped_after_its_additions_were_in_finishes_its_removals(
    ready: Composition, driver: FabricDriver, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = ready.allocations.get()
    job = queued(ready, alice, add=[{"kind": "gpu"}], remove=[old.pk])
    # The job bound and verified the addition, then stopped for good before the removal.
    monkeypatch.setattr(
        "composer.services.resize.job.removals_finish",
        mock.Mock(side_effect=SystemExit("stopped")),
    )
    with pytest.raises(SystemExit):
        composition_resize_run(job)
    monkeypatch.undo()
    ready.refresh_from_db()
    assert ready.state == CompositionState.READY  # its own rollback finished it
    assert old.device.name not in held(ready) and bound(driver, ready) == held(ready)
    assert ready.spec["items"][0]["model"] is None


def test_a_resize_whose_worker_keeps_dying_fails_and_is_rolled_back(
    ready: Composition, driver: FabricDriver, alice: Any, settings: Any
) -> None:
    settings.COMPOSER_JOB_MAX_RESUMES = 3
    kept = held(ready)
    job = queued(ready, alice, add=[{"kind": "gpu"}])
    [added] = Allocation.objects.filter(composition=ready, binding_id="")
    assert ready.host is not None
    driver.bind(device_id=added.device.external_id, host_id=ready.host.external_id)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        attempts=1,
        resumes=3,
        started_at=now - timedelta(seconds=60),
        lease_owner="worker-1 pid 4242",
        lease_expires_at=now - timedelta(seconds=1),
    )

    with mock.patch("composer.services.dispatch.job_enqueue") as enqueue:
        assert jobs_lease_sweep() == 0

    enqueue.assert_not_called()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert_as_before(ready, driver, kept)  # the unrecorded binding is undone too
    assert ready.failure_reason.startswith("Resize rolled back: Its resize job's worker kept")


def test_a_share_added_beside_another_compositions_share_binds_nothing_more(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    other = compose(acme, alice, {"items": [{"kind": "gpu", "share": 500}]}, name="other")
    shared = other.allocations.get().device
    assert other.host is not None
    spec = {"items": [{"kind": "nic", "count": 1}], "host": other.host.name}
    ready = compose(acme, alice, spec, name="c2")
    with django_capture_on_commit_callbacks(execute=True):
        job = resize_request(
            composition=ready, add=[{"kind": "gpu", "share": 250}], remove=[], requested_by=alice
        )

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    share = Allocation.objects.get(composition=ready, share=250)
    assert share.device_id == shared.pk
    assert share.binding_id == other.allocations.get().binding_id
    assert Job.objects.filter(kind=JobKind.RESIZE).count() == 1


def test_heal_and_quotas_see_the_new_shape(
    ready: Composition,
    synced: FabricManager,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        resize_request(
            composition=ready,
            add=[{"kind": "gpu", "model": "L40S 48GB"}],
            remove=[],
            requested_by=alice,
        )
    added = Allocation.objects.get(composition=ready, device__model="L40S 48GB")
    quota = Quota.objects.create(tenant=acme, kind="gpu", max_count=8)
    assert quota_usage([quota])[quota.pk]["count"] == 2

    degrade(synced, ready, added.device.name)
    with django_capture_on_commit_callbacks(execute=True):
        heal_request(composition=ready, actor=alice)

    ready.refresh_from_db()
    assert ready.state == CompositionState.READY, ready.failure_reason
    # Replaced like for like: the resized request's L40S item, not any GPU.
    models = set(
        ready.allocations.filter(released_at__isnull=True).values_list("device__model", flat=True)
    )
    assert models == {"H100 PCIe 80GB", "L40S 48GB"}
    assert added.device.name not in held(ready)
