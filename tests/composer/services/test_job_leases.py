"""Jobs whose worker died: taken over when their lease expired (by the lease sweep or by a
redelivery), resumed from the last recorded step without binding twice, and failed and
rolled back when they kill their worker too often."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from django.utils import timezone

from composer.choices import CompositionState, JobStatus
from composer.models import Allocation, Composition, Job
from composer.runner import JobRetry
from composer.services.composition_jobs import composition_compose_run
from composer.services.compositions import composition_request
from composer.services.heal import composition_heal_run, heal_request
from composer.services.job_leases import RESUMING, jobs_lease_sweep
from composer.tasks import composition_compose_task
from fabric.drivers.base import DriverError, FabricDriver
from fabric.models import FabricManager
from fabric.simulator.driver import SimulatedDriver
from tests.composer.services.test_composition_jobs import compose_job, fail_after_first_bind
from tests.composer.services.test_heal import ONE_OF_EACH, degrade
from tests.composer.services.test_health import compose
from tests.support.rollback import assert_rolled_back

pytestmark = pytest.mark.django_db

SPEC = {"items": [{"kind": "gpu", "count": 2}]}


@pytest.fixture
def composing(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    """A compose request whose job was never run (no on-commit in these tests)."""
    return composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="c1")


def died(
    job: Job,
    *,
    expired_s: float = 1,
    resumes: int = 0,
    state: CompositionState = CompositionState.BINDING,
) -> Job:
    """As if attempt 1's worker died mid-bind: RUNNING, composition `state`, lease run out."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        attempts=1,
        resumes=resumes,
        started_at=now - timedelta(seconds=60),
        lease_owner="worker-1 pid 4242",
        lease_expires_at=now - timedelta(seconds=expired_s),
    )
    Composition.objects.filter(pk=job.target_id).update(state=state)
    return Job.objects.get(pk=job.pk)


