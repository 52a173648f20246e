"""place(request, snapshot) -> Placement | Rejection: the placement decision. Pure Python.

Order of work, cheapest cut first: validate; hosts with the cores and memory (and, for a
critical request, outside other tenants' switches); devices of each item by kind, model,
attribute minima and isolation; CXL memory and NVMe candidates; then *reach groups* (hosts
that reach the same enclosures) that can see enough of everything, counted per group
without looking at single hosts. Only hosts of those groups are planned, best ranked first
(scoring.host_rank), each under the latency ceiling, the failure-domain policy, same switch
and its uplink bandwidth; the best-scoring of the first few feasible plans wins. Every cut
is recorded in the funnel; a rejection names the nearest feasible alternative. A request
that names its devices is placed by `composer.placement.pinned`.
"""

from __future__ import annotations

import composer.placement.fragmentation as fragmentation
import composer.placement.policies as policies
from composer.placement.constraints import (
    blocked_domains,
    item_candidates,
    storage_gb,
    validate,
)
from composer.placement.hosts import Hosts
from composer.placement.nearest import (
    Wanted,
    label,
    nearest_group_policy,
    nearest_host,
    nearest_policy,
    nearest_reach,
    policy_message,
)
from composer.placement.pinned import place_pinned
from composer.placement.plan import Draft, plan_on_host
from composer.placement.request import (
    Note,
    Placement,
    PlacementRequest,
    Rejection,
)
from composer.placement.shared import Candidates, amounts
from composer.placement.shares import (
    share_seen,
    share_shortfall,
    share_wants,
)
from composer.placement.snapshot import Snapshot
from composer.placement.spread import group_meets, policy_checks
from fabric.kinds import balanced, measured

__all__ = ["place"]

PLANS_COMPARED = 2  # feasible plans scored before the best is taken
MAX_PLANNED = 32  # hosts planned one by one before giving up (the best ranked first)
Funnel = list[tuple[str, int, int]]

_REASONS = {  # the plan's own constraints; a policy's are its `reason` (`_words`)
    "latency": "latency ceiling",
    "slice": "one memory slice per device and host",
    "uplink": "uplink bandwidth",
    "share": "room for the shares",
}
_CAPACITY = ("uplink", "slice", "share")  # reasons whose rejection code is no_capacity


def place(request: PlacementRequest, snapshot: Snapshot) -> Placement | Rejection:
    """A plan for `request` on `snapshot`, or the reason there is none. Deterministic:
    the same request on the same snapshot gives the same answer."""
    try:
        return _place(request, snapshot)
    finally:
        fragmentation.forget()  # the decision's ranker holds the snapshot: let it go


