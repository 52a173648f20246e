"""The nearest feasible alternative of a rejection, as a sentence for each audience: the
operator's names the switch or host it means, the tenant's does not. Pure Python."""

from __future__ import annotations

from collections.abc import Sequence

from composer.placement.request import DeviceItem, Note, PlacementRequest
from composer.placement.snapshot import DeviceInfo, Snapshot

__all__ = ["label", "nearest_host", "nearest_policy", "nearest_reach"]

Candidates = dict[str, list[DeviceInfo]]


def label(kind: str, model: str | None) -> str:
    """How a kind (and model) of device is named in sentences: "H100 GPUs"."""
    name = {"gpu": "GPUs", "cxl_memory": "CXL memory", "nvme": "NVMe drives"}.get(kind, kind)
    return f"{model} {name}" if model else name


def nearest_host(request: PlacementRequest, snapshot: Snapshot) -> Note:
    best = max(
        snapshot.hosts.values(),
        key=lambda h: (h.cores_free, h.memory_gib_free, h.name),
        default=None,
    )
    if best is None:
        return Note("No host is usable; wait for one to come back.")
    has = (
        f"has {best.cores_free} cores and {best.memory_gib_free} GiB free; ask for that much "
        "or wait."
    )
    return Note(f"The largest free host, {best.name}, {has}", f"The largest free host {has}")


def nearest_reach(
    request: PlacementRequest, snapshot: Snapshot, items: Sequence[tuple[DeviceItem, Candidates]]
) -> Note:
    if not items:
        return Note("Memory or storage is free but not reachable together from one host; ask less.")
    item, found = items[0]
    best, best_group = -1, 0
    for group, members in enumerate(snapshot.groups):
        seen = sum(len(v) for e, v in found.items() if e in members)
        if seen > best:
            best, best_group = seen, group
    host = snapshot.hosts[snapshot.group_hosts[best_group][0]]
    what = f"{best} of {item.count} {label(item.kind, item.model)} are reachable from one host"
    return Note(
        f"{what} ({host.name}); ask for {best} or wait.", f"{what}; ask for {best} or wait."
    )


def nearest_policy(
    request: PlacementRequest,
    snapshot: Snapshot,
    items: Sequence[tuple[DeviceItem, Candidates]],
    reason: str,
) -> Note:
    if reason == "switch" and items:
        item, found = items[0]
        per_switch: dict[str, int] = {}
        for enclosure, devices in found.items():
            for switch in snapshot.enclosures[enclosure].switches:
                per_switch[switch] = per_switch.get(switch, 0) + len(devices)
        if per_switch:
            switch = max(per_switch, key=lambda s: (per_switch[s], s))
            fit = f"{per_switch[switch]} of {item.count} {label(item.kind, item.model)} fit"
            relax = "relax 'same switch' or wait."
            return Note(
                f"{fit} behind switch {snapshot.switch_name(switch)}; {relax}",
                f"{fit} behind one switch; {relax}",
            )
    if reason == "domain" and items:
        item, found = items[0]
        domains = "enclosures" if request.policy == "enclosure" else "switches"
        count = (
            len(found)
            if request.policy == "enclosure"
            else len({s for e in found for s in snapshot.enclosures[e].switches})
        )
        return Note(
            f"{label(item.kind, item.model)} are free in only {count} {domains} "
            f"a host reaches; {item.count} asked. Relax 'spread across {domains}' or wait."
        )
    if reason == "latency":
        return Note(
            f"Enough devices are free but not within {request.max_latency_ns} ns of one "
            "host; raise the latency ceiling or wait."
        )
    if reason == "slice":
        return Note(
            "The CXL memory in reach already holds a slice for each candidate host, and a "
            "fabric manager keeps one slice of a device per host; ask for another host or "
            "less memory, or wait."
        )
    return Note("Every candidate host's uplink would be oversubscribed; ask for fewer devices.")
