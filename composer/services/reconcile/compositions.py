"""The reconciler's step for compositions no job is working on any more (rule 2).

A job that ended without finishing its composition (failed past its resume limit, cancelled
by an operator, or its task gone) leaves it in PLACING or BINDING with nobody working on it;
a worker that merely died is the lease's, which resumes the job. A composition stuck in
DECOMPOSING likewise (a decompose whose unbind met a permanent error fails and leaves it
there). This step finds them and
finishes the work: an unfinished compose is rolled back (unbind what the manager reports,
release, FAILED with the reason), an unfinished decompose is queued again, an unfinished
resize is rolled back to what the composition had, or finished when its additions were
already bound and verified (`composer.services.resize.resize_reconcile`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from composer.choices import CompositionState, JobKind, JobStatus
from composer.errors import ComposerError
from composer.models import Composition, Job
from composer.services.composition_jobs import composition_rollback
from composer.services.compositions import COMPOSITION_TARGET, composition_decompose
from composer.services.resize import resize_reconcile

logger = logging.getLogger(__name__)

UNFINISHED_COMPOSE = (
    CompositionState.REQUESTED,
    CompositionState.PLACING,
    CompositionState.BINDING,
)


@dataclass(frozen=True)
class ReconcileResult:
    rolled_back: list[int]
    decompose_requeued: list[int]
    resize_ended: list[int] = field(default_factory=list)


def _pending_job(kind: JobKind) -> Exists:
    return Exists(
        Job.objects.filter(
            kind=kind,
            target_type=COMPOSITION_TARGET,
            target_id=OuterRef("pk"),
            status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
        )
    )


def compositions_reconcile(*, now: Any = None) -> ReconcileResult:
    """Finish compositions that no job is working on any more; returns what it did.

    Only compositions untouched for COMPOSER_RECONCILE_GRACE_S are considered (and never one
    with a queued or running job), so a compose that is merely waiting in the queue, or
    whose job was just created, is left alone.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.COMPOSER_RECONCILE_GRACE_S)
    abandoned = Composition.objects.filter(updated_at__lt=cutoff)
    rolled_back = []
    for composition in abandoned.filter(state__in=UNFINISHED_COMPOSE).exclude(
        _pending_job(JobKind.COMPOSE)
    ):
        composition_rollback(
            composition=composition,
            driver=None,
            reason="Its compose job ended without finishing it; rolled back.",
            source="reconciliation",
        )
        rolled_back.append(composition.pk)
    requeued = []
    for composition in abandoned.filter(state=CompositionState.DECOMPOSING).exclude(
        _pending_job(JobKind.DECOMPOSE)
    ):
        try:
            composition_decompose(composition=composition, actor=None)
        except ComposerError:
            logger.exception("composition %s: could not queue its decompose again", composition.pk)
            continue
        requeued.append(composition.pk)
    resized = resize_reconcile(now=now)
    if rolled_back or requeued:
        logger.warning(
            "reconciliation: rolled back %s, decompose queued again for %s", rolled_back, requeued
        )
    return ReconcileResult(
        rolled_back=rolled_back, decompose_requeued=requeued, resize_ended=resized
    )
