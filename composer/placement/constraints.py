"""The hard constraints: what may be placed, and which devices a given host may take.

Pure Python over a `Snapshot`: request validation, candidate filters (kind, model,
attribute minima, isolation), and the pickers that choose devices for one host under the
failure-domain policy (spread across enclosures or switches, pack, or none: each policy's
`choose`, from `composer.placement.policies`), same switch, CXL memory as GiB slices and
NVMe capacity. Ordering preferences come from the caller's `order` key (scoring.py): the
pickers only decide what is *allowed*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import composer.placement.policies as policies
from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.shareable import shares_per_device
from composer.placement.snapshot import LINEAGE, DeviceInfo, Snapshot
from fabric.kinds import find, is_sliced

__all__ = [
    "blocked_domains",
    "choose_capacity",
    "choose_whole",
    "item_candidates",
    "meets_minima",
    "validate",
]

MAX_COUNT = 1024  # more devices than any one host could ever be composed with
EnclosureKey = Callable[[str], tuple[float, ...]]
PerEnclosure = Mapping[str, Sequence[DeviceInfo]]


def validate(request: PlacementRequest, snapshot: Snapshot) -> str | None:
    """Why the request cannot be understood (a sentence naming the field), or None."""
    if request.policy not in policies.NAMES:
        return f"policy must be one of {', '.join(policies.NAMES)}; got {request.policy!r}."
    for index, item in enumerate(request.items):
        if not isinstance(item.count, int) or not 1 <= item.count <= MAX_COUNT:
            return f"items[{index}].count must be a whole number from 1 to {MAX_COUNT}."
        declared = find(item.kind)
        if declared is not None and not declared.requestable:
            return (
                f"items[{index}]: {declared.label} is requested in GiB (memory_gib), not devices."
            )
        if item.kind not in snapshot.by_kind and not any(
            k == item.kind for k, _ in snapshot.by_model
        ):
            pass  # an unknown or exhausted kind is a capacity question, not bad input
        for name, value in item.minima.items():
            if not isinstance(value, int | float) or value < 0:
                return f"items[{index}].minima[{name!r}] must be a number >= 0."
        if item.share is not None:
            problem = _share_problem(index, item)
            if problem is not None:
                return problem
    for name in ("memory_gib", "storage_tb", "cores", "host_memory_gib"):
        value = getattr(request, name)
        if not isinstance(value, int | float) or value < 0:
            return f"{name} must be a number >= 0; got {value!r}."
    conflict = policies.conflict(request)
    if conflict is not None:
        return conflict
    if request.max_latency_ns is not None and request.max_latency_ns <= 0:
        return "max_latency_ns must be a positive number of nanoseconds."
    if request.host is not None and request.host not in snapshot.hosts:
        return f"host {request.host!r} is not a usable host."
    wants = (request.items, request.memory_gib, request.storage_tb, request.cores, request.pinned)
    if not any(wants) and not request.host_memory_gib:
        return "the request asks for nothing."
    return None


def _share_problem(index: int, item: DeviceItem) -> str | None:
    """Why a share item cannot be understood (a sentence naming the field), or None."""
    whole = shares_per_device(item.kind)
    if not whole:
        return f"items[{index}].share: {item.kind} devices are taken whole, never shared."
    if isinstance(item.share, bool) or not isinstance(item.share, int) or item.share < 1:
        return (
            f"items[{index}].share must be a whole number of thousandths of a device, "
            f"from 1 to {whole - 1}."
        )
    if item.share >= whole:
        return (
            f"items[{index}].share is {item.share} thousandths: {whole} or more is whole "
            "devices; ask for them with count, without share."
        )
    if item.count != 1:
        return (
            f"items[{index}].count must be 1 with a share: a share is part of one device "
            "(ask for more shares as more items)."
        )
    return None


def blocked_domains(request: PlacementRequest, snapshot: Snapshot) -> frozenset[str]:
    """Switches and enclosures this request may not touch, as every policy says (critical
    isolation: for a critical request, those any other tenant holds something in; for any
    request, those another tenant holds critically)."""
    blocked: set[str] = set()
    for policy in policies.isolating():
        blocked.update(policy.blocked(request, snapshot))
    return frozenset(blocked)


def item_candidates(
    snapshot: Snapshot,
    kind: str,
    model: str | None,
    minima: Mapping[str, float],
    blocked: frozenset[str],
    funnel: list[tuple[str, int, int]],
    label: str,
) -> dict[str, list[DeviceInfo]]:
    """The usable devices of one kind (and model) that meet the minima and the isolation,
    by enclosure; each filter appends its (name, before, after) to `funnel`. Worked out once
    per snapshot and key (the result is shared: callers must not change it); on a snapshot
    patched from another (`LINEAGE`), only for the enclosures whose devices changed, the
    others' lists taken from that snapshot's (worked out there once)."""
    key = ("items", kind, model, tuple(sorted(minima.items())), blocked, label)
    known = snapshot.memo.get(key)
    if known is None:
        inherited = None
        lineage = snapshot.memo.get(LINEAGE)
        if lineage is not None:
            parent, touched = cast("tuple[Snapshot, frozenset[str]]", lineage)
            item_candidates(parent, kind, model, minima, blocked, [], label)
            inherited = (_Known(*cast("tuple[Any, Any, Any]", parent.memo[key])).unblocked, touched)
        steps: list[tuple[str, int, int]] = []
        found, unblocked = _filter(snapshot, kind, model, minima, blocked, steps, label, inherited)
        known = snapshot.memo[key] = (found, tuple(steps), unblocked)
    entry = _Known(*cast("tuple[Any, Any, Any]", known))
    funnel.extend(entry.steps)
    return entry.found


class _Known(NamedTuple):
    """A memoised `item_candidates`: the candidates, the funnel's steps, and the candidates
    before isolation (what a patched snapshot inherits: isolation is per key)."""

    found: dict[str, list[DeviceInfo]]
    steps: tuple[tuple[str, int, int], ...]
    unblocked: dict[str, list[DeviceInfo]]


def _filter(
    snapshot: Snapshot,
    kind: str,
    model: str | None,
    minima: Mapping[str, float],
    blocked: frozenset[str],
    funnel: list[tuple[str, int, int]],
    label: str,
    inherited: tuple[Mapping[str, list[DeviceInfo]], frozenset[str]] | None = None,
) -> tuple[dict[str, list[DeviceInfo]], dict[str, list[DeviceInfo]]]:
    """(candidates, candidates before isolation). With `inherited` (the lists before
    isolation of the snapshot this one was patched from, and the enclosures changed since),
    the lists of enclosures not changed are taken from it: the same devices, so the same
    lists, in this snapshot's order."""
    by_kind = snapshot.by_kind.get(kind, {})
    total = sum(len(ids) for ids in by_kind.values())
    index = by_kind if model is None else snapshot.by_model.get((kind, model), {})
    devices = snapshot.devices
    if inherited is None:
        found = {e: [devices[i] for i in ids] for e, ids in index.items()}
        count = sum(len(v) for v in found.values())
        funnel.append((f"{label}: kind and model", total, count))
        if minima:
            found = {
                e: kept
                for e, devs in found.items()
                if (kept := [d for d in devs if meets_minima(d, minima)])
            }
            before, count = count, sum(len(v) for v in found.values())
            funnel.append((f"{label}: attribute minima", before, count))
    else:
        lists, touched = inherited
        count = sum(len(ids) for ids in index.values())
        funnel.append((f"{label}: kind and model", total, count))
        found = {}
        for e, ids in index.items():
            if e in touched:
                kept = [devices[i] for i in ids]
                if minima:
                    kept = [d for d in kept if meets_minima(d, minima)]
                if kept or not minima:
                    found[e] = kept
            elif e in lists:
                found[e] = lists[e]
        if minima:
            before, count = count, sum(len(v) for v in found.values())
            funnel.append((f"{label}: attribute minima", before, count))
    unblocked = found
    if blocked:
        enclosures = snapshot.enclosures
        found = {
            e: devs
            for e, devs in found.items()
            if e not in blocked and not blocked.intersection(enclosures[e].switches)
        }
        before, count = count, sum(len(v) for v in found.values())
        funnel.append((f"{label}: isolation", before, count))
    return found, unblocked


