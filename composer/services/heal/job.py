"""The heal request and the heal job (see the package docstring)."""

from __future__ import annotations

import logging
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from composer.choices import CompositionState, JobKind, JobStatus
from composer.errors import ComposerError, InvalidTransition
from composer.joblog import for_tenants
from composer.lease import STOP_WITHOUT_UNDO, lease_confirm
from composer.models import Allocation, Composition, Job, UnbindPending
from composer.runner import ProgressFn, run_job
from composer.selectors.health import composition_unhealthy_devices
from composer.services.allocations import allocation_mark_bound
from composer.services.bindings import (
    allocation_bind,
    allocation_label,
    allocation_words,
    allocations_verify,
    bindings_adopt,
)
from composer.services.composition_jobs import job_composition, job_failure_reason
from composer.services.compositions import COMPOSITION_TARGET
from composer.services.dispatch import WAITING_FOR_WORKER, job_enqueue
from composer.services.heal.common import (
    HEAL_ROUNDS,
    HealRejected,
    active_allocations,
    healing_records,
)
from composer.services.heal.spares import spare_claim
from composer.services.heal.undo import heal_rollback, spare_swap_in
from composer.services.recovery import composition_recover
from composer.services.share_bindings import shares_bind
from composer.states import composition_transition
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Host

logger = logging.getLogger(__name__)

# --- request --------------------------------------------------------------------------------


def _pending_heal(composition: Composition) -> Job | None:
    return (
        Job.objects.filter(
            kind=JobKind.HEAL,
            target_type=COMPOSITION_TARGET,
            target_id=composition.pk,
            status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
        )
        .order_by("-created_at", "-id")
        .first()
    )


def heal_request(
    *, composition: Composition, actor: Any = None, remote_addr: str | None = None
) -> Job:
    """Start healing a DEGRADED composition (or resume a HEALING one); return the job.

    DEGRADED -> HEALING now, audited with `actor` and `remote_addr` (None for self-heal),
    as decompose does: the state says at once that a heal is under way, and a second
    request finds it. A heal already queued or running is returned instead of a second
    one; a HEALING composition with no job (its worker died) gets a new one, which resumes.
    The job is enqueued after commit. Raises InvalidTransition (field "state") when the
    composition is neither degraded nor healing.

    A DEGRADED composition that has lost nothing any more (what it lost came back before
    the health poll or the reconcile noticed) is READY at once instead, audited as a
    recovery with `actor`: there is nothing to replace. Its heal job is recorded and run
    here (it finds the composition ready and succeeds), so callers still get a job, and no
    worker is needed.
    """
    recovered = False
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        state = CompositionState(locked.state)
        if state not in (CompositionState.DEGRADED, CompositionState.HEALING):
            raise InvalidTransition(
                f"Composition {locked.name} is {state.label.lower()}; only a degraded "
                "composition can be healed.",
                field="state",
            )
        pending = _pending_heal(locked)
        if pending is not None:
            logger.info("composition %s: heal already pending as job %s", locked.pk, pending.pk)
            return pending
        user = actor if getattr(actor, "pk", None) else None
        if state == CompositionState.DEGRADED and not composition_unhealthy_devices(locked):
            recovered = composition_recover(
                composition=locked,
                why=f"heal requested by {user.get_username()}" if user else "self-heal",
                source="" if user else "self-heal",
                actor=user,
                remote_addr=remote_addr,
            )
        if state == CompositionState.DEGRADED and not recovered:
            composition_transition(
                locked,
                CompositionState.HEALING,
                reason="Heal requested" if user else "Self-heal: replacing the lost devices",
                actor=user,
                remote_addr=remote_addr,
                source="" if user else "self-heal",
            )
        job = Job(
            kind=JobKind.HEAL,
            status=JobStatus.QUEUED,
            tenant=locked.tenant,
            requested_by=user,
            target_type=COMPOSITION_TARGET,
            target_id=locked.pk,
            target_label=locked.name[:200],
            params={"composition_id": locked.pk},
            message=WAITING_FOR_WORKER,
        )
        job.full_clean(exclude=["tenant", "requested_by"])  # rows in hand
        job.save()
        if not recovered:
            transaction.on_commit(partial(job_enqueue, job))
    composition.state = locked.state
    if recovered:
        # Outside the transaction, as a worker would run it: the job's log is written.
        composition_heal_run(job, retryable=False)
        return job
    logger.info(
        "composition %s: heal queued as job %s (%s)",
        composition.pk,
        job.pk,
        "requested" if user else "self-heal",
    )
    return job


