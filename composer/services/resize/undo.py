"""Ending a resize: its plan and request swapped in (READY, resized), or its additions
undone (READY with what it had); and the reconciler's pass over resizes no job finishes.

Rule 2 throughout: a binding that cannot be undone is never left on an allocation nobody
holds. Its allocation is released and an `UnbindPending` row holds the device instead
(`composer.services.unbinds`) until the reconciler unbinds it.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from composer.choices import CompositionState, JobKind, JobStatus
from composer.errors import InvalidTransition, StaleState
from composer.joblog import for_tenants
from composer.models import Allocation, Composition, Job
from composer.services.allocations import allocations_release
from composer.services.allocations.shares import give_back_shares
from composer.services.bindings import allocations_unbind
from composer.services.compositions import COMPOSITION_TARGET
from composer.services.heal import pick_words
from composer.services.resize.common import (
    PHASE_REMOVING,
    RESIZED_KEY,
    RESIZING_KEY,
    active_allocations,
    resizing_record,
)
from composer.services.share_bindings import allocation_unbind_release, shares_unbind_release
from composer.services.unbinds import allocation_release_unbind_pending
from composer.states import composition_transition
from fabric import reconfig
from fabric.drivers.base import DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Device, Host

logger = logging.getLogger(__name__)

__all__ = ["removals_finish", "resize_finish", "resize_reconcile", "resize_rollback"]


def _release_without_fabric(
    composition: Composition, allocation: Allocation, host: Host, error: str, source: str
) -> None:
    """Release `allocation` when the fabric manager cannot be reached to unbind it: what it
    bound is held by an `UnbindPending` row for the reconciler (a share's GPU only when no
    other share holds it; its share is given back either way)."""
    with transaction.atomic():
        if allocation.share:
            Device.objects.select_for_update().filter(pk=allocation.device_id).first()
            others = (
                Allocation.objects.filter(device_id=allocation.device_id, released_at__isnull=True)
                .exclude(pk=allocation.pk)
                .exists()
            )
            if others:
                allocations_release(composition=composition, source=source, only=[allocation.pk])
                return
        if not allocation.binding_id:
            allocations_release(composition=composition, source=source, only=[allocation.pk])
            return
        allocation_release_unbind_pending(
            composition=composition,
            allocation=allocation,
            host=host,
            not_undone={allocation.binding_id: error},
            source=source,
        )
        if allocation.share:
            device = Device.objects.select_related("shared_host").get(pk=allocation.device_id)
            give_back_shares(
                device,
                allocation.share,
                message=f"Released by composition {composition.name}",
                actor=None,
                source=source,
                still_bound=True,
            ).save()


def removals_finish(
    composition: Composition,
    driver: FabricDriver | None,
    record: dict[str, Any],
    source: str,
    *,
    raise_transient: bool = False,
) -> int:
    """Unbind and release what the resize removes (those not released yet); returns how
    many. A share gives its part back and unbinds its GPU with the last share; what cannot
    be unbound is held by an `UnbindPending` row (`raise_transient`: a transient error goes
    up instead, for a job that will retry)."""
    going = active_allocations(record.get("remove") or [])
    host = composition.host
    if not going or host is None:
        return 0
    try:
        driver = driver or get_driver(host.manager)
        reported = reconfig.reported_bindings_or_none(driver)
    except DriverError as exc:  # no driver at all: the reconciler unbinds them later
        for allocation in going:
            _release_without_fabric(composition, allocation, host, exc.message, source)
        return len(going)
    for allocation in going:
        allocation_unbind_release(
            driver=driver,
            composition=composition,
            allocation=allocation,
            host=host,
            reported=reported,
            raise_transient=raise_transient,
            source=source,
        )
    return len(going)


def _words(entries: list[dict[str, Any]], *, at: bool) -> str:
    return ", ".join(
        pick_words(e) + (f" at {e['latency_ns']} ns" if at and e.get("latency_ns") else "")
        for e in entries
    )


def _gone(pick: dict[str, Any], removed: list[dict[str, Any]]) -> bool:
    """Whether `pick` of the plan is of a device (a slice, a share) the resize removed."""
    return any(
        pick.get("device") == r["device"]
        and (pick.get("gib") is None) == (r.get("gib") is None)
        and (pick.get("share") is None) == (r.get("share") is None)
        for r in removed
    )


def resize_finish(composition: Composition, actor: Any, source: str) -> dict[str, Any] | None:
    """Swap the resize in, RESIZING -> READY, in one transaction under the row lock: the
    request becomes the resized one (so heal and quotas see the new shape), the plan gets
    the added picks and loses the removed ones, a sentence and an entry in
    `placement["resized"]` say what changed. Returns that entry (None when the composition
    is not resizing any more)."""
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        placement = dict(locked.placement or {})
        record = placement.pop(RESIZING_KEY, None)
        if locked.state != CompositionState.RESIZING or not isinstance(record, dict):
            return None
        removed = list(record.get("removed") or [])
        picks = list(record.get("picks") or [])
        for key in ("devices", "memory"):
            placement[key] = [p for p in placement.get(key) or [] if not _gone(p, removed)]
        placement["devices"] += [p for p in picks if p.get("gib") is None]
        placement["memory"] += [p for p in picks if p.get("gib") is not None]
        parts = [
            f"added {_words(picks, at=True)}" if picks else "",
            f"removed {_words(removed, at=False)}" if removed else "",
        ]
        what = "; ".join(p for p in parts if p)
        placement["explanation"] = [
            *(placement.get("explanation") or []),
            f"Resize (job {record.get('job')}): {what}.",
        ]
        entry = {
            "job": record.get("job"),
            "at": timezone.now().isoformat(),
            "added": [p["name"] for p in picks],
            "removed": [r["name"] for r in removed],
        }
        placement[RESIZED_KEY] = [*(placement.get(RESIZED_KEY) or []), entry]
        composition_transition(
            locked,
            CompositionState.READY,
            reason=f"Resized: {what} ({source})",
            actor=actor,
            source=source,
            spec=record.get("spec") or locked.spec,
            placement=placement,
            failure_reason="",
        )
    composition.state, composition.spec = locked.state, locked.spec
    composition.placement, composition.failure_reason = locked.placement, ""
    return entry


def resize_rollback(
    composition: Composition, driver: FabricDriver | None, reason: str, source: str
) -> None:
    """End a resize that cannot finish; safe to call twice.

    Before its additions were bound and verified: they are unbound and released (a share's
    GPU stays bound while another composition shares it), and the composition is READY
    with what it had, `reason` recorded and shown. After: what was added stays, the
    removals are finished (what cannot be unbound held by `UnbindPending` rows), and the
    resize is swapped in as it would have been.
    """
    composition.refresh_from_db()
    if composition.state != CompositionState.RESIZING:
        return
    record = resizing_record(composition) or {}
    if record.get("phase") == PHASE_REMOVING:
        logger.warning(
            "composition %s: resize stopped after its additions (%s); finishing the removals",
            composition.pk,
            reason,
            extra=for_tenants("Finishing the removals: what was added stays."),
        )
        removals_finish(composition, driver, record, source)
        resize_finish(composition, None, source)
        return
    logger.warning(
        "composition %s: resize rolled back (%s)",
        composition.pk,
        reason,
        extra=for_tenants(f"Resize rolled back: {reason}"),
    )
    adds = active_allocations(record.get("add") or [])
    host = composition.host
    left: dict[int, dict[str, str]] = {}
    if adds and host is not None:
        try:
            driver = driver or get_driver(host.manager)
            reported = reconfig.reported_bindings_or_none(driver)
            # A share's GPU stays bound while another composition holds a share of it.
            adds = shares_unbind_release(
                driver=driver,
                composition=composition,
                allocations=adds,
                host=host,
                reported=reported,
                source=source,
            )
            left = allocations_unbind(driver, adds, host, reported)
        except DriverError as exc:  # no driver at all: the reconciler unbinds them later
            for allocation in adds:
                _release_without_fabric(composition, allocation, host, exc.message, source)
            adds = []
    text = f"Resize rolled back: {reason}"
    if left:
        text += (
            f" {len(left)} device(s) could not be unbound yet; they are cleaned up automatically."
        )
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        for allocation in adds:
            if allocation.pk in left and host is not None:
                allocation_release_unbind_pending(
                    composition=locked,
                    allocation=allocation,
                    host=host,
                    not_undone=left[allocation.pk],
                    source=source,
                )
            else:
                allocations_release(composition=locked, source=source, only=[allocation.pk])
        placement = dict(locked.placement or {})
        placement.pop(RESIZING_KEY, None)
        try:
            composition_transition(
                locked,
                CompositionState.READY,
                reason=text,
                source=source,
                placement=placement,
                failure_reason=text,
            )
        except (StaleState, InvalidTransition):
            logger.warning("composition %s changed during its resize rollback", composition.pk)
    composition.state, composition.placement = locked.state, locked.placement
    composition.failure_reason = locked.failure_reason


def resize_reconcile(*, now: Any = None) -> list[int]:
    """End the resizes no job works on any more (its job failed past its resume limit, was
    cancelled, or its task was lost): rolled back, or finished when its additions were
    already in (`resize_rollback`). Only compositions untouched for
    COMPOSER_RECONCILE_GRACE_S. Returns their ids."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.COMPOSER_RECONCILE_GRACE_S)
    pending = Job.objects.filter(
        kind=JobKind.RESIZE,
        target_type=COMPOSITION_TARGET,
        target_id=OuterRef("pk"),
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
    )
    ended = []
    for composition in (
        Composition.objects.filter(state=CompositionState.RESIZING, updated_at__lt=cutoff)
        .exclude(Exists(pending))
        .select_related("host__manager")
    ):
        resize_rollback(
            composition,
            None,
            "Its resize job ended without finishing it.",
            "reconciliation",
        )
        ended.append(composition.pk)
    if ended:
        logger.warning("reconciliation: resizes ended for %s", ended)
    return ended
