"""Same switch and the spread policies, per reach group and latency aside: how much of each
item fits behind each switch a group sees, and across how many enclosures or switches it
is free. Pure Python.

`engine.place` cuts reach groups with `group_meets`, one check at a time (same switch, then
the spread), so that a rejection names the check that failed; `plan.plan_on_host` picks its
switch from `behind_switches`, and `nearest` words the alternative from the same tallies,
so the three agree on what fits. Under same switch a spread is counted behind that one
switch: one device per enclosure for "enclosure", one device in all for "switch".
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.shared import Candidates, memoised
from composer.placement.snapshot import Snapshot

__all__ = [
    "SPREADS",
    "behind_switches",
    "fits",
    "group_meets",
    "policy_checks",
    "spread_counts",
]

SPREADS = {"enclosure": "enclosures", "switch": "switches"}  # policy -> what it spreads over
Items = Sequence[tuple[DeviceItem, Candidates]]


def policy_checks(request: PlacementRequest) -> tuple[str, ...]:
    """The group checks `request` needs, in the order they cut: "switch" (same switch) and
    "domain" (a spread policy)."""
    return tuple(
        check
        for check, needed in (
            ("switch", request.same_switch),
            ("domain", request.policy in SPREADS),
        )
        if needed
    )


def behind_switches(
    snapshot: Snapshot, items: Items, members: Set[str] | None, policy: str
) -> dict[str, list[int]]:
    """Per switch, how many of each item fit behind it among the enclosures `members` (all
    of `items`' when None): devices, or under a spread policy one per enclosure
    ("enclosure") or one in all ("switch")."""
    enclosures = snapshot.enclosures
    totals: dict[str, list[int]] = {}
    for index, (_, found) in enumerate(items):
        for enclosure, devices in found.items():
            if members is not None and enclosure not in members:
                continue
            amount = len(devices) if policy not in SPREADS else 1
            for switch in enclosures[enclosure].switches:
                row = totals.setdefault(switch, [0] * len(items))
                row[index] = 1 if policy == "switch" else row[index] + amount
    return totals


def spread_counts(snapshot: Snapshot, items: Items, members: Set[str], policy: str) -> list[int]:
    """Per item, across how many distinct enclosures ("enclosure") or switches ("switch") of
    `members` it is free (an enclosure dual-homed to two switches counts as behind both)."""
    enclosures = snapshot.enclosures
    counts = []
    for _, found in items:
        seen = [e for e in found if e in members]
        if policy == "enclosure":
            counts.append(len(seen))
        else:
            counts.append(len({s for e in seen for s in enclosures[e].switches}))
    return counts


def fits(counts: Sequence[int], items: Items) -> bool:
    """Whether `counts` (one per item) cover every item's count."""
    return all(c >= item.count for c, (item, _) in zip(counts, items, strict=True))


def group_meets(
    check: str, request: PlacementRequest, snapshot: Snapshot, items: Items, group: int
) -> bool:
    """Whether reach group `group` passes `check`: "switch", one switch behind which every
    item fits; "domain", enough distinct enclosures or switches for each item (behind one
    switch, under same switch). It depends only on the (memoised) candidate sets and the
    request's shape, so it is worked out once per snapshot."""
    return memoised(
        snapshot,
        "group policy",
        tuple(found for _, found in items),
        (check, tuple(item.count for item, _ in items), request.same_switch, request.policy, group),
        lambda: _group_meets(check, request, snapshot, items, group),
    )


def _group_meets(
    check: str, request: PlacementRequest, snapshot: Snapshot, items: Items, group: int
) -> bool:
    members = snapshot.groups[group]
    if check == "switch":
        per_switch = behind_switches(snapshot, items, members, "none")
        return any(fits(counts, items) for counts in per_switch.values())
    if request.same_switch:
        per_switch = behind_switches(snapshot, items, members, request.policy)
        return any(fits(counts, items) for counts in per_switch.values())
    return fits(spread_counts(snapshot, items, members, request.policy), items)
