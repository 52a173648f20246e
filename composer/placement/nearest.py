"""The nearest feasible alternative of a rejection, as a sentence for each audience: the
operator's names the switch or host it means, the tenant's does not. Pure Python.

What a policy is called, what it spreads over and how to relax it are the policy's words
(`composer.placement.policies`); its tallies are the ones the engine cut with.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from functools import partial

import composer.placement.policies as policies
from composer.placement.request import DeviceItem, Note, PlacementRequest
from composer.placement.shareable import shares_per_device
from composer.placement.shared import memoised
from composer.placement.snapshot import DeviceInfo, Snapshot
from fabric.kinds import find, plural
from fabric.latency import ESTIMATED_HOP_LATENCY_NS

__all__ = [
    "Wanted",
    "counted",
    "label",
    "nearest_group_policy",
    "nearest_host",
    "nearest_policy",
    "nearest_reach",
    "policy_message",
    "share_words",
]

Candidates = dict[str, list[DeviceInfo]]
Items = Sequence[tuple[DeviceItem, Candidates]]


def label(kind: str, model: str | None) -> str:
    """How a kind (and model) of device is named in sentences: "H100 GPUs"."""
    name = plural(kind)
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
    devices, "gib" free GiB, "gb" capacity, "share" thousandths of one device) of the
    candidate set `found`, of `kind` (and `model`)."""

    kind: str
    model: str | None
    found: Candidates
    needed: float
    unit: str

    def amount(self, value: float) -> str:
        """`value` of it in words: "1 GPU", "2 H100 GPUs", "256 GiB of CXL memory"."""
        if self.unit == "gib":
            return f"{value:,.0f} GiB of {self._amount_of}"
        if self.unit == "gb":
            return f"{value / 1000:,.2f}".rstrip("0").rstrip(".") + f" TB of {self._amount_of}"
        if self.unit == "share":
            return share_words(int(value), self.kind, self.model)
        return counted(int(value), self.kind, self.model)

    @property
    def what(self) -> str:
        """What was asked, in words: "1 GPU", "256 GiB of CXL memory"."""
        return self.amount(self.needed)

    @property
    def noun(self) -> str:
        """The kind alone: "GPUs", "CXL memory"."""
        if self.unit == "gib":
            return self._amount_of
        if self.unit == "gb":
            return f"{self._amount_of} storage"
        return label(self.kind, self.model)

    @property
    def _amount_of(self) -> str:
        """How the kind's capacity is named after a figure: "CXL memory", "NVMe"."""
        declared = find(self.kind)
        return declared.amount_of if declared else self.kind


def counted(count: int, kind: str, model: str | None) -> str:
    """ "1 GPU", "2 H100 GPUs", "3 NICs"."""
    declared = find(kind)
    if declared is None:
        noun = kind if count == 1 else f"{kind}s"
    else:
        noun = declared.label if count == 1 else declared.plural
    return f"{count} {model} {noun}" if model else f"{count} {noun}"


def share_words(share: int, kind: str, model: str | None) -> str:
    """ "a 250/1000 share of one H100 GPU"."""
    return f"a {share}/{shares_per_device(kind)} share of one {counted(1, kind, model)[2:]}"


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


def _asked(items: Items) -> str:
    """What the items ask, in words: "4 H100 GPUs and 2 NICs"."""
    return " and ".join(counted(item.count, item.kind, item.model) for item, _ in items)


def _spread_words(request: PlacementRequest) -> tuple[str, str]:
    """How the request's policy is said ("spread across enclosures") and how to relax it:
    the policy, and same switch too when it counts the policy behind one switch."""
    policy = policies.selected(request)
    words = policy.words or "spread across enclosures"
    relax = policy.relax or f"'{words}'"
    return words, f"{relax} or {policies.SAME_SWITCH.relax}," if request.same_switch else relax


def policy_message(request: PlacementRequest, items: Items, check: str) -> str:
    """Why no reach group passes `check` ("switch": same switch; "domain": the spread), in
    the words of the policy that makes it."""
    policy = policies.checking(request, check)
    behind = f" {policies.SAME_SWITCH.words}" if request.same_switch and check != "switch" else ""
    return f"No host reaches {_asked(items)} {policy.words}{behind}."


