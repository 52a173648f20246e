"""Compose and decompose jobs against the simulated driver, with faults injected at the bind
step: transient errors retry and resume, permanent ones roll back, nothing binds twice."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job
from composer.runner import JobRetry
from composer.services.composition_jobs import composition_compose_run
from composer.services.compositions import composition_decompose, composition_request
from composer.tasks import composition_compose_task, composition_decompose_task
from fabric.drivers.base import FabricDriver
from fabric.models import FabricManager
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from tests.support.rollback import assert_rolled_back

pytestmark = pytest.mark.django_db

SPEC = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 128}


@pytest.fixture
def composition(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    """Placed and claimed (3 allocations), its compose job queued but not run."""
    return composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="c1")


def compose_job(composition: Composition) -> Job:
    return Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)


def fail_bind(mode: str, count: int = 1) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="bind", mode=mode, count=count
    )


def fail_after_first_bind(monkeypatch: pytest.MonkeyPatch, mode: str, count: int = 1) -> None:
    """The first bind succeeds; the next `count` fail with `mode`."""
    real = SimulatedDriver.bind
    calls = {"n": 0}

    def bind(self: SimulatedDriver, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            fail_bind(mode, count)
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", bind)


def test_a_permanent_bind_error_after_one_binding_rolls_everything_back(
    composition: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_after_first_bind(monkeypatch, "permanent")

    composition_compose_task.delay(compose_job(composition).pk)

    job = compose_job(composition)

    assert job.status == JobStatus.FAILED and "permanent" in job.error
    assert_rolled_back(composition, driver)
    assert "refused" in composition.failure_reason
    assert job.log_lines.filter(message__startswith="unbound ").count() == 1
    assert list(composition.state_changes.values_list("to_state", flat=True))[-2:] == [
        "binding",
        "failed",
    ]


def test_a_permanent_error_at_the_first_bind_leaves_nothing_held(
    composition: Composition, driver: FabricDriver
) -> None:
    fail_bind("permanent")
    composition_compose_task.delay(compose_job(composition).pk)
    assert_rolled_back(composition, driver)


def test_a_failed_verification_rolls_back_every_binding(
    composition: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = SimulatedDriver.bindings
    monkeypatch.setattr(SimulatedDriver, "bindings", lambda self: real(self)[1:])
    composition_compose_task.delay(compose_job(composition).pk)
    monkeypatch.setattr(SimulatedDriver, "bindings", real)

    assert compose_job(composition).status == JobStatus.FAILED
    assert_rolled_back(composition, driver)
    assert "Verification failed" in composition.failure_reason


@pytest.mark.usefixtures("eager_retries")
def test_transient_bind_errors_are_retried_and_the_retry_resumes_without_binding_twice(
    composition: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_after_first_bind(monkeypatch, "transient", count=2)

    composition_compose_task.delay(compose_job(composition).pk)

    job = compose_job(composition)
    composition.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 3), job.error
    assert composition.state == CompositionState.READY
    bindings = driver.bindings()
    assert len(bindings) == 3 == len({b.device_id for b in bindings})
    assert job.log_lines.filter(message__contains="already bound").count() == 2


@pytest.mark.usefixtures("eager_retries")
def test_transient_errors_past_the_last_retry_fail_and_roll_back(
    composition: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_after_first_bind(monkeypatch, "transient", count=100)

    composition_compose_task.delay(compose_job(composition).pk)

    job = compose_job(composition)
    assert job.status == JobStatus.FAILED and "transient" in job.error
    assert_rolled_back(composition, driver)


def test_a_redelivered_compose_resumes_and_never_binds_twice(
    composition: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_after_first_bind(monkeypatch, "transient")
    job = compose_job(composition)
    with pytest.raises(JobRetry):
        composition_compose_run(job)
    first = Allocation.objects.exclude(binding_id="").get()
    assert job.status == JobStatus.QUEUED and len(driver.bindings()) == 1

    composition_compose_run(job)  # the redelivery
    composition_compose_task.delay(job.pk)  # and a duplicate after success: a no-op

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and composition.state == CompositionState.READY
    bindings = driver.bindings()
    assert len(bindings) == 3 == len({b.device_id for b in bindings})
    assert Allocation.objects.get(pk=first.pk).binding_id == first.binding_id


def test_a_bind_that_times_out_but_happened_is_found_and_recorded(
    composition: Composition, driver: FabricDriver
) -> None:
    fail_bind("timeout")

    composition_compose_task.delay(compose_job(composition).pk)

    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    recorded = set(composition.allocations.values_list("binding_id", flat=True))
    assert recorded == {b.binding_id for b in driver.bindings()} and len(recorded) == 3


def test_a_rollback_unbinds_a_binding_whose_reply_was_lost(
    composition: Composition, driver: FabricDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second bind happens on the manager but times out, and the reconciliation read
    # fails for good: the binding is not recorded, and the rollback must still find it.
    fail_after_first_bind(monkeypatch, "timeout")
    real = SimulatedDriver.bindings
    calls = {"n": 0}

    def bindings(self: SimulatedDriver) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            from fabric.drivers.base import DriverError

            raise DriverError("manager refused the read", permanent=True)
        return real(self)

    monkeypatch.setattr(SimulatedDriver, "bindings", bindings)

    composition_compose_task.delay(compose_job(composition).pk)

    assert_rolled_back(composition, driver)


def test_decompose_twice_is_harmless(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="c1")
    composition.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        job = composition_decompose(composition=composition, actor=alice)
    composition_decompose_task.delay(job.pk)

    job.refresh_from_db()
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert composition.state == CompositionState.RELEASED
    assert driver.bindings() == []
