"""The composer's reaction to fabric health: degrade, recover, and start self-heal.

The fabric side (inventory sync, the health poller) writes what it learns into the fabric
tables (`Device.health`/`state`, `Link.state`) and then tells the composer which devices
went bad or came back, through `compositions_react_to_health`:

- a READY composition holding a device that went bad becomes DEGRADED, the reason naming
  the devices and the alert; when its spec opts in (`self_heal`), a heal job is queued;
- a DEGRADED composition whose devices are all fine again (by
  `composer.selectors.health`: not failed, not gone, reachable from its host) is READY
  again (`composer.services.recovery`), the reason naming what came back.

`compositions_health_reconcile`, a step of the reconciler (`composer.services.reconcile`),
reaches the same end from the tables alone, so a lost poll result (or a missed call) still
ends right; it also requeues heals no worker is running.
Both are idempotent: a second call with the same input changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from composer.choices import CompositionState
from composer.errors import ComposerError, InvalidTransition, StaleState
from composer.models import Allocation, Composition
from composer.selectors.health import DeviceProblem, compositions_unhealthy_devices
from composer.services.heal import heal_reconcile, heal_request
from composer.services.recovery import composition_recover
from composer.states import composition_transition
from fabric.topology.load import load_graph

logger = logging.getLogger(__name__)

__all__ = [
    "HealthReaction",
    "HealthReconcileResult",
    "compositions_health_reconcile",
    "compositions_react_to_health",
]

SOURCE = "health"


@dataclass(frozen=True)
class HealthReaction:
    """What a reaction did: compositions degraded and recovered, heal jobs queued (ids)."""

    degraded: tuple[int, ...] = ()
    recovered: tuple[int, ...] = ()
    heal_jobs: tuple[int, ...] = ()


@dataclass(frozen=True)
class HealthReconcileResult:
    """What the periodic pass did, on top of a reaction: heals queued again for HEALING
    compositions no job runs."""

    reaction: HealthReaction = field(default_factory=HealthReaction)
    heal_requeued: tuple[int, ...] = ()


def _alert(alert_id: int | None) -> str:
    return f" (alert {alert_id})" if alert_id is not None else ""


def _degrade(
    composition: Composition, names: Sequence[str], reason: str, alert_id: int | None
) -> bool:
    """READY -> DEGRADED with the devices and the alert named; False when it was not READY
    any more (another worker changed it first)."""
    text = f"Lost {', '.join(names)}: {reason}{_alert(alert_id)}"
    try:
        composition_transition(
            composition,
            CompositionState.DEGRADED,
            reason=text,
            source=f"alert {alert_id}" if alert_id is not None else SOURCE,
            failure_reason=text,
        )
    except (StaleState, InvalidTransition):
        logger.info("composition %s changed before it could be degraded", composition.pk)
        return False
    logger.warning("composition %s degraded: %s", composition.pk, text)
    return True


def _devices_back(compositions: Sequence[Composition], healthy: set[int]) -> dict[int, list[str]]:
    """The names of each composition's own devices among `healthy` (what came back)."""
    names: dict[int, list[str]] = {}
    if not compositions or not healthy:
        return names
    for composition_id, name in (
        Allocation.objects.filter(
            composition_id__in=[c.pk for c in compositions],
            device_id__in=healthy,
            released_at__isnull=True,
        )
        .order_by("pk")
        .values_list("composition_id", "device__name")
    ):
        names.setdefault(composition_id, []).append(name)
    return names


def _self_heal(composition: Composition) -> int | None:
    """Queue the heal of a composition that opts in; the job id, or None."""
    if not (composition.spec or {}).get("self_heal"):
        return None
    try:
        job = heal_request(composition=composition)
    except ComposerError as exc:  # it changed meanwhile (recovered, decomposed)
        logger.info("composition %s: no self-heal: %s", composition.pk, exc.message)
        return None
    return job.pk


def _holding(device_ids: set[int], state: CompositionState) -> list[Composition]:
    if not device_ids:
        return []
    held = Allocation.objects.filter(device_id__in=device_ids, released_at__isnull=True).values(
        "composition_id"
    )
    return list(
        Composition.objects.filter(state=state, pk__in=held).select_related("tenant").order_by("pk")
    )