# --- the job --------------------------------------------------------------------------------


def composition_heal_run(job: Job, *, retryable: bool = True) -> Job:
    """Run heal job `job` in this process (what the task does), via `run_job`.

    Raises JobRetry (job back in QUEUED, composition HEALING with what it claimed and bound
    recorded) for a transient driver error while `retryable`. Otherwise the job ends
    SUCCEEDED (composition READY, lost devices replaced) or FAILED: no spare, a permanent
    driver error, the last retry, the time limit or any other failure undo what this heal
    bound and claimed, and the composition goes back to DEGRADED with the reason.
    """
    driver_ref: list[FabricDriver | None] = [None]

    def work(progress: ProgressFn) -> dict[str, Any]:
        composition = job_composition(job)
        source = f"heal job {job.pk}"
        if composition.state == CompositionState.READY:
            logger.info(
                "Composition %s is ready: every device it lost is back; nothing to replace.",
                composition.name,
                extra=for_tenants(),
            )
            return {"composition": composition.pk, "state": composition.state, "replaced": []}
        if composition.state == CompositionState.DEGRADED:  # queued before heal_request moved it
            composition_transition(
                composition,
                CompositionState.HEALING,
                reason=f"Healing: replacing the lost devices ({source})",
                actor=job.requested_by,
                source=source,
            )
        elif composition.state != CompositionState.HEALING:
            raise ComposerError(
                f"Composition {composition.name} is {composition.state}; nothing to heal."
            )
        try:
            return _heal(job, composition, progress, source, driver_ref)
        except STOP_WITHOUT_UNDO:
            raise  # taken over, or to be resumed: the next run finishes or rolls back
        except DriverError as exc:
            if exc.permanent or not retryable:
                lease_confirm(job)  # a successor's spares are not this run's to undo
                reason = job_failure_reason(exc, kind="heal")
                heal_rollback(
                    composition, driver_ref[0], f"Self-heal rolled back: {reason}", source
                )
            raise
        except HealRejected as exc:
            lease_confirm(job)
            heal_rollback(composition, driver_ref[0], exc.message, source)
            raise
        except BaseException as exc:
            lease_confirm(job)
            heal_rollback(
                composition,
                driver_ref[0],
                f"Self-heal rolled back: {job_failure_reason(exc, kind='heal')}",
                source,
            )
            raise

    return run_job(job, work, retryable=retryable)


