"""The resize job (see the package docstring)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState
from composer.errors import ComposerError
from composer.joblog import for_tenants
from composer.lease import STOP_WITHOUT_UNDO, lease_confirm
from composer.models import Allocation, Composition, Job
from composer.runner import ProgressFn, run_job
from composer.services.allocations import allocation_mark_bound
from composer.services.bindings import (
    allocation_label,
    allocation_words,
    allocations_bind,
    allocations_verify,
    bindings_adopt,
)
from composer.services.composition_jobs import job_composition, job_failure_reason
from composer.services.resize.common import (
    PHASE_REMOVING,
    RESIZING_KEY,
    active_allocations,
    resizing_record,
)
from composer.services.resize.undo import removals_finish, resize_finish, resize_rollback
from composer.services.share_bindings import shares_bind
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Host

logger = logging.getLogger(__name__)

__all__ = ["composition_resize_run"]


def composition_resize_run(job: Job, *, retryable: bool = True) -> Job:
    """Run resize job `job` in this process (what the task does), via `run_job`.

    Raises JobRetry (job back in QUEUED, the composition RESIZING with what it bound
    recorded) for a transient driver error while `retryable`. Otherwise the job ends
    SUCCEEDED (the composition READY, resized) or FAILED: a permanent driver error, the
    last retry, the time limit or any other failure while the additions are bound undoes
    them, and the composition is READY with what it had and the reason
    (`resize_rollback`).
    """
    driver_ref: list[FabricDriver | None] = [None]

    def work(progress: ProgressFn) -> dict[str, Any]:
        composition = job_composition(job)
        source = f"resize job {job.pk}"
        record = resizing_record(composition)
        if composition.state == CompositionState.READY and (
            record is None or record.get("job") != job.pk
        ):
            logger.info(
                "composition %s is ready; nothing left to resize",
                composition.pk,
                extra=for_tenants(f"{composition.name} is ready; nothing left to resize."),
            )
            return {"composition": composition.pk, "state": composition.state}
        if composition.state != CompositionState.RESIZING or record is None:
            raise ComposerError(
                f"Composition {composition.name} is {composition.state}; nothing to resize."
            )
        try:
            return _resize(job, composition, record, progress, source, driver_ref, retryable)
        except STOP_WITHOUT_UNDO:
            raise  # taken over, or to be resumed: the next run finishes or rolls back
        except DriverError as exc:
            if exc.permanent or not retryable:
                lease_confirm(job)  # a successor's bindings are not this run's to undo
                reason = job_failure_reason(exc, kind="resize")
                resize_rollback(composition, driver_ref[0], reason, source)
            raise
        except BaseException as exc:
            lease_confirm(job)
            reason = job_failure_reason(exc, kind="resize")
            resize_rollback(composition, driver_ref[0], reason, source)
            raise

    return run_job(job, work, retryable=retryable)


def _resize(
    job: Job,
    composition: Composition,
    record: dict[str, Any],
    progress: ProgressFn,
    source: str,
    driver_ref: list[FabricDriver | None],
    retryable: bool,
) -> dict[str, Any]:
    host = composition.host
    if host is None:
        raise ComposerError(f"Composition {composition.name} has no host; it cannot be resized.")
    driver = get_driver(host.manager)
    driver_ref[0] = driver
    adding = list(record.get("add") or [])
    removing = list(record.get("remove") or [])
    total = len(adding) + len(removing) + 3
    done = [1]
    said = f"{len(adding)} to add and {len(removing)} to remove on {host.name}"
    progress(1, total, said[0].upper() + said[1:])
    logger.info("resizing %s: %s", composition.name, said, extra=for_tenants(f"Resizing: {said}."))
    if record.get("phase") != PHASE_REMOVING:
        additions = active_allocations(adding)
        _bind(job, driver, additions, host, source, progress, done, total)
        if additions:
            allocations_verify(driver, additions, host)
            logger.info(
                "verified %s added binding(s) on %s",
                len(additions),
                host.name,
                extra=for_tenants(f"Verified what was added on {host.name}."),
            )
        _phase(composition, PHASE_REMOVING)
        record["phase"] = PHASE_REMOVING
    done[0] = len(adding) + 2
    progress(done[0], total, "Added and verified")
    # The removals: each unbound and released (a transient error retries the task, which
    # resumes here); one that cannot be unbound is held by an UnbindPending row.
    gone = removals_finish(composition, driver, record, source, raise_transient=retryable)
    if gone:
        logger.info(
            "removed %s device(s) from %s",
            gone,
            host.name,
            extra=for_tenants(f"Removed {gone} device(s) from {host.name}."),
        )
    progress(total - 1, total, "Removed")
    entry = resize_finish(composition, job.requested_by, source)
    progress(total, total, "Ready")
    logger.info(
        "composition %s is ready, resized",
        composition.pk,
        extra=for_tenants(f"{composition.name} is ready, resized."),
    )
    return {
        "composition": composition.pk,
        "state": CompositionState.READY.value,
        "host": host.name,
        "added": (entry or {}).get("added", []),
        "removed": (entry or {}).get("removed", []),
    }


def _bind(
    job: Job,
    driver: FabricDriver,
    additions: list[Allocation],
    host: Host,
    source: str,
    progress: ProgressFn,
    done: list[int],
    total: int,
) -> None:
    """Bind what the resize added, each binding recorded the moment it is made; on a
    resumed run, what is bound is skipped and a bind whose reply was never recorded is
    adopted from the manager's report, never made twice."""

    def record(allocation: Allocation, binding: Binding) -> None:
        allocation_mark_bound(
            allocation=allocation, binding_id=binding.binding_id, host=host, source=source
        )
        logger.info(
            "bound %s to %s (%s)",
            allocation_label(allocation),
            host.name,
            binding.binding_id,
            extra=for_tenants(f"Bound {allocation_words(allocation)} to {host.name}."),
        )
        done[0] += 1
        progress(done[0], total, f"Bound {allocation_label(allocation)}")

    for allocation in additions:
        if allocation.binding_id:
            logger.info(
                "%s is already bound (%s); skipped",
                allocation_label(allocation),
                allocation.binding_id,
                extra=for_tenants(f"{allocation_words(allocation)} is already bound; skipped."),
            )
            done[0] += 1
    unbound = [a for a in additions if not a.binding_id]
    if unbound and (job.attempts > 1 or job.resumes):
        # Resuming (a worker died, or a retry): a bind made just before may not be recorded.
        unbound = bindings_adopt(driver, unbound, host, record)
    # A share binds its GPU only when no other share on the host has bound it already.
    shares_bind(driver, [a for a in unbound if a.share], host, record)
    allocations_bind(driver, [a for a in unbound if not a.share], host, record)


def _phase(composition: Composition, phase: str) -> None:
    """Record the resize's phase on the composition (committed at once): a resumed or
    rolled-back run knows whether its additions are in."""
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        placement = dict(locked.placement or {})
        current = placement.get(RESIZING_KEY)
        if not isinstance(current, dict):
            return
        placement[RESIZING_KEY] = {**current, "phase": phase}
        Composition.objects.filter(pk=locked.pk).update(
            placement=placement, updated_at=timezone.now()
        )
    composition.placement = placement
