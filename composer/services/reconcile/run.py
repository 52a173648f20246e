"""One reconcile run: every step, recorded as a `ReconcileRun` with its findings.

Steps, in this order (each one's failure is recorded and the others still run):

1. bindings still to undo (`UnbindPending`): unbind again, give the device back when done;
2. compositions no job works on (`compositions_reconcile`): roll back, queue decompose again,
   end resizes;
   holds past their time (`holds_lapsed_release`): released, or reported when that fails;
3. per fabric manager, its bindings against the claims (`manager_reconcile`): orphans
   unbound, missing bindings bound again, in-flight binds left alone;
4. compositions out of line with the fabric's health (`compositions_health_reconcile`);
5. memory devices' allocated GiB recounted (`devices_allocated_reconcile`), and shared
   GPUs' allocated shares (`devices_shares_reconcile`).

One run at a time (a PostgreSQL advisory lock; a second run is SKIPPED). Rows stay cheap:
a scheduled run that repairs nothing and finds what the latest scheduled row found (often
nothing) extends that row (`repeats`), and runs older than
COMPOSER_RECONCILE_RETENTION_HOURS are deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from composer.models import (
    Composition,
    FindingKind,
    FindingOutcome,
    ReconcileFinding,
    ReconcileRun,
    ReconcileStatus,
    ReconcileTrigger,
)
from composer.services.allocations.reconcile import devices_allocated_reconcile
from composer.services.allocations.shares import devices_shares_reconcile
from composer.services.health import compositions_health_reconcile
from composer.services.hold_lapse import holds_lapsed_release
from composer.services.reconcile.compositions import compositions_reconcile
from composer.services.reconcile.fabric import manager_reconcile
from composer.services.unbinds import unbinds_pending_retry
from fabric.models import Device, FabricManager

logger = logging.getLogger(__name__)

__all__ = ["reconcile_request", "reconcile_run"]

LOCK_KEY = 0x7EC0_11C1  # pg advisory lock: one reconcile run at a time


@contextmanager
def _exclusive() -> Iterator[bool]:
    """Whether this run may go on: another one holds the lock -> False. (SQLite: always.)"""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
        got = bool(cursor.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def reconcile_request(*, requested_by: Any, remote_addr: str | None = None) -> ReconcileRun:
    """An operator's "Reconcile now": a QUEUED run (who and from where: the audit), run by
    `reconcile_task` once the transaction commits."""
    from composer.tasks import reconcile_task  # tasks import the services

    with transaction.atomic():
        run = ReconcileRun(
            trigger=ReconcileTrigger.OPERATOR,
            requested_by=requested_by,
            remote_addr=remote_addr or None,
        )
        run.full_clean()
        run.save()
        transaction.on_commit(partial(_send, reconcile_task, run.pk))
    logger.info("reconcile run %s requested by user %s", run.pk, getattr(requested_by, "pk", None))
    return run


def _send(task: Any, run_id: int) -> None:
    """Queue an operator's run; Redis away, the next scheduled run takes it instead."""
    try:
        task.delay(run_id)
    except Exception as exc:  # kombu and redis-py raise several types; none is the caller's
        logger.warning(
            "reconcile run %s could not be queued (%s); the next scheduled run does it",
            run_id,
            type(exc).__name__,
        )