def meets_minima(device: DeviceInfo, minima: Mapping[str, float]) -> bool:
    """Whether `device` has at least each attribute of `minima` (whole devices and shares
    are filtered alike)."""
    attributes = device.attributes
    return all(attributes.get(name, 0) >= value for name, value in minima.items())


def choose_whole(
    count: int,
    per_enclosure: PerEnclosure,
    order: EnclosureKey,
    policy: str,
    switches_of: Callable[[str], tuple[str, ...]],
) -> list[DeviceInfo] | None:
    """`count` whole devices from `per_enclosure` under the policy named `policy`, or None
    when the policy cannot be met. `order(enclosure)` ranks enclosures (preferred first)."""
    return policies.named(policy).choose(count, per_enclosure, order, switches_of)


def choose_capacity(
    needed: float, devices: Sequence[DeviceInfo], order: Callable[[DeviceInfo], tuple[float, ...]]
) -> list[tuple[DeviceInfo, int]] | None:
    """Cover `needed` (GiB of CXL memory, or GB of NVMe) with as few devices as possible:
    the smallest device that covers it alone (best fit), else the biggest first. Returns
    (device, amount taken) pairs, or None when everything reachable is not enough."""
    if not devices:
        return None
    sliced = is_sliced(devices[0].kind)
    size = _free_gib if sliced else _capacity
    fits = [d for d in devices if size(d) >= needed]
    if fits:
        best = min(fits, key=lambda d: (order(d)[0], size(d), order(d)))
        return [(best, int(needed) if sliced else size(best))]
    taken: list[tuple[DeviceInfo, int]] = []
    left = needed
    for device in sorted(devices, key=lambda d: (-size(d), order(d))):
        amount = min(size(device), int(left)) if sliced else size(device)
        taken.append((device, amount))
        left -= amount
        if left <= 0:
            return taken
    return None


def _free_gib(device: DeviceInfo) -> int:
    return device.free_gib


def _capacity(device: DeviceInfo) -> int:
    return device.capacity_gb


def storage_gb(storage_tb: float) -> float:
    """NVMe capacity in GB (decimal, as drives are sold)."""
    return storage_tb * 1000
