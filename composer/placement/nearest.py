"""The nearest feasible alternative of a rejection, as a sentence for each audience: the
operator's names the switch or host it means, the tenant's does not. Pure Python."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from composer.placement.request import DeviceItem, Note, PlacementRequest
from composer.placement.snapshot import DeviceInfo, Snapshot

__all__ = ["Wanted", "counted", "label", "nearest_host", "nearest_policy", "nearest_reach"]

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


@dataclass(frozen=True, slots=True)
class Wanted:
    """One thing a request needs within reach of its host: `needed` (in `unit`: "count"
    devices, "gib" free GiB, "gb" capacity) of the candidate set `found`, of `kind` (and
    `model`)."""

    kind: str
    model: str | None
    found: Candidates
    needed: float
    unit: str

    def amount(self, value: float) -> str:
        """`value` of it in words: "1 GPU", "2 H100 GPUs", "256 GiB of CXL memory"."""
        if self.unit == "gib":
            return f"{value:,.0f} GiB of CXL memory"
        if self.unit == "gb":
            return f"{value / 1000:,.2f}".rstrip("0").rstrip(".") + " TB of NVMe"
        return counted(int(value), self.kind, self.model)

    @property
    def what(self) -> str:
        """What was asked, in words: "1 GPU", "256 GiB of CXL memory"."""
        return self.amount(self.needed)

    @property
    def noun(self) -> str:
        """The kind alone: "GPUs", "CXL memory"."""
        if self.unit == "gib":
            return "CXL memory"
        if self.unit == "gb":
            return "NVMe storage"
        return label(self.kind, self.model)


_SINGULAR = {"gpu": "GPU", "nvme": "NVMe drive", "nic": "NIC", "dpu": "DPU", "fpga": "FPGA"}


def counted(count: int, kind: str, model: str | None) -> str:
    """ "1 GPU", "2 H100 GPUs", "3 NICs"."""
    noun = _SINGULAR.get(kind, kind)
    if count != 1:
        noun += "s"
    return f"{count} {model} {noun}" if model else f"{count} {noun}"


def nearest_reach(
    snapshot: Snapshot,
    wanted: Sequence[Wanted],
    index: int,
    seen: Sequence[float],
    usable: Set[int],
    reaching_the_rest: Set[int],
) -> Note:
    """The nearest alternative when no host reaches `wanted[index]`: `seen` is how much of
    it each reach group reaches, `usable` the groups with a host that fits, and
    `reaching_the_rest` those that also reach everything listed before it."""
    want = wanted[index]

    def best_of(groups: Set[int]) -> tuple[float, int | None]:
        best, where = 0.0, None
        for group in sorted(groups):
            if seen[group] > best:
                best, where = seen[group], group
        return best, where

    def host_of(group: int | None) -> str:
        return snapshot.hosts[snapshot.group_hosts[group][0]].name if group is not None else ""

    alone, alone_group = best_of(usable)
    if alone < want.needed:
        if not alone:
            return Note(f"No host reaches any free {want.noun} now; ask without it or wait.")
        most = f"A host reaches at most {want.amount(alone)}"
        ask = f"ask for {want.amount(alone)} or wait."
        return Note(f"{most} ({host_of(alone_group)}); {ask}", f"{most}; {ask}")
    rest = " and ".join(w.what for w in wanted[:index])
    together, group = best_of(reaching_the_rest & usable)
    most = (
        f"The hosts that reach {rest} reach at most {want.amount(together)}"
        if together
        else f"No host that reaches {rest} reaches any free {want.noun}"
    )
    ask = f"ask for {want.amount(together)} or less of the rest, or wait."
    if not together:
        ask = "ask for less of the rest, or wait."
    named = f" ({host_of(group)})" if group is not None else ""
    return Note(f"{most}{named}; {ask}", f"{most}; {ask}")


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
