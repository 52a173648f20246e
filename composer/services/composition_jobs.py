"""The compose and decompose jobs: bind and unbind through the fabric driver, step by step.

Compose: reserve (the request already claimed) -> bind each allocation -> verify -> READY.
The binds run side by side when the manager is slow (up to COMPOSER_BIND_PARALLELISM at
once), and each binding's id is committed on its Allocation as soon as it
is made, so a retried or redelivered job skips what is bound and never binds twice (and
the driver's bind is idempotent besides). A bind that times out may have happened: the job
asks the manager (`bindings()`) and records what it finds. Transient driver errors go back
to the runner, which retries the task with back-off; a permanent error, the last retry,
the time limit or any other failure rolls back: what was bound (recorded, or found on the
manager) is unbound (a transient error tried again with back-off), the allocations are
released and the composition ends FAILED with the reason (rule 2); a binding that still
cannot be undone is held by an `UnbindPending` row for the reconciler, never by the FAILED
composition. Decompose unbinds (idempotent), releases and ends RELEASED. Binding and
unbinding go through `fabric.reconfig` (`composer.services.bindings` is composer's side of
it: allocations as targets, the job log's words).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState
from composer.errors import BindingFailed, ComposerError, InvalidTransition, StaleState
from composer.joblog import for_tenants
from composer.lease import STOP_WITHOUT_UNDO, lease_confirm
from composer.models import Allocation, Composition, Job
from composer.runner import ProgressFn, run_job
from composer.services.allocations import allocation_mark_bound, allocations_release
from composer.services.bindings import (
    allocation_label,
    allocation_words,
    allocations_bind,
    allocations_unbind,
    allocations_verify,
    bindings_adopt,
)
from composer.services.share_bindings import (
    allocation_unbind_release,
    shares_bind,
    shares_unbind_release,
)
from composer.services.unbinds import allocation_release_unbind_pending
from composer.states import composition_transition
from fabric import reconfig
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.drivers.registry import get_driver

logger = logging.getLogger(__name__)

__all__ = [
    "composition_compose_run",
    "composition_decompose_run",
    "composition_rollback",
    "job_composition",
    "job_failure_reason",
]


def job_composition(job: Job) -> Composition:
    """The composition `job` works on (with its host, manager and tenant). Raises
    ComposerError when it no longer exists."""
    composition = (
        Composition.objects.select_related("host__manager", "tenant")
        .filter(pk=job.target_id)
        .first()
    )
    if composition is None:
        raise ComposerError(f"Composition {job.target_label or job.target_id} no longer exists.")
    return composition


def _active(composition: Composition) -> list[Allocation]:
    return list(
        Allocation.objects.select_related("device")
        .filter(composition=composition, released_at__isnull=True)
        .order_by("id")
    )


def composition_compose_run(job: Job, *, retryable: bool = True) -> Job:
    """Run compose job `job` in this process (what the task does), via `run_job`.

    Raises JobRetry (job back in QUEUED, allocations kept) for a transient driver error
    while `retryable`; otherwise the job ends SUCCEEDED (composition READY) or FAILED
    (composition FAILED after the rollback).
    """

    def work(progress: ProgressFn) -> dict[str, Any]:
        composition = job_composition(job)
        source = f"compose job {job.pk}"
        if composition.state == CompositionState.READY:
            logger.info(
                "composition %s is already ready; nothing to do",
                composition.pk,
                extra=for_tenants(f"{composition.name} is already ready; nothing to do."),
            )
            return {"composition": composition.pk, "state": composition.state}
        if composition.state not in (CompositionState.PLACING, CompositionState.BINDING):
            raise ComposerError(
                f"Composition {composition.name} is {composition.state}; nothing to compose."
            )
        try:
            if composition.state == CompositionState.PLACING:
                composition_transition(
                    composition,
                    CompositionState.BINDING,
                    reason=f"Binding ({source})",
                    actor=job.requested_by,
                    source=source,
                )
            return _compose_steps(job, composition, progress, source, _set)
        except STOP_WITHOUT_UNDO:
            raise  # taken over, or to be resumed: the next run finishes or rolls back
        except DriverError as exc:
            if exc.permanent or not retryable:
                lease_confirm(job)  # a successor's bindings are not this run's to undo
                composition_rollback(
                    composition=composition,
                    driver=driver_ref[0],
                    reason=job_failure_reason(exc, kind="compose"),
                    source=source,
                )
            raise
        except BaseException as exc:
            lease_confirm(job)
            composition_rollback(
                composition=composition,
                driver=driver_ref[0],
                reason=job_failure_reason(exc, kind="compose"),
                source=source,
            )
            raise

    driver_ref: list[FabricDriver | None] = [None]

    def _set(driver: FabricDriver) -> None:
        driver_ref[0] = driver

    return run_job(job, work, retryable=retryable)


def job_failure_reason(exc: BaseException, *, kind: str) -> str:
    """Why a composition job (`kind`: "compose", "heal") stopped, in words for the page,
    which the composition's tenant reads: a driver's error only as composer retold it
    (`BindingFailed`), never the manager's own answer (that is in the operators' log)."""
    if type(exc).__name__ == "SoftTimeLimitExceeded":
        return f"The {kind} job ran past its time limit."
    if isinstance(exc, ComposerError | BindingFailed):
        return exc.message
    if isinstance(exc, DriverError):
        if exc.permanent:
            return "The fabric manager refused the operation."
        return "The fabric manager is busy or did not answer in time."
    return f"{type(exc).__name__}: {exc}"


def _compose_steps(
    job: Job, composition: Composition, progress: ProgressFn, source: str, keep_driver: Any
) -> dict[str, Any]:
    host = composition.host
    if host is None:
        raise ComposerError(f"Composition {composition.name} has no host.")
    allocations = _active(composition)
    if not allocations:
        raise ComposerError(f"Composition {composition.name} holds no devices to bind.")
    total = len(allocations) + 3
    reserved = f"Reserved {len(allocations)} device(s) on {host.name}"
    progress(1, total, reserved)
    logger.info(
        "composition %s: %s allocation(s) reserved for %s",
        composition.pk,
        len(allocations),
        host.name,
        extra=for_tenants(f"{reserved}."),
    )
    driver = get_driver(host.manager)
    keep_driver(driver)
    done = [1]
    label = allocation_label

    def record(allocation: Allocation, binding: Binding) -> None:
        # Recorded (committed) as soon as it is made: a redelivery resumes after it.
        allocation_mark_bound(
            allocation=allocation, binding_id=binding.binding_id, host=host, source=source
        )
        logger.info(
            "bound %s to %s (%s)",
            label(allocation),
            host.name,
            binding.binding_id,
            extra=for_tenants(f"Bound {allocation_words(allocation)} to {host.name}."),
        )
        done[0] += 1
        progress(done[0], total, f"Bound {label(allocation)}")

    for allocation in allocations:
        if allocation.binding_id:
            name, binding_id = label(allocation), allocation.binding_id
            logger.info(
                "%s is already bound (%s); skipped",
                name,
                binding_id,
                extra=for_tenants(f"{allocation_words(allocation)} is already bound; skipped."),
            )
            done[0] += 1
            progress(done[0], total, f"Bound {label(allocation)}")
    unbound = [a for a in allocations if not a.binding_id]
    if unbound and (job.attempts > 1 or job.resumes):
        # Resuming (a worker died, or a retry): a bind made just before may not be recorded.
        unbound = bindings_adopt(driver, unbound, host, record)
    # A share binds its GPU only when no other share on the host has bound it already.
    shares_bind(driver, [a for a in unbound if a.share], host, record)
    allocations_bind(driver, [a for a in unbound if not a.share], host, record)
    allocations_verify(driver, allocations, host)
    progress(total - 1, total, "Verified every binding on the fabric manager")
    logger.info(
        "verified %s binding(s) on %s",
        len(allocations),
        host.name,
        extra=for_tenants(f"Verified {len(allocations)} device(s) on {host.name}."),
    )
    composition_transition(
        composition,
        CompositionState.READY,
        reason=f"Every device bound and verified ({source})",
        actor=job.requested_by,
        source=source,
        ready_at=timezone.now(),
    )
    progress(total, total, "Ready")
    return {
        "composition": composition.pk,
        "state": CompositionState.READY.value,
        "host": host.name,
        "bindings": [a.binding_id for a in allocations],
    }


def composition_rollback(
    *,
    composition: Composition,
    driver: FabricDriver | None,
    reason: str,
    source: str,
) -> Composition:
    """Compensate a compose that cannot finish: unbind, release, composition FAILED.

    Each unbind is tried a few times with back-off (`fabric.reconfig.undo`). A binding that
    still cannot be undone (the manager is unreachable, or keeps failing) does not stay on
    the composition: its allocation is released with the rest, so a FAILED composition
    never holds a device, and an `UnbindPending` row holds the device instead (still BOUND,
    its GiB still counted) until the reconciler unbinds it (rule 2: recorded or undone).
    Bindings the manager made but never reported (it could not be read) are orphans the
    reconciler finds on the fabric. Safe to call twice.
    """
    composition.refresh_from_db(fields=["state"])  # the caller's copy may be old
    if composition.state not in (
        CompositionState.REQUESTED,
        CompositionState.PLACING,
        CompositionState.BINDING,
    ):
        return composition
    logger.warning(
        "composition %s: rolling back (%s)",
        composition.pk,
        reason,
        # The tenant reads the reason in the line that failed and in the job's last line.
        extra=for_tenants("Rolling back: unbinding what was bound, releasing every device."),
    )
    allocations = _active(composition)
    failed: dict[int, dict[str, str]] = {}
    host = composition.host
    if host is not None and allocations:
        try:
            driver = driver or get_driver(host.manager)
            reported = reconfig.reported_bindings_or_none(driver)
            # A share's GPU is unbound only when no other composition shares it; released.
            allocations = shares_unbind_release(
                driver=driver,
                composition=composition,
                allocations=allocations,
                host=host,
                reported=reported,
                source=source,
            )
            failed = allocations_unbind(driver, allocations, host, reported)
        except DriverError as exc:  # no driver at all: undo only what was never bound
            logger.error(
                "rollback of composition %s: %s",
                composition.pk,
                exc.message,
                extra=for_tenants("The fabric manager cannot be reached: nothing was unbound."),
            )
            failed = {a.pk: {a.binding_id: exc.message} for a in allocations if a.binding_id}
    if failed and host is not None:
        with transaction.atomic():
            for allocation in allocations:
                if allocation.pk in failed:
                    allocation_release_unbind_pending(
                        composition=composition,
                        allocation=allocation,
                        host=host,
                        not_undone=failed[allocation.pk],
                        source=source,
                    )
    allocations_release(composition=composition, source=source)
    text = reason
    if failed:
        text += (
            f" {len(failed)} device(s) could not be unbound yet; they are cleaned up automatically."
        )
    try:
        composition_transition(
            composition,
            CompositionState.FAILED,
            reason=f"Rolled back: {text}",
            source=source,
            failure_reason=text,
        )
    except (StaleState, InvalidTransition):
        logger.warning("composition %s changed during its rollback", composition.pk)
    # A booked window it was serving cannot come up: reported now, not at the next tick.
    from composer.services.booking_clock import occurrences_fail_with

    occurrences_fail_with(composition)
    return composition


def composition_decompose_run(job: Job, *, retryable: bool = True) -> Job:
    """Run decompose job `job`: unbind every bound allocation (idempotent), sweep bindings
    of its devices the manager still reports on the host, release, RELEASED.

    Transient driver errors retry (JobRetry); a permanent one fails the job and leaves the
    composition DECOMPOSING with what is still bound recorded; decompose can be asked again.
    """

    def work(progress: ProgressFn) -> dict[str, Any]:
        composition = job_composition(job)
        source = f"decompose job {job.pk}"
        if composition.state == CompositionState.RELEASED:
            logger.info(
                "composition %s is already released",
                composition.pk,
                extra=for_tenants(f"{composition.name} is already released."),
            )
            return {"composition": composition.pk, "state": composition.state}
        if composition.state != CompositionState.DECOMPOSING:
            raise ComposerError(
                f"Composition {composition.name} is {composition.state}; nothing to decompose."
            )
        allocations = _active(composition)
        host = composition.host
        total = len(allocations) + 2
        if host is not None and allocations:
            driver = get_driver(host.manager)
            # Also what the manager reports for these devices on this host but no reply
            # recorded; they are still held by this composition, so the bindings are ours.
            reported = reconfig.reported_bindings(driver)
            for index, allocation in enumerate(allocations, start=1):
                # A transient error while the task may retry goes up (retried with back-off);
                # a permanent one, or any on the last try, is left to the reconciler, so the
                # composition is released, never left decomposing with a device half-held.
                # A share's GPU is unbound with its last share only.
                allocation_unbind_release(
                    driver=driver,
                    composition=composition,
                    allocation=allocation,
                    host=host,
                    reported=reported,
                    raise_transient=retryable,
                    source=source,
                )
                progress(index, total, f"Released {allocation.device.name}")
        else:
            allocations_release(composition=composition, source=source)
        progress(total - 1, total, "Every device unbound and released")
        composition_transition(
            composition,
            CompositionState.RELEASED,
            reason=f"Every device unbound and released ({source})",
            actor=job.requested_by,
            source=source,
            released_at=timezone.now(),
        )
        progress(total, total, "Released")
        return {"composition": composition.pk, "state": CompositionState.RELEASED.value}

    return run_job(job, work, retryable=retryable)
