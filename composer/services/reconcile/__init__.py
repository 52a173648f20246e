"""The reconciler: the one mechanism that repairs drift between the fabric and the database.

Run by beat every COMPOSER_RECONCILE_INTERVAL_S (`composer.tasks.reconcile_task`) and on an
operator's demand (the Reconcile page, `POST /api/v1/reconcile/runs/`). Each run compares
every fabric manager's bindings with the claims, retries the bindings still to undo,
finishes compositions no job works on, brings compositions in line with the fabric's health
and recounts allocated memory; what it found and did is a `ReconcileRun` with its
`ReconcileFinding` rows (`run.py`). The steps: `fabric.py` (bindings against claims),
`compositions.py` (unfinished compositions), `composer.services.unbinds` (bindings still to
undo), `composer.services.health` and `composer.services.allocations.reconcile`.
"""

from __future__ import annotations

from composer.services.reconcile.compositions import ReconcileResult, compositions_reconcile
from composer.services.reconcile.fabric import manager_reconcile
from composer.services.reconcile.run import reconcile_request, reconcile_run

__all__ = [
    "ReconcileResult",
    "compositions_reconcile",
    "manager_reconcile",
    "reconcile_request",
    "reconcile_run",
]