def reconcile_run(*, run_id: int | None = None) -> ReconcileRun | None:
    """Run every step once: the operator's QUEUED run `run_id`, or a scheduled one (which
    takes the oldest operator's run still queued, one whose message the broker never took).
    Returns the row it was recorded in (None for a scheduled run another one kept out)."""
    run = None
    if run_id is None:
        queued = ReconcileRun.objects.filter(
            status=ReconcileStatus.QUEUED, trigger=ReconcileTrigger.OPERATOR
        )
        run_id = queued.order_by("pk").values_list("pk", flat=True).first()
    if run_id is not None:
        run = ReconcileRun.objects.filter(pk=run_id).first()
        if run is None or run.status != ReconcileStatus.QUEUED:
            return run  # a duplicate delivery
    started = timezone.now()
    with _exclusive() as allowed:
        if not allowed:
            if run is not None:
                ReconcileRun.objects.filter(pk=run.pk).update(
                    status=ReconcileStatus.SKIPPED, started_at=started, finished_at=started
                )
                run.refresh_from_db()
            return run
        if run is not None:
            ReconcileRun.objects.filter(pk=run.pk).update(
                status=ReconcileStatus.RUNNING, started_at=started
            )
        findings, errors, managers = _steps()
    return _record(run, findings, errors, managers, started)


def _steps() -> tuple[list[ReconcileFinding], list[str], int]:
    findings: list[ReconcileFinding] = []
    errors: list[str] = []

    def step(name: str, fn: Callable[[], list[ReconcileFinding]]) -> None:
        try:
            findings.extend(fn())
        except Exception as exc:  # one step's failure must not stop the others
            logger.exception("reconcile step %s failed", name)
            errors.append(f"{name}: {type(exc).__name__}: {exc}")

    managers = list(FabricManager.objects.filter(is_enabled=True).order_by("pk"))
    step("bindings still to undo", _pending)
    step("unfinished compositions", _unfinished)
    step("holds past expiry", _lapsed)
    for manager in managers:
        step(f"fabric manager {manager.name}", partial(manager_reconcile, manager))
    step("health", _health)
    step("allocated memory", _allocated)
    return findings, errors, len(managers)


def _pending() -> list[ReconcileFinding]:
    out = []
    for attempt in unbinds_pending_retry():
        row = attempt.pending
        where = f"{row.device.name} from {row.host.name}"
        out.append(
            ReconcileFinding(
                kind=FindingKind.UNBIND_PENDING,
                manager_id=row.host.manager_id,
                device_id=row.device_id,
                host_id=row.host_id,
                composition_id=row.composition_id,
                binding_id=row.binding_id,
                outcome=FindingOutcome.REPAIRED if attempt.undone else FindingOutcome.PENDING,
                action=(
                    f"Unbound {where} at last; the device is free again"
                    if attempt.undone
                    else f"Could not unbind {where} yet; it stays held until it is"
                ),
                detail=attempt.error,
            )
        )
    return out


def _unfinished() -> list[ReconcileFinding]:
    result = compositions_reconcile()
    out = []
    for composition in Composition.objects.filter(pk__in=result.rolled_back).select_related("host"):
        out.append(
            ReconcileFinding(
                kind=FindingKind.UNFINISHED_COMPOSE,
                composition=composition,
                host=composition.host,
                outcome=FindingOutcome.REPAIRED,
                action="Rolled back a compose no job was working on",
                detail=composition.failure_reason,
            )
        )
    for composition in Composition.objects.filter(pk__in=result.resize_ended):
        out.append(
            ReconcileFinding(
                kind=FindingKind.UNFINISHED_RESIZE,
                composition=composition,
                outcome=FindingOutcome.REPAIRED,
                action="Ended a resize no job was working on: rolled back, or finished when "
                "what it added was already bound",
                detail=composition.failure_reason,
            )
        )
    for pk in result.decompose_requeued:
        out.append(
            ReconcileFinding(
                kind=FindingKind.UNFINISHED_DECOMPOSE,
                composition_id=pk,
                outcome=FindingOutcome.REPAIRED,
                action="Queued its decompose again: no job was working on it",
            )
        )
    return out


