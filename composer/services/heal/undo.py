"""Swapping a spare in, and undoing a heal (rule 2: a binding left behind is an
`UnbindPending` row the reconciler retries, `composer.services.unbinds`)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import CompositionState
from composer.errors import InvalidTransition, StaleState
from composer.joblog import for_tenants
from composer.models import Allocation, Composition, Job, UnbindPending
from composer.services.allocations import allocations_release
from composer.services.bindings import allocation_label, allocation_unbind, allocations_unbind
from composer.services.heal.common import (
    HEALED_KEY,
    HEALING_KEY,
    active_allocations,
    healing_records,
)
from composer.services.heal.spares import pick_words
from composer.services.share_bindings import allocation_unbind_release, shares_unbind_release
from composer.services.unbinds import allocation_release_unbind_pending
from composer.states import composition_transition
from fabric import reconfig
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Host

logger = logging.getLogger(__name__)

# --- swapping in, and undoing ----------------------------------------------------------------


def _release(
    composition: Composition,
    allocation: Allocation,
    not_undone: dict[str, str],
    host: Host,
    source: str,
) -> None:
    """Release `allocation` (inside the caller's transaction). When some of its bindings
    could not be undone, an `UnbindPending` row per binding holds the device instead until
    the reconciler unbinds it (`composer.services.unbinds`)."""
    if not not_undone:
        allocations_release(composition=composition, source=source, only=[allocation.pk])
        return
    allocation_release_unbind_pending(
        composition=composition,
        allocation=allocation,
        host=host,
        not_undone=not_undone,
        source=source,
    )


def spare_swap_in(
    job: Job,
    composition: Composition,
    record: dict[str, Any],
    driver: FabricDriver,
    reported: list[Binding],
    host: Host,
    source: str,
) -> dict[str, Any]:
    """Unbind and release the lost device, put the spare in the plan, drop the record.

    After the spare is bound and verified (`reported` is what the verification read): a
    lost device whose unbind fails is released with an `UnbindPending` row holding it. A
    lost share gives its share back, and its GPU is unbound with the last share held."""
    lost = Allocation.objects.select_related("device").filter(pk=record["failed"]).first()
    not_undone: dict[str, str] = {}
    held = lost is not None and lost.released_at is None
    if lost is not None and held and lost.share:
        # Its share is given back now; the failed GPU is unbound with its last share only
        # (the other compositions sharing it still hold it), what could not be undone held
        # by an UnbindPending row as for a whole device.
        allocation_unbind_release(
            driver=driver,
            composition=composition,
            allocation=lost,
            host=host,
            reported=reported,
            raise_transient=False,
            source=source,
        )
        not_undone = dict(
            UnbindPending.objects.filter(allocation=lost, undone_at__isnull=True).values_list(
                "binding_id", "last_error"
            )
        )
        logger.info("released %s", allocation_label(lost), extra=for_tenants())
    elif lost is not None and held:
        not_undone = allocation_unbind(driver, lost, host, reported)
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        placement = dict(locked.placement or {})
        if lost is not None and held and not lost.share:
            _release(locked, lost, not_undone, host, source)
            logger.info("released %s", lost.device.name, extra=for_tenants())
        key = "memory" if record["gib"] else "devices"
        picks = list(placement.get(key) or [])
        # Every pick of the lost device (two share items may have landed on one GPU: the
        # allocation held their sum, and its spare replaces them both).
        at = [
            i
            for i, p in enumerate(picks)
            if p.get("device") == record["device"] and p.get("gib") == record["gib"]
        ]
        new = [p for p in record["picks"] if (p["gib"] is not None) == (key == "memory")]
        others = [p for p in record["picks"] if p not in new]
        if not at:
            picks += new
        else:
            picks = [p for i, p in enumerate(picks) if i not in at]
            picks[at[0] : at[0]] = new
        placement[key] = picks
        if others:  # a whole drive for a whole drive, a slice for a slice: kept just in case
            other_key = "devices" if key == "memory" else "memory"
            placement[other_key] = [*(placement.get(other_key) or []), *others]
        names = [p["name"] for p in record["picks"]]
        placement["explanation"] = [
            *(placement.get("explanation") or []),
            f"Self-heal (job {job.pk}): {record['name']} ({record['why']}) replaced by "
            + ", ".join(f"{pick_words(p)} at {p['latency_ns']} ns" for p in record["picks"])
            + ".",
        ]
        placement[HEALED_KEY] = [
            *(placement.get(HEALED_KEY) or []),
            {
                "job": job.pk,
                "at": timezone.now().isoformat(),
                "failed": record["name"],
                "why": record["why"],
                "replacement": names,
            },
        ]
        placement[HEALING_KEY] = [
            r for r in placement.get(HEALING_KEY) or [] if r["failed"] != record["failed"]
        ]
        if not placement[HEALING_KEY]:
            del placement[HEALING_KEY]
        Composition.objects.filter(pk=locked.pk).update(
            placement=placement, updated_at=timezone.now()
        )
        composition.placement = placement
    return {"failed": record["name"], "replacement": names, "unbind_pending": sorted(not_undone)}


def heal_rollback(
    composition: Composition, driver: FabricDriver | None, reason: str, source: str
) -> None:
    """Undo what this heal claimed and bound, back to DEGRADED with `reason`. Safe twice.

    Spares already swapped in stay (they replaced a lost device for good). A spare whose
    unbind fails is released with an `UnbindPending` row holding its device, like a lost device.
    """
    composition.refresh_from_db()
    if composition.state != CompositionState.HEALING:
        return
    said = "Self-heal rolled back"
    logger.warning(
        "composition %s: heal rolled back (%s)",
        composition.pk,
        reason,
        extra=for_tenants(reason if reason.startswith(said) else f"{said}: {reason}"),
    )
    records = healing_records(composition)
    spares = active_allocations([pk for r in records for pk in r["replacements"]])
    host = composition.host
    left: dict[int, dict[str, str]] = {}
    if spares and host is not None:
        try:
            driver = driver or get_driver(host.manager)
            reported = reconfig.reported_bindings_or_none(driver)
            # A spare share's GPU stays bound while another composition holds a share of it
            # (it may have bound it): given back and released here.
            spares = shares_unbind_release(
                driver=driver,
                composition=composition,
                allocations=spares,
                host=host,
                reported=reported,
                source=source,
            )
            left = allocations_unbind(driver, spares, host, reported)
        except DriverError as exc:  # no driver at all: what was bound stays recorded
            logger.error(
                "heal rollback of composition %s: %s",
                composition.pk,
                exc.message,
                extra=for_tenants("The fabric manager cannot be reached: nothing was unbound."),
            )
            left = {a.pk: {a.binding_id: exc.message} if a.binding_id else {} for a in spares}
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition.pk)
        placement = dict(locked.placement or {})
        for spare in spares:
            if host is not None:
                _release(locked, spare, left.get(spare.pk, {}), host, source)
            else:
                allocations_release(composition=locked, source=source, only=[spare.pk])
        placement.pop(HEALING_KEY, None)
        Composition.objects.filter(pk=locked.pk).update(placement=placement)
        composition.placement = placement
        try:
            composition_transition(
                locked,
                CompositionState.DEGRADED,
                reason=reason,
                source=source,
                failure_reason=reason,
            )
        except (StaleState, InvalidTransition):
            logger.warning("composition %s changed during its heal rollback", composition.pk)
    composition.state = locked.state
