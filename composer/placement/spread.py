"""Same switch and the spread policies, per reach group and latency aside: how much of each
item fits behind each switch a group sees, and across how many enclosures or switches it
is free. Pure Python.

`engine.place` cuts reach groups with `group_meets`, one check at a time (same switch, then
the spread), so that a rejection names the check that failed; `plan.plan_on_host` picks its
switch from the policies' per-switch tallies, and `nearest` words the alternative from the
same tallies, so the three agree on what fits. Under same switch a spread is counted behind
that one switch: one device per enclosure for "enclosure", one device in all for "switch".
The tallies and the checks themselves are the policies' (`composer.placement.policies`):
this module picks the policy for a check and memoises its answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import composer.placement.policies as policies
from composer.placement.policies import fits
from composer.placement.request import DeviceItem, PlacementRequest
from composer.placement.shared import Candidates, memoised
from composer.placement.snapshot import Snapshot

__all__ = [
    "fits",
    "group_meets",
    "policy_checks",
]

Items = Sequence[tuple[DeviceItem, Candidates]]


def policy_checks(request: PlacementRequest) -> tuple[str, ...]:
    """The group checks `request` needs, in the order they cut: those of the policies its
    flags switch on ("switch": same switch), then its selected policy's ("domain": a
    spread). Each is a policy of the registry (`policies.checking`)."""
    return tuple(p.check for p in policies.enabled(request) if p.check is not None)


def group_meets(
    check: str, request: PlacementRequest, snapshot: Snapshot, items: Items, group: int
) -> bool:
    """Whether reach group `group` passes `check`, the cut of one of the request's policies
    ("switch", one switch behind which every item fits; "domain", enough distinct
    enclosures or switches for each item, behind one switch under same switch). It depends
    only on the (memoised) candidate sets and the request's shape, so it is worked out once
    per snapshot."""
    return memoised(
        snapshot,
        "group policy",
        tuple(found for _, found in items),
        (check, tuple(item.count for item, _ in items), request.same_switch, request.policy, group),
        lambda: policies.checking(request, check).group_fits(
            request, snapshot, items, snapshot.groups[group]
        ),
    )