def _place(request: PlacementRequest, snapshot: Snapshot) -> Placement | Rejection:
    problem = validate(request, snapshot)
    if problem is not None:
        return Rejection("invalid", problem)
    if request.pinned:  # named devices first, the rest around them (placement.pinned)
        return place_pinned(request, snapshot, place)
    funnel: Funnel = []
    blocked = blocked_domains(request, snapshot)

    hosts = Hosts(request, snapshot, blocked)
    every = set(range(len(snapshot.groups)))
    total = 1 if request.host else len(snapshot.hosts)
    fitting = hosts.count(every, isolate=False)
    funnel.append(("hosts: cores and memory", total, fitting))
    if blocked:
        isolated = hosts.count(every)
        funnel.append(("hosts: isolation", fitting, isolated))
        fitting = isolated
    if not fitting:
        return _reject(
            "no_capacity",
            "No host has the cores and memory asked for.",
            funnel,
            nearest_host(request, snapshot),
        )

    items = [
        (
            item,
            item_candidates(
                snapshot,
                item.kind,
                item.model,
                item.minima,
                blocked,
                funnel,
                label(item.kind, item.model),
            ),
        )
        for item in request.items
        if item.share is None
    ]
    shares = share_wants(request, snapshot, blocked, funnel)
    for ask in shares:
        short = share_shortfall(ask)
        if short is not None:
            return _reject("no_capacity", short[0], funnel, short[1])
    for item, found in items:
        have = amounts(snapshot, found, "count")[0]
        if have < item.count:
            return _reject(
                "no_capacity",
                f"{have} usable {label(item.kind, item.model)} match; {item.count} asked.",
                funnel,
                Note(f"{have} of {item.count} fit anywhere; ask for {have} or wait."),
            )
    # What `memory_gib` and `storage_tb` draw on: the kinds measured in GiB and in GB.
    in_gib, in_gb = measured("gib"), measured("gb")
    memory = _capacity_candidates(snapshot, in_gib.name, request.memory_gib, blocked, funnel)
    storage = _capacity_candidates(
        snapshot, in_gb.name, storage_gb(request.storage_tb), blocked, funnel
    )
    for what, found, needed, unit, measure in (
        (in_gib.amount_of, memory, request.memory_gib, in_gib.unit, in_gib.measure),
        (in_gb.amount_of, storage, storage_gb(request.storage_tb), in_gb.unit, in_gb.measure),
    ):
        have = amounts(snapshot, found, measure)[0]
        if needed and have < needed:
            return _reject(
                "no_capacity",
                f"{have:,} {unit} of {what} free; {needed:,.0f} asked.",
                funnel,
                Note(f"{have:,} {unit} of {what} fit anywhere; ask less or wait."),
            )

    # Reach groups that see enough of each thing asked for, counted per group (once per
    # snapshot and candidate set: shared.amounts), one thing at a time: the funnel and a
    # rejection then name what no host reaches (with what else it needs), not only that
    # "devices" are out of reach.
    wanted = [Wanted(item.kind, item.model, found, item.count, "count") for item, found in items]
    wanted += [Wanted(w.item.kind, w.item.model, w.found, w.share, "share") for w in shares]
    if request.memory_gib:
        wanted.append(Wanted(in_gib.name, None, memory, request.memory_gib, in_gib.measure))
    if request.storage_tb:
        wanted.append(
            Wanted(in_gb.name, None, storage, storage_gb(request.storage_tb), in_gb.measure)
        )
    every_group = set(range(len(snapshot.groups)))
    feasible = every_group
    reaching = fitting
    for index, want in enumerate(wanted):
        if want.unit == "share":  # a whole device reached, or one shared on a host
            share = shares[index - len(items)]
            seen = share_seen(snapshot, share)
            kept = {g for g in feasible if seen[g] >= want.needed}
            hosts.hold(share, kept)
            count = hosts.count(kept)
        else:
            seen = amounts(snapshot, want.found, want.unit)[1]
            kept = {g for g in feasible if seen[g] >= want.needed}
            count = reaching if len(kept) == len(feasible) else hosts.count(kept)
        funnel.append((f"hosts: reach {want.what}", reaching, count))
        if not count:
            usable = {g for g in every_group if hosts.count({g})}
            alone = any(seen[g] >= want.needed for g in usable)
            rest = " and ".join(w.what for w in wanted[:index])
            return _reject(
                "no_capacity",
                f"No host reaches {want.what} together with {rest}."
                if alone and rest
                else f"No host reaches {want.what} through the fabric.",
                funnel,
                nearest_reach(snapshot, wanted, index, seen, usable, feasible),
            )
        feasible, reaching = kept, count

    # Same switch, then the spread, decided per reach group (latency aside) before any
    # host: each check its own step, so that a rejection names the one that failed.
    for check in policy_checks(request) if items else ():
        kept = {g for g in feasible if group_meets(check, request, snapshot, items, g)}
        in_policy = hosts.count(kept)
        funnel.append((f"hosts: {_words(request, check)}", reaching, in_policy))
        if not in_policy:
            usable = {g for g in feasible if hosts.count({g})}
            return _reject(
                "domain_conflict",
                policy_message(request, items, check),
                funnel,
                nearest_group_policy(request, snapshot, items, check, usable),
            )
        feasible, reaching = kept, in_policy

    gpus = sum(item.count for item, _ in items if item.kind in balanced())
    plans: list[tuple[Draft, int]] = []
    failures: dict[str, int] = {}
    tried = 0
    for rank, (host, penalty) in enumerate(hosts.ranked(feasible, gpus)):
        if tried == MAX_PLANNED and not plans:
            break
        tried += 1
        outcome = plan_on_host(request, snapshot, host, items, memory, storage, penalty, shares)
        if isinstance(outcome, str):
            failures[outcome] = failures.get(outcome, 0) + 1
            continue
        plans.append((outcome, rank))
        if len(plans) == PLANS_COMPARED:
            break
    survivors = reaching
    if tried < reaching and not plans:
        funnel.append(("hosts: not tried (the best ranked are planned)", survivors, tried))
        survivors = tried
    for reason in ("latency", "domain", "switch", "slice", "share", "uplink"):
        if reason in failures:
            funnel.append(
                (f"hosts: {_words(request, reason)}", survivors, survivors - failures[reason])
            )
            survivors -= failures[reason]
    if plans:
        draft = max(plans, key=lambda pair: (pair[0].placement.score, -pair[1]))[0]
        best = draft.placement
        return Placement(
            best.host,
            best.host_name,
            best.devices,
            best.memory,
            best.score,
            draft.explain(),
            tuple(funnel),
        )
    worst = max(failures, key=lambda r: (failures[r], r))
    code = "latency" if worst == "latency" else "domain_conflict"
    code = "no_capacity" if worst in _CAPACITY else code
    return _reject(
        code,
        f"Every host that reaches enough devices fails the {_words(request, worst)}.",
        funnel,
        nearest_policy(request, snapshot, items, worst),
    )


def _words(request: PlacementRequest, reason: str) -> str:
    """How the funnel and a rejection name `reason`: a constraint of the plan's own, or the
    `reason` of the request's policy that makes that check (a failed pick: the selected
    policy's)."""
    if reason in _REASONS:
        return _REASONS[reason]
    for policy in policies.enabled(request):
        if policy.check == reason:
            return policy.reason
    return policies.selected(request).reason


def _capacity_candidates(
    snapshot: Snapshot, kind: str, needed: float, blocked: frozenset[str], funnel: Funnel
) -> Candidates:
    if not needed:
        return {}
    return item_candidates(snapshot, kind, None, {}, blocked, funnel, label(kind, None))


def _reject(code: str, message: str, funnel: Funnel, nearest: Note) -> Rejection:
    return Rejection(code, message, tuple(funnel), nearest)
