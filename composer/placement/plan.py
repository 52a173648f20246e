"""The plan on one host: which devices and memory slices it would take, or which constraint
fails there. Pure Python; `engine.place` calls `plan_on_host` for the best-ranked hosts.

A host reaches exactly the enclosures of its reach group, so the part of each candidate set
it may use is the group's part (`shared.group_part`, memoised per snapshot) cut by the
latency ceiling; the host's own enclosure ranks (own switch, latency) are memoised too
(`shared.host_ranks`). Only the request-dependent work (the ceiling, same switch, the
pickers, the uplink budget and the score) is done per decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import composer.placement.policies as policies
from composer.placement.constraints import (
    EnclosureKey,
    choose_capacity,
    choose_whole,
    storage_gb,
)
from composer.placement.request import (
    DeviceItem,
    DevicePick,
    Note,
    Placement,
    PlacementRequest,
)
from composer.placement.scoring import plan_points, plan_words
from composer.placement.shareable import shares_per_device as whole_of
from composer.placement.shared import Candidates, group_part, host_ranks
from composer.placement.shares import (
    BREAK_PENALTY,
    ShareWant,
    charged_gbps,
    choose_shares,
    share_note,
)
from composer.placement.snapshot import DeviceInfo, HostInfo, Reach, Snapshot
from composer.placement.spread import fits
from fabric.kinds import is_sliced

__all__ = ["Draft", "plan_on_host"]

_UNREACHED = Reach(0, 0.0)


class Draft(NamedTuple):
    """A plan with its score, its explanation left to `explain()`: the engine compares a
    few plans and words only the one it returns."""

    placement: Placement
    explain: Callable[[], tuple[Note, ...]]


def _any_order(device: DeviceInfo) -> tuple[float, ...]:
    """For asking only whether devices can cover an amount: the order does not matter."""
    return (0.0,)


def plan_on_host(
    request: PlacementRequest,
    snapshot: Snapshot,
    host: HostInfo,
    items: Sequence[tuple[DeviceItem, Candidates]],
    memory: Candidates,
    storage: Candidates,
    host_penalty: float,
    shares: Sequence[ShareWant] = (),
) -> Draft | str:
    """The plan on `host`, or which constraint fails there ("latency", "switch", "domain",
    "share", "uplink"); unworded (`Draft.explain` words it). `items`, `memory` and
    `storage` must be memoised candidate sets; `shares` the request's share items
    (composer.placement.shares)."""
    reach = snapshot.reach.get(host.id, {})
    near = _near(snapshot, host, request.max_latency_ns)
    near_items = []
    for item, found in items:
        part, count = near(found)
        if count < item.count:
            return "latency"
        near_items.append((item, part))
    enclosures = snapshot.enclosures

    def switches_of(enclosure: str) -> tuple[str, ...]:
        return enclosures[enclosure].switches

    chosen: list[DeviceInfo] = []
    if near_items and request.same_switch:
        switch = _best_switch(request, snapshot, host, near_items)
        if switch is None:
            return "switch"
        near_items = [
            (item, {e: v for e, v in found.items() if switch in enclosures[e].switches})
            for item, found in near_items
        ]
    ranks = host_ranks(snapshot, host.id)

    def keys_of(found: Candidates) -> EnclosureKey:
        # scoring.enclosure_order's key (own switch, untouched, latency), from the host's
        # memoised ranks: the same tuples, so the same order and the same picks. Worked
        # out when asked: the pickers ask once for each enclosure they weigh.
        def key(e: str) -> tuple[int, int, int]:
            own, latency = ranks[e]
            return (own, 1 if len(found[e]) >= enclosures[e].device_total > 0 else 0, latency)

        return key

    for item, found in near_items:
        picked = choose_whole(item.count, found, keys_of(found), request.policy, switches_of)
        if picked is None:
            return "domain"
        chosen += picked
    shared: list[tuple[DeviceInfo, int, int]] = []
    if shares:
        outcome = choose_shares(
            shares, host.id, chosen, near, keys_of, switches_of, request.max_latency_ns
        )
        if isinstance(outcome, str):
            return outcome
        shared = outcome
        # Each whole device broken into shares weighs on the host (scoring's sentence).
        host_penalty += BREAK_PENALTY * sum(
            1 for d, _, before in shared if before == whole_of(d.kind)
        )

    slices: list[tuple[DeviceInfo, int]] = []
    held = snapshot.sliced.get(host.id, frozenset())
    for needed, found in ((request.memory_gib, memory), (storage_gb(request.storage_tb), storage)):
        if not needed:
            continue
        pool = [d for v in near(found)[0].values() for d in v]
        # One slice of a memory device per host: those it already holds one of are out.
        usable = [d for d in pool if d.id not in held] if held and found is memory else pool
        taken = choose_capacity(needed, usable, _device_order(ranks))
        if taken is None:
            # Only the held devices would have covered it: say so rather than "latency".
            held_back = len(usable) < len(pool)
            if held_back and choose_capacity(needed, pool, _any_order) is not None:
                return "slice"
            return "latency"
        if is_sliced(usable[0].kind):
            slices += taken
        else:
            chosen += [d for d, _ in taken]

    def pick(device: DeviceInfo, gib: int | None = None, share: int | None = None) -> DevicePick:
        # A partly shared device is bound to this host already: its path is the one its
        # enclosure is reached by, none when the host reaches it no more.
        path = reach.get(device.enclosure) or _UNREACHED
        return DevicePick(
            device.id,
            device.name,
            device.kind,
            device.enclosure,
            path.latency_ns,
            path.bottleneck_gbps,
            gib,
            path.estimated_hops,
            share,
        )

    picks = tuple(pick(d) for d in chosen) + tuple(pick(d, None, s) for d, s, _ in shared)
    memory_picks = tuple(pick(d, gib) for d, gib in slices)
    demand = sum(charged_gbps(p) for p in (*picks, *memory_picks))
    budget = host.uplink_gbps * snapshot.oversubscription - host.uplink_used_gbps
    if demand > budget + 1e-9:
        return "uplink"
    every = (*picks, *memory_picks)
    score = plan_points(snapshot, host, every, host_penalty)

    def explain() -> tuple[Note, ...]:
        sentences = plan_words(request, snapshot, host, every, host_penalty, score)
        sentences[:0] = [share_note(d, s, before) for d, s, before in shared]
        if memory_picks:
            sentences.insert(
                0,
                Note(
                    f"{request.memory_gib} GiB of CXL memory as "
                    f"{len(memory_picks)} slice{'s' if len(memory_picks) > 1 else ''}: "
                    + ", ".join(f"{p.gib} GiB of {p.name}" for p in memory_picks)
                    + "."
                ),
            )
        sentences.insert(
            0,
            Note(
                f"Uplink demand {demand:.0f} GB/s of a {budget:.0f} GB/s budget "
                f"({host.uplink_gbps:.0f} GB/s x {snapshot.oversubscription:g} "
                "oversubscription, less what is bound)."
            ),
        )
        return tuple(sentences)

    return Draft(Placement(host.id, host.name, picks, memory_picks, score, ()), explain)


def _near(
    snapshot: Snapshot, host: HostInfo, ceiling: int | None
) -> Callable[[Candidates], tuple[Candidates, int]]:
    """The part of a candidate set `host` reaches within `ceiling` (in the set's order), and
    how many devices it holds."""
    group = snapshot.host_group[host.id]
    reach = snapshot.reach.get(host.id, {})

    def near(found: Candidates) -> tuple[Candidates, int]:
        part, count = group_part(snapshot, found, group)
        if ceiling is None:
            return part, count
        part = {e: v for e, v in part.items() if reach[e].latency_ns <= ceiling}
        return part, sum(len(v) for v in part.values())

    return near


def _best_switch(
    request: PlacementRequest,
    snapshot: Snapshot,
    host: HostInfo,
    near_items: Sequence[tuple[DeviceItem, Candidates]],
) -> str | None:
    """The switch behind which every item fits, as the request's policy counts (a spread:
    one device per enclosure or switch): the host's own first, then the one with the
    fewest matching free devices (best fit: large free blocks stay whole)."""
    devices = policies.NONE.per_switch(snapshot, near_items, None)
    spread = policies.selected(request).per_switch(snapshot, near_items, None)
    own = set(host.switches)
    fitting = [s for s, counts in spread.items() if fits(counts, near_items)]
    if not fitting:
        return None
    return min(fitting, key=lambda s: (s not in own, sum(devices[s]), s))


def _device_order(ranks: dict[str, tuple[int, int]]) -> Callable[[DeviceInfo], tuple[int, ...]]:
    """Capacity devices for a host: own switch first, then nearest (ties: the picker's)."""

    def key(device: DeviceInfo) -> tuple[int, ...]:
        own, latency = ranks[device.enclosure]
        return (own, latency, 0)

    return key
