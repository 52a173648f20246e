"""Placing a share of a device (composer.placement.shareable): candidates, counts, picks
and words. Pure Python; `engine.place` and `plan.plan_on_host` call it for share items.

A share goes on a device bound to the host: a *partly shared* device already bound to it
that has the share free (best fit: the fewest free shares that cover it, so big gaps stay
for big shares), else a whole free device the host reaches, chosen in the same enclosure
order as whole devices (own switch, partly used enclosure, latency), which becomes shared on
the host. A partly shared device is reachable from its host alone and from no other (it is
bound already, so no latency ceiling applies to it); it is never taken whole.

Counting, per reach group as for whole devices: a group can serve a share when it reaches a
whole free device that matches, or when one of its hosts holds a partly shared device with
the share free; in the second case only those hosts may take it (`holding`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from composer.placement.constraints import EnclosureKey, choose_whole, item_candidates, meets_minima
from composer.placement.nearest import counted, label
from composer.placement.request import DeviceItem, DevicePick, Note, Placement, PlacementRequest
from composer.placement.shareable import free_shares, shares_per_device
from composer.placement.shared import Candidates, amounts, memoised
from composer.placement.snapshot import DeviceInfo, Snapshot

__all__ = [
    "BREAK_PENALTY",
    "ShareWant",
    "charged_gbps",
    "choose_shares",
    "hold",
    "holding",
    "share_note",
    "share_seen",
    "share_shortfall",
    "share_step",
    "share_wants",
    "shared_candidates",
    "shares_taken",
]

Shared = Mapping[str, tuple[DeviceInfo, ...]]  # host -> its partly shared devices
# Added to the host penalty per whole device a plan breaks into shares, as breaking into an
# untouched enclosure is (scoring.UNTOUCHED_PENALTY): a share fills a device already shared
# first, so that whole devices stay whole for whole-device requests.
BREAK_PENALTY = 8.0


@dataclass(frozen=True, slots=True)
class ShareWant:
    """A share item with its candidates (both memoised on the snapshot): `found` the whole
    free devices that match, per enclosure; `shared` the partly shared devices that match,
    per host they are bound to, fewest free shares first."""

    item: DeviceItem
    found: Candidates
    shared: Shared

    @property
    def share(self) -> int:
        return self.item.share or 0


def shared_candidates(
    snapshot: Snapshot,
    kind: str,
    model: str | None,
    minima: Mapping[str, float],
    blocked: frozenset[str],
) -> Shared:
    """The partly shared devices of one kind (and model) that meet the minima and the
    isolation, per host (worked out once per snapshot and key; callers must not change it)."""
    key = ("shared", kind, model, tuple(sorted(minima.items())), blocked)
    known = snapshot.memo.get(key)
    if known is not None:
        return cast("Shared", known)
    devices, enclosures = snapshot.devices, snapshot.enclosures

    def usable(device: DeviceInfo) -> bool:
        return (
            device.kind == kind
            and (model is None or device.model == model)
            and meets_minima(device, minima)
            and not (
                blocked
                and (
                    device.enclosure in blocked
                    or blocked.intersection(enclosures[device.enclosure].switches)
                )
            )
        )

    out = {}
    for host, ids in snapshot.shared_on.items():
        kept = tuple(d for d in (devices[i] for i in ids) if usable(d))
        if kept:
            out[host] = kept
    snapshot.memo[key] = out
    return out


def share_step(snapshot: Snapshot, want: ShareWant, label: str) -> tuple[str, int, int]:
    """The funnel step of a share item's partly shared candidates: those of its kind, then
    those that match and have the share free."""
    kind = want.item.kind
    total = sum(
        1 for ids in snapshot.shared_on.values() for i in ids if snapshot.devices[i].kind == kind
    )
    fitting = sum(1 for ds in want.shared.values() for d in ds if d.shares_free >= want.share)
    whole = shares_per_device(kind)
    return (f"{label}: partly shared, {want.share}/{whole} free", total, fitting)


def share_shortfall(want: ShareWant) -> tuple[str, Note] | None:
    """The rejection's message and nearest alternative when no device anywhere has the
    share free (no whole free device matches and no partly shared one has enough), or None."""
    if any(want.found.values()):
        return None
    most = max((ds[-1].shares_free for ds in want.shared.values()), default=0)
    if most >= want.share:
        return None
    item = want.item
    whole = shares_per_device(item.kind)
    one = counted(1, item.kind, item.model)[2:]
    message = f"No usable {one} has {want.share}/{whole} free; a {want.share}/{whole} share asked."
    if not most:
        return message, Note(f"No {one} is free or partly shared now; wait.")
    return message, Note(f"At most {most}/{whole} of one {one} is free; ask for that or wait.")


def share_wants(
    request: PlacementRequest,
    snapshot: Snapshot,
    blocked: frozenset[str],
    funnel: list[tuple[str, int, int]],
) -> list[ShareWant]:
    """The request's share items with their candidates: whole free devices (the same
    memoised sets whole items get) and partly shared ones, each filter in the funnel."""
    wants = []
    for item in request.items:
        if item.share is None:
            continue
        what = label(item.kind, item.model)
        found = item_candidates(snapshot, item.kind, item.model, item.minima, blocked, funnel, what)
        shared = shared_candidates(snapshot, item.kind, item.model, item.minima, blocked)
        want = ShareWant(item, found, shared)
        funnel.append(share_step(snapshot, want, what))
        wants.append(want)
    return wants


def _group_best(snapshot: Snapshot, shared: Shared) -> tuple[int, ...]:
    """Per reach group, the most free shares of one partly shared device its hosts hold."""
    best = [0] * len(snapshot.groups)
    for host, devices in shared.items():
        group = snapshot.host_group.get(host)
        if group is not None:
            best[group] = max(best[group], devices[-1].shares_free)
    return tuple(best)


def share_seen(snapshot: Snapshot, want: ShareWant) -> tuple[float, ...]:
    """Per reach group, the largest share it can serve: a whole device's worth when it
    reaches a whole free device that matches, else the most free on one partly shared
    device of its hosts."""
    whole_seen = amounts(snapshot, want.found, "count")[1]
    best = memoised(
        snapshot, "share best", (want.shared,), None, lambda: _group_best(snapshot, want.shared)
    )
    whole = float(shares_per_device(want.item.kind))
    return tuple(whole if w >= 1 else float(b) for w, b in zip(whole_seen, best, strict=True))


def holding(snapshot: Snapshot, want: ShareWant) -> dict[int, frozenset[str]]:
    """Per reach group, its hosts holding a partly shared device with the share free: in
    a group that reaches no whole free device, the only hosts that can take the share."""
    out: dict[int, set[str]] = {}
    for host, devices in want.shared.items():
        group = snapshot.host_group.get(host)
        if group is not None and devices[-1].shares_free >= want.share:
            out.setdefault(group, set()).add(host)
    return {group: frozenset(hosts) for group, hosts in out.items()}


def hold(
    snapshot: Snapshot,
    want: ShareWant,
    groups: set[int],
    only: dict[int, frozenset[str]],
    first: set[str],
) -> None:
    """Of the reach groups `groups` (those that can serve `want`), limit in `only` those
    that reach no whole free device that matches to their hosts holding a partly shared
    device with the share free; add every such host to `first` (planned first, so that a
    share fills a device already shared before a whole one is broken)."""
    whole = amounts(snapshot, want.found, "count")[1]
    holders = holding(snapshot, want)
    first.update(h for g in groups for h in holders.get(g, ()))
    for group in groups:
        if not whole[group]:
            hosts = holders.get(group, frozenset())
            only[group] = only.get(group, hosts) & hosts


def choose_shares(
    wants: Sequence[ShareWant],
    host_id: str,
    chosen: Sequence[DeviceInfo],
    near: Callable[[Candidates], tuple[Candidates, int]],
    keys_of: Callable[[Candidates], EnclosureKey],
    switches_of: Callable[[str], tuple[str, ...]],
    ceiling: int | None,
) -> list[tuple[DeviceInfo, int, int]] | str:
    """The device of each share on `host_id`, as (device, share, shares free before), or
    which constraint fails ("latency": no whole device within the ceiling; "share": the
    whole devices in reach all go to this plan's whole items). `chosen`: the whole devices
    this plan already takes; `near` cuts a candidate set to what the host reaches within
    the ceiling; `keys_of` ranks a candidate set's enclosures for the host."""
    taken = {d.id for d in chosen}
    left: dict[str, int] = {}  # shares left on the devices this plan takes shares of
    opened: list[DeviceInfo] = []  # whole devices this plan shares
    out = []
    for want in wants:
        share = want.share
        pool = [*want.shared.get(host_id, ())]
        pool += [d for d in opened if d.id in {x.id for x in want.found.get(d.enclosure, ())}]
        fitting = [d for d in pool if left.get(d.id, free_shares(d)) >= share]
        if fitting:
            device = min(fitting, key=lambda d: (left.get(d.id, free_shares(d)), d.name, d.id))
        else:
            part, count = near(want.found)
            if taken:
                part = {e: k for e, v in part.items() if (k := [d for d in v if d.id not in taken])}
            if not part:
                return "latency" if ceiling is not None and not count else "share"
            picked = choose_whole(1, part, keys_of(part), "none", switches_of)
            assert picked  # one device of a non-empty set always fits
            device = picked[0]
            opened.append(device)
            taken.add(device.id)
        before = left.get(device.id, free_shares(device))
        left[device.id] = before - share
        out.append((device, share, before))
    return out


def shares_taken(placement: Placement) -> dict[str, tuple[str, int]]:
    """The `shares` argument of `Snapshot.taking` for a plan: each device it holds shares of,
    with the plan's host and the sum of those shares (two share items of one request may
    land on one device; `taking` takes one entry per device)."""
    taken: dict[str, tuple[str, int]] = {}
    for pick in placement.devices:
        if pick.share is not None:
            held = taken.get(pick.device, (placement.host, 0))[1]
            taken[pick.device] = (placement.host, held + pick.share)
    return taken


def charged_gbps(pick: DevicePick) -> float:
    """What a pick charges the host's uplink: its path's bottleneck, and for a share that
    share of it (all of a device's shares together charge what the whole device does)."""
    if pick.share is None:
        return pick.bottleneck_gbps
    return pick.bottleneck_gbps * pick.share / shares_per_device(pick.kind)


def share_note(device: DeviceInfo, share: int, before: int) -> Note:
    """The explanation's sentence for one share: "A 250/1000 share of GPU gpu-3 (already
    shared on this host; 400/1000 were free)." What was free before is the operator's to
    read (it tells of other compositions on the host)."""
    whole = shares_per_device(device.kind)
    what = f"A {share}/{whole} share of {counted(1, device.kind, None)[2:]} {device.name}"
    if device.shared_host is not None:
        return Note(f"{what}, already shared on this host; {before}/{whole} were free.", f"{what}.")
    if before < whole:
        return Note(f"{what}, beside the share above.")
    return Note(f"{what}, a free device now shared on this host.")
