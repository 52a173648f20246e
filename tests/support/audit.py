"""An audit trail with a row of every kind, for the audit page, API and browser tests.

Times are set explicitly (one minute apart, oldest first in `AuditWorld.order`) so that
tests can assert the newest-first order and the time filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job, ReconcileRun, StateChange
from composer.models.reconcile import ReconcileStatus, ReconcileTrigger
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord

BASE = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class AuditWorld:
    acme_box: Composition
    globex_box: Composition
    acme_requested: StateChange  # alice, console, 10.0.0.5
    acme_placing: StateChange  # no user: compose job
    globex_requested: StateChange  # carol
    device_change: ChangeRecord  # admin put gpu-a-01-1 into maintenance, 192.0.2.7
    sync_job: Job  # admin, no tenant
    acme_job: Job  # alice's compose job
    reconcile: ReconcileRun  # admin asked for a pass

    def at(self, minutes: int) -> datetime:
        return BASE + timedelta(minutes=minutes)


def _stamp(model: Any, pk: int, field: str, minutes: int) -> None:
    model.objects.filter(pk=pk).update(**{field: BASE + timedelta(minutes=minutes)})


def audit_world(*, admin: Any, alice: Any, carol: Any, acme: Any, globex: Any) -> AuditWorld:
    """One row of each trail, both tenants, times 1..8 minutes after BASE."""
    acme_box = Composition.objects.create(tenant=acme, name="acme-train", spec={})
    globex_box = Composition.objects.create(tenant=globex, name="globex-infer", spec={})
    requested = StateChange.objects.create(
        composition=acme_box,
        to_state=CompositionState.REQUESTED,
        reason="Requested from the console",
        actor=alice,
        source="console",
        remote_addr="10.0.0.5",
    )
    placing = StateChange.objects.create(
        composition=acme_box,
        from_state=CompositionState.REQUESTED,
        to_state=CompositionState.PLACING,
        reason="Placing on a host",
        source="compose job 7",
    )
    globex_requested = StateChange.objects.create(
        composition=globex_box,
        to_state=CompositionState.REQUESTED,
        reason="Requested through the API",
        actor=carol,
        source="api",
        remote_addr="10.9.9.9",
    )
    device = ChangeRecord.objects.create(
        target_type="device",
        target_id=4242,
        target_label="gpu-a-01-1",
        action=ChangeAction.CHANGED,
        changes={"state": ["free", "maintenance"]},
        message="Put into maintenance for a fan swap",
        actor=admin,
        source="console",
        remote_addr="192.0.2.7",
    )
    sync_job = Job.objects.create(
        kind=JobKind.INVENTORY_SYNC,
        status=JobStatus.SUCCEEDED,
        requested_by=admin,
        target_type="fabric_manager",
        target_id=1,
        target_label="sim-east",
    )
    acme_job = Job.objects.create(
        kind=JobKind.COMPOSE,
        status=JobStatus.RUNNING,
        tenant=acme,
        requested_by=alice,
        target_type="composition",
        target_id=acme_box.pk,
        target_label="acme-train",
    )
    run = ReconcileRun.objects.create(
        trigger=ReconcileTrigger.OPERATOR,
        status=ReconcileStatus.DONE,
        requested_by=admin,
        remote_addr="192.0.2.8",
    )
    for model, pk, field, minutes in (
        (StateChange, requested.pk, "at", 1),
        (Job, acme_job.pk, "created_at", 2),
        (StateChange, placing.pk, "at", 3),
        (StateChange, globex_requested.pk, "at", 4),
        (ChangeRecord, device.pk, "at", 5),
        (Job, sync_job.pk, "created_at", 6),
        (ReconcileRun, run.pk, "created_at", 7),
    ):
        _stamp(model, pk, field, minutes)
    return AuditWorld(
        acme_box, globex_box, requested, placing, globex_requested, device, sync_job, acme_job, run
    )


# Keys of the page's rows (AuditEntry.key), newest first, as each persona sees them.
def keys_for_operator(w: AuditWorld) -> list[str]:
    return [
        f"reconcile-{w.reconcile.pk}",
        f"job-{w.sync_job.pk}",
        f"change-{w.device_change.pk}",
        f"state-{w.globex_requested.pk}",
        f"state-{w.acme_placing.pk}",
        f"job-{w.acme_job.pk}",
        f"state-{w.acme_requested.pk}",
    ]


def keys_for_acme(w: AuditWorld) -> list[str]:
    return [f"state-{w.acme_placing.pk}", f"job-{w.acme_job.pk}", f"state-{w.acme_requested.pk}"]


def keys_for_globex(w: AuditWorld) -> list[str]:
    return [f"state-{w.globex_requested.pk}"]
