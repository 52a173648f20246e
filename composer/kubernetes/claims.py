"""A ResourceClaim as the controller reads it, and the per-device conditions it writes.

Why a view: a claim is a large nested document, and only a few of its fields decide what
Composer does. `claim_view` reduces it to those (which of this driver's devices were
allocated, on which node, for which pods, whether it is going away); `verdict` turns the
state of the composition made for it into the binding condition the scheduler waits on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from composer.choices import CompositionState
from composer.kubernetes.names import (
    CONDITION_FAILED,
    CONDITION_READY,
    CONDITION_RESCHEDULE,
    DRIVER,
)

__all__ = ["ClaimView", "Verdict", "claim_view", "status_devices", "verdict"]


@dataclass(frozen=True)
class ClaimView:
    """What decides the controller's work on one claim."""

    uid: str
    namespace: str
    name: str
    node: str | None  # the node the allocation is for (None: not said; a claim error)
    devices: tuple[tuple[str, str], ...]  # (pool, device) of this driver, in order
    pods: tuple[str, ...]  # the pods it is reserved for
    deleting: bool  # deletion requested (a finalizer may keep it a while)


@dataclass(frozen=True)
class Verdict:
    """One condition for every device of the claim (None: not settled yet)."""

    type: str
    reason: str
    message: str


def claim_view(claim: Mapping[str, Any], driver: str = DRIVER) -> ClaimView | None:
    """The view of `claim`, or None when nothing of it is allocated to `driver`."""
    meta = claim.get("metadata") or {}
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    ours = tuple(
        (str(r.get("pool", "")), str(r.get("device", "")))
        for r in results
        if r.get("driver") == driver
    )
    if not ours:
        return None
    pods = tuple(
        str(ref.get("name", ""))
        for ref in status.get("reservedFor") or []
        if ref.get("resource") == "pods"
    )
    return ClaimView(
        uid=str(meta.get("uid", "")),
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        node=_node(allocation.get("nodeSelector") or {}),
        devices=ours,
        pods=pods,
        deleting=bool(meta.get("deletionTimestamp")),
    )


def _node(selector: Mapping[str, Any]) -> str | None:
    """The node an allocation's node selector names (`metadata.name` In [node], as the
    scheduler writes it for devices that bind to a node), else None."""
    for term in selector.get("nodeSelectorTerms") or []:
        for match in (term.get("matchFields") or []) + (term.get("matchExpressions") or []):
            values = match.get("values") or []
            named = match.get("key") in ("metadata.name", "kubernetes.io/hostname")
            if named and match.get("operator", "In") == "In" and len(values) == 1:
                return str(values[0])
    return None


def verdict(state: str | None, reason: str = "") -> Verdict | None:
    """The binding condition for a composition in `state` (None: none made): ready when
    bound; reschedule when it could not be placed or failed while composing (the devices
    are free again: the scheduler may pick others); failed when a bound device broke.
    None while it is still coming up."""
    if state in (CompositionState.READY, CompositionState.RESIZING):
        return Verdict(CONDITION_READY, "Composed", "The devices are bound to the node's host.")
    if state in (CompositionState.REJECTED, CompositionState.FAILED):
        words = reason or "Composer could not compose the devices."
        return Verdict(CONDITION_RESCHEDULE, "NotComposed", words)
    if state in (CompositionState.DEGRADED, CompositionState.HEALING):
        words = reason or "A device or its path is unhealthy."
        return Verdict(CONDITION_FAILED, "DeviceUnhealthy", words)
    if state in (CompositionState.DECOMPOSING, CompositionState.RELEASED):
        return Verdict(CONDITION_FAILED, "Released", "The composition was taken down.")
    return None


def status_devices(
    claim: Mapping[str, Any],
    view: ClaimView,
    settled: Verdict | None,
    now: datetime,
    driver: str = DRIVER,
) -> list[dict[str, Any]]:
    """The claim's `status.devices` with this driver's entries set to `settled`: other
    drivers' entries kept as they are, a condition's time kept while it does not change."""
    old = [dict(d) for d in (claim.get("status") or {}).get("devices") or []]
    mine = {(d.get("pool"), d.get("device")): d for d in old if d.get("driver") == driver}
    others = [d for d in old if d.get("driver") != driver]
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    entries: list[dict[str, Any]] = []
    for pool, device in view.devices:
        before = mine.get((pool, device)) or {}
        conditions = _conditions(before.get("conditions") or [], settled, stamp)
        entries.append({"driver": driver, "pool": pool, "device": device, "conditions": conditions})
    return others + entries


def _conditions(
    before: Sequence[Mapping[str, Any]], settled: Verdict | None, stamp: str
) -> list[dict[str, Any]]:
    """The three binding conditions: the settled one True, the others False (or none of
    them True while not settled). A condition's lastTransitionTime moves only when its
    status does."""
    previous = {c.get("type"): c for c in before}
    conditions = []
    for kind in (CONDITION_READY, CONDITION_RESCHEDULE, CONDITION_FAILED):
        on = settled is not None and settled.type == kind
        status = "True" if on else "False"
        old = previous.get(kind) or {}
        reason = settled.reason if settled is not None else "Pending"
        message = settled.message if on and settled is not None else ""
        changed = old.get("status") != status
        conditions.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message[:1000],
                "lastTransitionTime": stamp if changed else old.get("lastTransitionTime", stamp),
            }
        )
    return conditions
