"""What decisions on one snapshot share: summaries of candidate sets, worked out once.

`constraints.item_candidates` memoises every filtered candidate set on the snapshot, so the
same request shape gets the very same dict back decision after decision. What the engine
derives from such a set does not depend on the request beyond that set: the amount each
reach group sees, the part of the set one reach group reaches, whether a group can meet
same switch or a spread. Recomputing those per decision was most of a decision's time
(hundreds of enclosures summed for every request), so they are memoised here, on
`Snapshot.memo`, keyed by the candidate set's identity. Each entry holds the set itself:
it stays alive, so its id cannot be reused by another object while the entry exists, and
the identity is checked on every hit anyway. `Snapshot.taking` builds a new snapshot with a
fresh memo, so nothing derived from an older inventory survives.

Only memoised candidate sets may be passed here (never a dict built for one decision, or
the memo would grow with every call); empty sets are computed directly, not memoised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, cast

from composer.placement.snapshot import DeviceInfo, Snapshot

__all__ = ["Candidates", "amounts", "group_part", "host_ranks", "memoised"]

Candidates = dict[str, list[DeviceInfo]]
T = TypeVar("T")


def memoised(
    snapshot: Snapshot, tag: str, anchors: Sequence[object], extra: object, compute: Callable[[], T]
) -> T:
    """`compute()` once per snapshot for the objects `anchors` (by identity) and `extra`."""
    key = (tag, tuple(map(id, anchors)), extra)
    entry = snapshot.memo.get(key)
    if entry is not None:
        # The memo holds entries of many shapes; this tag's entries are (anchors, value).
        kept, value = cast("tuple[tuple[object, ...], T]", entry)
        if len(kept) == 1 == len(anchors):  # the common case, without a generator
            if kept[0] is anchors[0]:
                return value
        elif all(a is b for a, b in zip(kept, anchors, strict=True)):
            return value
    value = compute()
    snapshot.memo[key] = (tuple(anchors), value)
    return value


def _one(device: DeviceInfo) -> int:
    return 1


def _gib(device: DeviceInfo) -> int:
    return device.free_gib


def _gb(device: DeviceInfo) -> int:
    return device.capacity_gb


SIZES: dict[str, Callable[[DeviceInfo], int]] = {"count": _one, "gib": _gib, "gb": _gb}


def amounts(snapshot: Snapshot, found: Candidates, unit: str) -> tuple[int, tuple[float, ...]]:
    """How much of `found` there is in all, and how much each reach group sees (in `unit`:
    "count" devices, "gib" free GiB or "gb" capacity)."""
    if not found:
        return 0, (0.0,) * len(snapshot.groups)
    return memoised(snapshot, "amounts", (found,), unit, lambda: _amounts(snapshot, found, unit))


def _amounts(snapshot: Snapshot, found: Candidates, unit: str) -> tuple[int, tuple[float, ...]]:
    size = SIZES[unit]
    total = 0
    seen = [0.0] * len(snapshot.groups)
    enclosure_groups = snapshot.enclosure_groups
    for enclosure, devices in found.items():
        amount = len(devices) if unit == "count" else sum(size(d) for d in devices)
        total += amount
        for group in enclosure_groups.get(enclosure, ()):
            seen[group] += amount
    return total, tuple(seen)


def group_part(snapshot: Snapshot, found: Candidates, group: int) -> tuple[Candidates, int]:
    """The part of `found` that reach group `group` reaches (in `found`'s order), and how
    many devices it holds: every host of the group reaches exactly those enclosures."""
    if not found:
        return {}, 0
    return memoised(snapshot, "part", (found,), group, lambda: _part(snapshot, found, group))


def _part(snapshot: Snapshot, found: Candidates, group: int) -> tuple[Candidates, int]:
    members = snapshot.groups[group]
    part = {e: v for e, v in found.items() if e in members}
    return part, sum(len(v) for v in part.values())


def host_ranks(snapshot: Snapshot, host_id: str) -> dict[str, tuple[int, int]]:
    """Per enclosure the host reaches: (0 when it hangs off one of the host's own switches
    else 1, the path's latency in ns): the host-only part of `scoring.enclosure_order`."""
    return memoised(snapshot, "ranks", (), host_id, lambda: _ranks(snapshot, host_id))


def _ranks(snapshot: Snapshot, host_id: str) -> dict[str, tuple[int, int]]:
    own = set(snapshot.hosts[host_id].switches)
    enclosures = snapshot.enclosures
    return {
        e: (0 if own.intersection(enclosures[e].switches) else 1, path.latency_ns)
        for e, path in snapshot.reach.get(host_id, {}).items()
    }