def _lapsed() -> list[ReconcileFinding]:
    """Holds still claiming devices after their time (beat's sweep not run, or failing on
    them): released here, or reported with the error's kind (the log has the rest)."""
    sweep = holds_lapsed_release(source="reconciliation")
    released = [
        ReconcileFinding(
            kind=FindingKind.HELD_LAPSED,
            composition_id=pk,
            outcome=FindingOutcome.REPAIRED,
            action="Released a hold past its expiry; its devices are free again",
        )
        for pk in sweep.released
    ]
    return released + [
        ReconcileFinding(
            kind=FindingKind.HELD_LAPSED,
            composition_id=pk,
            outcome=FindingOutcome.REPORTED,
            action="Could not release a hold past its expiry; it keeps its devices until then",
            detail=f"{error} (the worker's log has the traceback)",
        )
        for pk, error in sweep.failed
    ]


def _health() -> list[ReconcileFinding]:
    result = compositions_health_reconcile()
    said = [
        (result.reaction.degraded, "Degraded: a device it holds is unwell"),
        (result.reaction.recovered, "Ready again: every device it holds is well"),
        (result.heal_requeued, "Queued its self-heal again: no job was working on it"),
    ]
    return [
        ReconcileFinding(
            kind=FindingKind.HEALTH,
            composition_id=pk,
            outcome=FindingOutcome.REPAIRED,
            action=action,
        )
        for pks, action in said
        for pk in pks
    ]


def _allocated() -> list[ReconcileFinding]:
    corrected = devices_allocated_reconcile()
    return [
        ReconcileFinding(
            kind=FindingKind.ALLOCATED_GIB,
            device=device,
            manager_id=device.manager_id,
            outcome=FindingOutcome.REPAIRED,
            action="Allocated memory recounted from the slices that hold it",
            detail=f"{device.allocated_gib} GiB held",
        )
        for device in Device.objects.filter(pk__in=corrected)
    ] + [
        ReconcileFinding(
            kind=FindingKind.ALLOCATED_SHARES,
            device=device,
            manager_id=device.manager_id,
            outcome=FindingOutcome.REPAIRED,
            action="Allocated GPU shares recounted from the shares that hold them",
            detail=f"{device.allocated_shares}/{device.shares_per_device} held",
        )
        for device in Device.objects.filter(pk__in=devices_shares_reconcile())
    ]


def _signature(findings: Any) -> list[tuple[str, str, str, int | None]]:
    return sorted((f.kind, f.outcome, f.binding_id, f.device_id) for f in findings)


def _record(
    run: ReconcileRun | None,
    findings: list[ReconcileFinding],
    errors: list[str],
    managers: int,
    started: Any,
) -> ReconcileRun:
    now = timezone.now()
    status = ReconcileStatus.FAILED if errors else ReconcileStatus.DONE
    repaired = any(f.outcome == FindingOutcome.REPAIRED for f in findings)
    with transaction.atomic():
        if run is None and not repaired and not errors:
            latest = ReconcileRun.objects.select_for_update().order_by("-created_at", "-id").first()
            if (
                latest is not None
                and latest.trigger == ReconcileTrigger.SCHEDULE
                and latest.status == ReconcileStatus.DONE
                and _signature(latest.findings.all()) == _signature(findings)
            ):
                # Nothing new: the latest row stands for this run too.
                ReconcileRun.objects.filter(pk=latest.pk).update(
                    finished_at=now, repeats=latest.repeats + 1, managers=managers
                )
                latest.refresh_from_db()
                return latest
        if run is None:
            run = ReconcileRun(trigger=ReconcileTrigger.SCHEDULE, started_at=started)
        run.status = status
        run.finished_at = now
        run.managers = managers
        run.error = "\n".join(errors)
        run.save()
        for finding in findings:
            finding.run = run
        ReconcileFinding.objects.bulk_create(findings)
        _prune(now)
    if findings:
        logger.warning("reconcile run %s: %s finding(s)", run.pk, len(findings))
    return run


def _prune(now: Any) -> None:
    hours = int(getattr(settings, "COMPOSER_RECONCILE_RETENTION_HOURS", 168))
    ReconcileRun.objects.filter(created_at__lt=now - timedelta(hours=hours)).delete()
