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

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain, islice

import composer.placement.fragmentation as fragmentation
import composer.placement.policies as policies
from composer.placement.constraints import (
    blocked_domains,
    item_candidates,
    storage_gb,
    validate,
)
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
from composer.placement.plan import plan_on_host
from composer.placement.request import (
    Note,
    Placement,
    PlacementRequest,
    Rejection,
)
from composer.placement.scoring import (
    CORE_FIT_WEIGHT,
    TENANT_HOST_PENALTY,
    group_balance,
    host_rank,
    spreads,
)
from composer.placement.shared import Candidates, amounts
from composer.placement.shares import (
    ShareWant,
    hold,
    share_seen,
    share_shortfall,
    share_wants,
)
from composer.placement.snapshot import HostInfo, Snapshot
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
    problem = validate(request, snapshot)
    if problem is not None:
        return Rejection("invalid", problem)
    if request.pinned:  # named devices first, the rest around them (placement.pinned)
        return place_pinned(request, snapshot, place)
    funnel: Funnel = []
    blocked = blocked_domains(request, snapshot)

    hosts = _Hosts(request, snapshot, blocked)
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
    plans: list[tuple[Placement, int]] = []
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
        best = max(plans, key=lambda pair: (pair[0].score, -pair[1]))[0]
        return Placement(
            best.host,
            best.host_name,
            best.devices,
            best.memory,
            best.score,
            best.explanation,
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


class _Hosts:
    """The hosts a request may be built on, counted per reach group without a scan where
    possible (each group's hosts are indexed by free cores), and walked best ranked first."""

    def __init__(self, request: PlacementRequest, snapshot: Snapshot, blocked: frozenset[str]):
        self.request, self.snapshot, self.blocked = request, snapshot, blocked
        self.simple = request.host is None and not request.host_memory_gib
        # Reach groups a share item limits to some of their hosts: those holding a partly
        # shared device with the share free, in a group that reaches no whole free device.
        self.only: dict[int, frozenset[str]] = {}
        # Hosts holding a partly shared device with a share item's share free: planned
        # first, so that shares fill devices already shared before whole ones are broken.
        self.first: set[str] = set()

    def hold(self, want: ShareWant, groups: set[int]) -> None:
        """Limit the groups of `groups` that serve `want` only through partly shared
        devices to the hosts holding one with the share free (shares.hold)."""
        hold(self.snapshot, want, groups, self.only, self.first)

    def ok(self, host: HostInfo, *, isolate: bool = True) -> bool:
        request = self.request
        return (
            host.cores_free >= request.cores
            and host.memory_gib_free >= request.host_memory_gib
            and not (isolate and self.blocked and self.blocked.intersection(host.switches))
        )

    def _start(self, group: int) -> int:
        """Where the group's hosts with enough free cores start in `group_by_cores`."""
        return bisect_left(self.snapshot.group_cores_sorted[group], self.request.cores)

    def _members(self, group: int) -> Iterator[str]:
        return islice(self.snapshot.group_by_cores[group], self._start(group), None)

    def count(self, groups: set[int], *, isolate: bool = True) -> int:
        """How many usable hosts the reach groups `groups` hold."""
        snapshot = self.snapshot
        limited = groups & self.only.keys() if self.only else None
        if limited:
            hosts = snapshot.hosts
            asked = self.request.host
            return sum(
                1
                for g in limited
                for h in self.only[g]
                if asked in (None, h) and self.ok(hosts[h], isolate=isolate)
            ) + self.count(groups - limited, isolate=isolate)
        if self.request.host is not None:
            host = snapshot.hosts[self.request.host]
            return int(snapshot.host_group[host.id] in groups and self.ok(host, isolate=isolate))
        if self.simple and not (isolate and self.blocked):
            by_cores = snapshot.group_by_cores
            return sum(len(by_cores[g]) - self._start(g) for g in groups)
        hosts = snapshot.hosts
        return sum(
            1 for g in groups for h in self._members(g) if self.ok(hosts[h], isolate=isolate)
        )

    def _limited(self, group: int, members: Iterator[str]) -> Iterator[str]:
        """`members` of `group`, only those a share item leaves when it limits the group."""
        only = self.only.get(group)
        return members if only is None else (h for h in members if h in only)

    def _most_free_first(self, group: int) -> Iterator[str]:
        """The group's hosts with enough free cores, most free cores first (ties by name,
        as in `group_by_cores`): its runs of equal free cores, from the last."""
        by, cores = self.snapshot.group_by_cores[group], self.snapshot.group_cores_sorted[group]
        start, end = self._start(group), len(by)
        while end > start:
            first = bisect_left(cores, cores[end - 1], start, end)
            yield from by[first:end]
            end = first

    def ranked(self, groups: set[int], gpus: int) -> Iterator[tuple[HostInfo, float]]:
        """Usable hosts of `groups`, best ranked first (scoring.host_rank), with their
        penalty: a merge of each group's hosts in free-core order (most free first when the
        request spreads, fewest when it packs), the tenant's own hosts moved back."""
        request, snapshot = self.request, self.snapshot
        hosts = snapshot.hosts
        if request.host is not None:
            host = hosts[request.host]
            group = snapshot.host_group[host.id]
            allowed = group not in self.only or host.id in self.only[group]
            if group in groups and allowed and self.ok(host):
                yield host, host_rank(request, snapshot, host, gpus)[0]
            return
        if fragmentation.applies(request):  # the default policy's ranking (fragmentation.py)
            yield from self._least_fragmenting(groups)
            return
        scale = CORE_FIT_WEIGHT / max(snapshot.max_cores, 1)
        spread = spreads(request)
        # core_fit, split into what is the same for every host and what is not.
        base = CORE_FIT_WEIGHT + scale * request.cores if spread else -scale * request.cores
        lanes = [
            _lane(
                group_balance(request, snapshot, group, gpus) + base,
                -scale if spread else scale,
                self._limited(
                    group, self._most_free_first(group) if spread else self._members(group)
                ),
                snapshot,
            )
            for group in sorted(groups)
        ]
        merged: Iterator[tuple[float, str, str]] = heapq.merge(*lanes)
        if spread and request.tenant_hosts:
            merged = _moved_back(merged, request.tenant_hosts, TENANT_HOST_PENALTY)
        front = sorted(
            (host_rank(request, snapshot, hosts[h], gpus)[0], hosts[h].name, h)
            for h in self.first
            if (g := snapshot.host_group[h]) in groups
            and h in self.only.get(g, (h,))
            and self.ok(hosts[h])
        )
        for penalty, _, host_id in front:
            yield hosts[host_id], penalty
        done = {host_id for *_, host_id in front}
        for penalty, _, host_id in merged:
            host = hosts[host_id]
            if host_id not in done and self.ok(host):
                yield host, penalty

    def _least_fragmenting(self, groups: set[int]) -> Iterator[tuple[HostInfo, float]]:
        """The default ranking: of each group the hosts holding a share item's partly shared
        device, then the snuggest core fits, measured (fragmentation.ranked) and walked
        least fragmenting first; the hosts not measured after them, group by group."""
        snapshot, hosts = self.snapshot, self.snapshot.hosts
        walks = {g: (h for h in self._candidates(g) if self.ok(hosts[h])) for g in sorted(groups)}
        heads = {g: fragmentation.heads(walk, snapshot) for g, walk in walks.items()}
        extra = dict.fromkeys(self.request.tenant_hosts, TENANT_HOST_PENALTY)
        measured = fragmentation.ranked(self.request, snapshot, heads.items(), extra)
        done = set()
        for penalty, *_, host_id in measured:
            done.add(host_id)
            yield hosts[host_id], penalty
        for group, walk in walks.items():
            for host_id in chain(heads[group], walk):
                if host_id not in done:
                    yield hosts[host_id], host_rank(self.request, snapshot, hosts[host_id], 0)[0]

    def _candidates(self, group: int) -> Iterator[str]:
        first = sorted(h for h in self.first if self.snapshot.host_group[h] == group)
        yield from self._limited(group, iter(first))
        yield from self._limited(group, (h for h in self._members(group) if h not in first))


def _lane(
    offset: float, scale: float, members: Iterable[str], snapshot: Snapshot
) -> Iterator[tuple[float, str, str]]:
    """One reach group's hosts as (penalty, name, id), lazily: the merge only ever reads
    the first few of each group, so building every host's tuple was wasted work."""
    hosts = snapshot.hosts
    for host_id in members:
        host = hosts[host_id]
        yield offset + scale * host.cores_free, host.name, host_id


def _moved_back(
    ranked: Iterable[tuple[float, str, str]], hosts: frozenset[str], extra: float
) -> Iterator[tuple[float, str, str]]:
    """`ranked` (best first) with the penalty of `hosts` raised by `extra`, still best
    first: each of those is held back until nothing better is left."""
    held: list[tuple[float, str, str]] = []
    for entry in ranked:
        if entry[2] in hosts:
            heapq.heappush(held, (entry[0] + extra, entry[1], entry[2]))
            continue
        while held and held[0] <= entry:
            yield heapq.heappop(held)
        yield entry
    while held:
        yield heapq.heappop(held)


def _capacity_candidates(
    snapshot: Snapshot, kind: str, needed: float, blocked: frozenset[str], funnel: Funnel
) -> Candidates:
    if not needed:
        return {}
    return item_candidates(snapshot, kind, None, {}, blocked, funnel, label(kind, None))


def _reject(code: str, message: str, funnel: Funnel, nearest: Note) -> Rejection:
    return Rejection(code, message, tuple(funnel), nearest)