@pytest.fixture
def binds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every bind the simulated manager is asked for, by device."""
    calls: list[str] = []
    real = SimulatedDriver.bind

    def counting(self: SimulatedDriver, **kwargs: Any) -> Any:
        calls.append(kwargs["device_id"])
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", counting)
    return calls


def assert_ready_and_bound_once(composition: Composition, driver: FabricDriver) -> None:
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY
    recorded = set(composition.allocations.values_list("binding_id", flat=True))
    reported = driver.bindings()
    assert {b.binding_id for b in reported} == recorded and len(recorded) == 2
    devices = [b.device_id for b in reported]
    assert len(devices) == len(set(devices))


def test_the_sweep_takes_over_a_job_whose_lease_expired_and_sends_it_again(
    composing: Composition, driver: FabricDriver
) -> None:
    job = died(compose_job(composing))

    with mock.patch("composer.services.dispatch.job_enqueue") as enqueue:
        assert jobs_lease_sweep() == 1

    job.refresh_from_db()
    assert (job.status, job.resumes, job.message) == (JobStatus.QUEUED, 1, RESUMING)
    assert (job.lease_owner, job.lease_expires_at) == ("", None)
    enqueue.assert_called_once()
    assert enqueue.call_args.args[0].pk == job.pk
    line = job.log_lines.get()
    assert "worker-1 pid 4242" in line.message  # operators read which worker died
    assert line.tenant_message == f"{RESUMING}; it resumes from its last recorded step."


def test_the_sweep_leaves_a_job_whose_lease_is_live(composing: Composition) -> None:
    job = died(compose_job(composing), expired_s=-10)  # expires in 10 s

    assert jobs_lease_sweep() == 0
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_a_resumed_compose_finishes_and_binds_nothing_twice(
    composing: Composition, driver: FabricDriver, binds: list[str]
) -> None:
    job = died(compose_job(composing))

    assert jobs_lease_sweep() == 1  # eager: the task it sends runs at once

    job.refresh_from_db()
    assert (job.status, job.resumes, job.attempts) == (JobStatus.SUCCEEDED, 1, 2)
    assert_ready_and_bound_once(composing, driver)
    assert len(binds) == 2


def test_a_resume_records_a_binding_made_before_the_death_instead_of_binding_again(
    composing: Composition, driver: FabricDriver, binds: list[str]
) -> None:
    job = died(compose_job(composing))
    first = composing.allocations.order_by("pk").first()
    assert first is not None and composing.host is not None
    # The dead worker's last bind happened on the manager; its reply was never recorded.
    made = driver.bind(device_id=first.device.external_id, host_id=composing.host.external_id)
    binds.clear()

    jobs_lease_sweep()

    first.refresh_from_db()
    assert first.binding_id == made.binding_id
    assert first.device.external_id not in binds and len(binds) == 1
    assert_ready_and_bound_once(composing, driver)
    assert job.log_lines.filter(message__contains="never recorded: recorded, not bound").exists()


def test_a_redelivery_takes_over_a_job_whose_lease_expired(
    composing: Composition, driver: FabricDriver
) -> None:
    job = died(compose_job(composing))

    composition_compose_task.delay(job.pk)  # the message of the dead worker, redelivered

    job.refresh_from_db()
    assert (job.status, job.resumes) == (JobStatus.SUCCEEDED, 1)
    assert_ready_and_bound_once(composing, driver)
    assert job.log_lines.filter(message__contains="noticed by a redelivery").exists()


def test_a_redelivery_leaves_a_job_whose_holder_is_alive(
    composing: Composition, caplog: pytest.LogCaptureFixture
) -> None:
    job = died(compose_job(composing), expired_s=-10)

    with caplog.at_level(logging.INFO, logger="composer"):
        composition_compose_task.delay(job.pk)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.resumes) == (JobStatus.RUNNING, 1, 0)
    assert "held by worker-1 pid 4242" in caplog.text and "duplicate delivery" in caplog.text


def test_a_job_whose_worker_keeps_dying_fails_and_its_composition_is_rolled_back(
    composing: Composition, driver: FabricDriver, settings: Any
) -> None:
    settings.COMPOSER_JOB_MAX_RESUMES = 3
    job = died(compose_job(composing), resumes=3)
    first = composing.allocations.order_by("pk").first()
    assert first is not None and composing.host is not None
    driver.bind(device_id=first.device.external_id, host_id=composing.host.external_id)

    with mock.patch("composer.services.dispatch.job_enqueue") as enqueue:
        assert jobs_lease_sweep() == 0

    enqueue.assert_not_called()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("Stopped: its worker died 4 times")
    assert_rolled_back(composing, driver)  # the unrecorded binding is undone too
    assert composing.failure_reason.startswith("Its compose job's worker kept dying.")


def test_a_compose_that_lost_its_lease_stops_without_rolling_back(
    composing: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = compose_job(composing)
    real = SimulatedDriver.bind

    def bind_then_lose_the_lease(self: SimulatedDriver, **kwargs: Any) -> Any:
        binding = real(self, **kwargs)
        # Meanwhile another worker took the job over (this one seemed dead).
        Job.objects.filter(pk=job.pk).update(attempts=2)
        return binding

    monkeypatch.setattr(SimulatedDriver, "bind", bind_then_lose_the_lease)
    monkeypatch.setattr("composer.joblog.PROGRESS_INTERVAL_S", 0.0)  # every step writes

    composition_compose_run(job)

    job.refresh_from_db()
    composing.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.RUNNING, 2)  # the successor's
    assert composing.state == CompositionState.BINDING  # no rollback
    bound = composing.allocations.exclude(binding_id="")
    assert bound.count() == 1  # the binding it made is recorded
    assert len(driver.bindings()) == 1
    assert not composing.allocations.filter(released_at__isnull=False).exists()


def test_a_resumed_heal_records_a_spare_bound_before_the_death_instead_of_binding_it_again(
    synced: FabricManager,
    driver: SimulatedDriver,
    acme: Any,
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    composition = compose(acme, alice, ONE_OF_EACH)
    degrade(synced, composition, "gpu-a-01-1", "gpu-a-02-1")
    job = heal_request(composition=composition, actor=alice)
    real = SimulatedDriver.bind
    fail_after_first_bind(monkeypatch, "transient")
    with pytest.raises(JobRetry):  # both spares claimed, one bound and recorded
        composition_heal_run(job)
    spare = Allocation.objects.get(
        composition=composition, released_at__isnull=True, binding_id="", device__kind="gpu"
    )
    assert composition.host is not None
    # The worker of the next attempt bound it and died before recording it.
    made = real(driver, device_id=spare.device.external_id, host_id=composition.host.external_id)
    died(Job.objects.get(pk=job.pk), state=CompositionState.HEALING)
    binds: list[str] = []

    def counting(self: SimulatedDriver, **kwargs: Any) -> Any:
        binds.append(kwargs["device_id"])
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", counting)

    assert jobs_lease_sweep() == 1

    job.refresh_from_db()
    spare.refresh_from_db()
    composition.refresh_from_db()
    assert (job.status, composition.state) == (JobStatus.SUCCEEDED, CompositionState.READY)
    assert spare.binding_id == made.binding_id and binds == []
    devices = [b.device_id for b in driver.bindings()]
    assert len(devices) == len(set(devices))


def test_a_heal_whose_worker_keeps_dying_fails_and_goes_back_to_degraded(
    synced: FabricManager,
    driver: SimulatedDriver,
    acme: Any,
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    settings.COMPOSER_JOB_MAX_RESUMES = 3
    composition = compose(acme, alice, ONE_OF_EACH)
    before = {b.binding_id for b in driver.bindings()}
    degrade(synced, composition, "gpu-a-01-1", "gpu-a-02-1")
    job = heal_request(composition=composition, actor=alice)
    fail_after_first_bind(monkeypatch, "transient")
    with pytest.raises(JobRetry):  # a spare claimed and bound
        composition_heal_run(job)
    assert {b.binding_id for b in driver.bindings()} != before
    died(Job.objects.get(pk=job.pk), resumes=3, state=CompositionState.HEALING)

    assert jobs_lease_sweep() == 0

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert composition.state == CompositionState.DEGRADED
    assert "worker kept dying" in composition.failure_reason
    assert {b.binding_id for b in driver.bindings()} == before  # the spare's bind undone


def test_a_compose_that_lost_its_lease_does_not_roll_back_on_a_later_error(
    composing: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow worker whose next bind is refused (its successor holds the device now) must
    not undo the successor's work: the rollback first asks the database whose job it is."""
    job = compose_job(composing)
    real = SimulatedDriver.bind
    calls: list[int] = []

    def bind_then_refused(self: SimulatedDriver, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            binding = real(self, **kwargs)
            Job.objects.filter(pk=job.pk).update(attempts=2)  # taken over meanwhile
            return binding
        raise DriverError("device is bound to another request", permanent=True)

    monkeypatch.setattr(SimulatedDriver, "bind", bind_then_refused)
    monkeypatch.setattr("fabric.reconfig.binds.bind_parallelism", lambda count: 1)

    composition_compose_run(job)

    job.refresh_from_db()
    composing.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.RUNNING, 2)  # the successor's
    assert composing.state == CompositionState.BINDING  # no rollback
    assert len(driver.bindings()) == 1
    assert not composing.allocations.filter(released_at__isnull=False).exists()