def compositions_react_to_health(
    *,
    unhealthy_device_ids: Iterable[int],
    healthy_device_ids: Iterable[int],
    reason: str,
    alert_id: int | None = None,
) -> HealthReaction:
    """React to devices that went bad or came back; returns what changed.

    `unhealthy_device_ids`: devices the caller found lost (failed, or cut off by a failed
    switch or link); `healthy_device_ids`: devices that came back. The ids say which
    compositions to look at; whether a device is lost *for a composition* is read from the
    tables, which the caller updates first (`composer.selectors.health`: a memory device
    behind a failed spine may still be reachable from one host and not from another).
    A READY composition that lost a device becomes DEGRADED, the reason naming the devices,
    `reason` ("switch cxl-leaf-a failed") and `alert_id`; one that opts in to self-heal
    gets a heal job (unless one is pending). A DEGRADED composition holding a device that
    came back is READY again when it has nothing lost any more. HEALING compositions are
    left to their heal job. Idempotent: calling again with the same input changes nothing.
    """
    unhealthy = {int(pk) for pk in unhealthy_device_ids}
    healthy = {int(pk) for pk in healthy_device_ids} - unhealthy
    ready = _holding(unhealthy, CompositionState.READY)
    back = _holding(healthy, CompositionState.DEGRADED)
    if not ready and not back:
        return HealthReaction()
    # The tables decide, as they do for the periodic pass: the two never disagree, so a
    # composition cannot flap between a poll's verdict and the reconcile's.
    problems = compositions_unhealthy_devices([*ready, *back], graph=load_graph())
    degraded: list[int] = []
    jobs: list[int] = []
    for composition in ready:
        found = problems.get(composition.pk)
        if not found:
            logger.info(
                "composition %s: the devices named are not lost by the tables; left ready",
                composition.pk,
            )
            continue
        if _degrade(composition, [p.sentence() for p in found], reason, alert_id):
            degraded.append(composition.pk)
            job = _self_heal(composition)
            if job is not None:
                jobs.append(job)
    names = _devices_back([c for c in back if c.pk not in problems], healthy)
    recovered = [
        c.pk
        for c in back
        if c.pk not in problems
        and composition_recover(
            composition=c,
            back=names.get(c.pk, ()),
            why=f"{reason}{_alert(alert_id)}",
            source=f"alert {alert_id}" if alert_id is not None else SOURCE,
        )
    ]
    return HealthReaction(tuple(degraded), tuple(recovered), tuple(jobs))


def compositions_health_reconcile(*, now: Any = None) -> HealthReconcileResult:
    """The periodic safety net: READY compositions with a lost device become DEGRADED (and
    self-heal), DEGRADED ones whose devices are all fine are READY again, heals no job runs
    are queued again. Returns what it did."""
    compositions = list(
        Composition.objects.filter(
            state__in=[CompositionState.READY, CompositionState.DEGRADED], host__isnull=False
        )
        .select_related("tenant")
        .order_by("pk")
    )
    degraded: list[int] = []
    recovered: list[int] = []
    jobs: list[int] = []
    if compositions:
        problems = compositions_unhealthy_devices(compositions, graph=load_graph())
        for composition in compositions:
            found: list[DeviceProblem] = problems.get(composition.pk, [])
            if composition.state == CompositionState.READY and found:
                names = [p.sentence() for p in found]
                if _degrade(composition, names, "found by the periodic health check", None):
                    degraded.append(composition.pk)
                    job = _self_heal(composition)
                    if job is not None:
                        jobs.append(job)
            elif (
                composition.state == CompositionState.DEGRADED
                and not found
                and composition_recover(
                    composition=composition, why="periodic health check", source=SOURCE
                )
            ):
                recovered.append(composition.pk)
    requeued = heal_reconcile(now=now)
    if degraded or recovered or jobs:
        logger.warning(
            "health reconcile: degraded %s, recovered %s, heal jobs %s", degraded, recovered, jobs
        )
    return HealthReconcileResult(
        HealthReaction(tuple(degraded), tuple(recovered), tuple(jobs)),
        tuple(requeued),
    )