def nearest_group_policy(
    request: PlacementRequest,
    snapshot: Snapshot,
    items: Items,
    check: str,
    groups: Set[int],
) -> Note:
    """The nearest alternative when no reach group passes `check`: of the reach groups
    `groups` (those with a usable host that reach enough of everything), the most of the
    first item that falls short behind one switch (same switch) or across enclosures or
    switches (a spread); when each item fits alone, that they never fit together."""
    tallies: list[tuple[list[int], str | None]] = []
    policy = policies.checking(request, check)
    for group in sorted(groups):
        members = snapshot.groups[group]
        if check == "switch" or request.same_switch:
            # The tallies depend only on the (memoised) candidate sets: once per snapshot.
            per_switch = memoised(
                snapshot,
                "switch tallies",
                tuple(found for _, found in items),
                (policy.name, group),
                partial(policy.per_switch, snapshot, items, members),
            )
            tallies += [(counts, s) for s, counts in per_switch.items()]
        else:
            tallies.append((policy.spread_counts(snapshot, items, members), None))
    for index, (item, _) in enumerate(items):
        most, where = max(((c[index], s or "") for c, s in tallies), default=(0, ""))
        if most >= item.count:
            continue
        what = label(item.kind, item.model)
        if check == "switch":
            fit = f"{most} of {item.count} {what} fit"
            relax = f"relax {policy.relax} or wait."
            return Note(
                f"{fit} behind switch {snapshot.switch_name(where)}; {relax}",
                f"{fit} behind one switch; {relax}",
            )
        _, relax = _spread_words(request)
        domains = policy.domains or "enclosures"
        if most == 1:
            domains = policy.one_domain or domains
        behind = f" {policies.SAME_SWITCH.words}" if request.same_switch else ""
        return Note(
            f"{what} are free in at most {most} {domains}{behind} a host reaches; "
            f"{item.count} asked. Relax {relax} or wait."
        )
    if check == "switch":
        return Note(
            f"No switch a host reaches holds {_asked(items)} together; relax {policy.relax} or "
            "wait."
        )
    words, relax = _spread_words(request)
    behind = f" {policies.SAME_SWITCH.words}" if request.same_switch else ""
    return Note(f"No host reaches {_asked(items)} together {words}{behind}; relax {relax} or wait.")


def _estimated(snapshot: Snapshot) -> str:
    """Said after a latency ceiling when some paths' latency is estimated: the fabric
    manager gives none for some links, and each such hop counts a stated figure."""
    if not any(r.estimated_hops for reach in snapshot.reach.values() for r in reach.values()):
        return ""
    return (
        " (latency estimated from hop counts where the fabric manager reports none: "
        f"{ESTIMATED_HOP_LATENCY_NS} ns a hop)"
    )


def nearest_policy(
    request: PlacementRequest,
    snapshot: Snapshot,
    items: Items,
    reason: str,
) -> Note:
    """The nearest alternative when every host planned fails `reason`. The reach groups
    met same switch and the spread already (latency aside), so a host missing either
    misses it under the latency ceiling."""
    ceiling = request.max_latency_ns
    if reason in ("switch", "domain") and items:
        if reason == "switch":
            same = policies.SAME_SWITCH
            what, relax = f"{_asked(items)} fit {same.words}", same.relax
        else:
            words, relax = _spread_words(request)
            what = f"{_asked(items)} fit {words}"
            relax = relax.rstrip(",")
        if ceiling is not None:
            return Note(
                f"{what}, but not within {ceiling} ns of one host{_estimated(snapshot)}; "
                f"raise the latency ceiling or relax {relax}, or wait."
            )
        return Note(f"{policy_message(request, items, reason)[:-1]}; relax {relax} or wait.")
    if reason == "latency":
        return Note(
            f"Enough devices are free but not within {request.max_latency_ns} ns of one "
            f"host{_estimated(snapshot)}; raise the latency ceiling or wait."
        )
    if reason == "slice":
        return Note(
            "The CXL memory in reach already holds a slice for each candidate host, and a "
            "fabric manager keeps one slice of a device per host; ask for another host or "
            "less memory, or wait."
        )
    if reason == "share":
        return Note(
            "The hosts that reach the devices asked have no device left for the shares "
            "beside the whole devices; ask for fewer devices or a smaller share, or wait."
        )
    return Note("Every candidate host's uplink would be oversubscribed; ask for fewer devices.")