def test_a_redelivery_that_takes_a_job_over_counts_as_its_dispatch(
    composing: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Else a transient retry of the resumed job would look never sent to the dispatch
    pass, which would send it again at once, ahead of its back-off."""
    job = died(compose_job(composing))
    seen: list[Any] = []
    real = SimulatedDriver.bind

    def note_dispatch(self: SimulatedDriver, **kwargs: Any) -> Any:
        seen.append(Job.objects.values_list("dispatched_at", flat=True).get(pk=job.pk))
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", note_dispatch)
    composition_compose_task.delay(job.pk)

    assert seen and all(at is not None for at in seen)


@pytest.mark.django_db(transaction=True)  # the runner closes the cut connection
def test_a_compose_whose_database_connection_is_cut_mid_bind_resumes_instead_of_rolling_back(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    driver: FabricDriver,
    binds: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The chaos run of issue 11: with every connection terminated mid-bind, the compose
    rolled back (unbinding what it had bound) and then failed. The steps are idempotent:
    it is handed over at once and the next run finishes it, adopting the binding it made."""
    counting = SimulatedDriver.bind
    cut = {"done": False}

    def bind_then_lose_the_database(self: SimulatedDriver, **kwargs: Any) -> Any:
        binding = counting(self, **kwargs)
        if not cut["done"]:
            cut["done"] = True  # bound on the fabric, not yet recorded
            raise OperationalError("terminating connection due to administrator command")
        return binding

    monkeypatch.setattr(SimulatedDriver, "bind", bind_then_lose_the_database)

    # Committed, so its job is sent (and run, eagerly) at once; so is the hand-over's send.
    composing = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="c1")

    job = compose_job(composing)
    assert (job.status, job.resumes, job.attempts) == (JobStatus.SUCCEEDED, 1, 2)
    assert_ready_and_bound_once(composing, driver)
    assert len(binds) == 2  # the first binding adopted, not made again
    assert not composing.allocations.filter(released_at__isnull=False).exists()