def _heal(
    job: Job,
    composition: Composition,
    progress: ProgressFn,
    source: str,
    driver_ref: list[FabricDriver | None],
) -> dict[str, Any]:
    host = composition.host
    if host is None:
        raise HealRejected(f"Composition {composition.name} has no host; nothing can be healed.")
    driver = get_driver(host.manager)
    driver_ref[0] = driver
    replaced: list[dict[str, Any]] = []
    for _ in range(HEAL_ROUNDS):
        records = healing_records(composition)
        busy = {r["failed"] for r in records} | {a for r in records for a in r["replacements"]}
        problems = [
            p for p in composition_unhealthy_devices(composition) if p.allocation_id not in busy
        ]
        if not records and not problems:
            break
        count = len(records) + len(problems)
        total = 3 * count + 3
        step = 1
        progress(step, total, f"{count} device(s) to replace on {host.name}")
        if records:
            logger.info(
                "resuming: %s replacement(s) already claimed", len(records), extra=for_tenants()
            )
        for problem in problems:
            logger.warning(
                "%s is lost; looking for a spare", problem.sentence(), extra=for_tenants()
            )
            records.append(spare_claim(job, composition, problem, host, source))
            step += 1
            progress(step, total, f"Claimed a spare for {problem.device_name}")
        mark = partial(_mark_bound, host=host, source=source)
        for record in records:
            spares = [a for a in active_allocations(record["replacements"]) if not a.binding_id]
            if spares and (job.attempts > 1 or job.resumes):
                # Resuming: a bind made just before the worker died may not be recorded.
                bindings_adopt(driver, spares, host, mark)
            for allocation in active_allocations(record["replacements"]):
                _bind_replacement(driver, allocation, host, source)
            step += 1
            progress(step, total, f"Bound the spare for {record['name']}")
        spares = [a for record in records for a in active_allocations(record["replacements"])]
        reported = allocations_verify(driver, spares, host)
        step += 1
        progress(step, total, "Verified the spares on the fabric manager")
        logger.info(
            "verified the replacement binding(s) on %s",
            host.name,
            extra=for_tenants(f"Verified the spare(s) on {host.name}."),
        )
        for record in records:
            replaced.append(spare_swap_in(job, composition, record, driver, reported, host, source))
            step += 1
            progress(step, total, f"Released {record['name']}")
    else:
        left = composition_unhealthy_devices(composition)
        if left:
            raise HealRejected(
                "Devices kept failing while the heal ran: "
                + ", ".join(p.sentence() for p in left)
                + "."
            )
    if replaced:
        text = "; ".join(f"{r['failed']} -> {', '.join(r['replacement'])}" for r in replaced)
        reason = f"Healed: replaced {text} ({source})"
    else:
        reason = f"Nothing to replace: every device is healthy ({source})"
    composition_transition(
        composition,
        CompositionState.READY,
        reason=reason,
        actor=job.requested_by,
        source=source,
        failure_reason="",
    )
    progress(1, 1, "Ready")
    logger.info(
        "composition %s is ready again",
        composition.pk,
        extra=for_tenants(f"{composition.name} is ready again."),
    )
    pending = list(
        UnbindPending.objects.filter(composition=composition, undone_at__isnull=True)
        .order_by("pk")
        .values_list("binding_id", flat=True)
    )
    return {
        "composition": composition.pk,
        "state": CompositionState.READY.value,
        "replaced": replaced,
        "unbind_pending": pending,
    }


def _bind_replacement(
    driver: FabricDriver, allocation: Allocation, host: Host, source: str
) -> None:
    label, words = allocation_label(allocation), allocation_words(allocation)
    if allocation.binding_id:
        logger.info(
            "%s is already bound (%s); skipped",
            label,
            allocation.binding_id,
            extra=for_tenants(f"{words} is already bound; skipped."),
        )
        return

    def record(allocation: Allocation, binding: Binding) -> None:
        # Committed before moving on: a redelivered job finds it and does not bind again.
        allocation_mark_bound(
            allocation=allocation, binding_id=binding.binding_id, host=host, source=source
        )
        logger.info(
            "bound %s to %s (%s)",
            label,
            host.name,
            binding.binding_id,
            extra=for_tenants(f"Bound {words} to {host.name}."),
        )

    if allocation.share:
        # A share's GPU is bound once, by the first share: another composition's spare (or
        # share) on this host may have bound it already.
        shares_bind(driver, [allocation], host, record)
    else:
        record(allocation, allocation_bind(driver, allocation, host))


def _mark_bound(allocation: Allocation, binding: Binding, *, host: Host, source: str) -> None:
    allocation_mark_bound(
        allocation=allocation, binding_id=binding.binding_id, host=host, source=source
    )


# --- reconciliation -----------------------------------------------------------------------------


def heal_reconcile(*, now: Any = None) -> list[int]:
    """Queue the heal again of HEALING compositions no job works on any more (the worker
    died, the message was lost); the new job resumes from the records. Returns their ids.

    Only compositions untouched for COMPOSER_RECONCILE_GRACE_S are considered.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.COMPOSER_RECONCILE_GRACE_S)
    pending = Job.objects.filter(
        kind=JobKind.HEAL,
        target_type=COMPOSITION_TARGET,
        target_id=OuterRef("pk"),
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
    )
    requeued = []
    for composition in Composition.objects.filter(
        state=CompositionState.HEALING, updated_at__lt=cutoff
    ).exclude(Exists(pending)):
        try:
            heal_request(composition=composition)
        except ComposerError:
            logger.exception("composition %s: could not queue its heal again", composition.pk)
            continue
        requeued.append(composition.pk)
    if requeued:
        logger.warning("reconciliation: heal queued again for %s", requeued)
    return requeued
