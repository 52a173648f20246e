"""The default policy's host ranking: how much a placement fragments the GPUs it leaves
and how many it strands without cores. Pure Python.

Spreading compositions across hosts (the most free cores first) uses up the cores next to
GPUs and strands them: on the Alibaba GPU trace the engine then left GPUs idle that a
packing policy fills. So by default a host is ranked by what taking the request there does
to the fabric's ability to take the requests still to come (`Snapshot.workload`, the
expected shapes with their weights; none known: the request being placed):

* fragmentation (FGD, Weng et al., USENIX ATC'23): for each expected shape, the free GPU
  capacity a host's reach can no longer give it: the free part of partly shared GPUs too
  small for the shape's share when the shape fits, all of the free GPUs when it does not
  (too few cores, too few GPUs); the expected fragmentation is the weighted sum. Whole free
  GPUs of a reach group count for the group's host with the most free cores, partly shared
  ones for the host they are bound to.
* stranded GPUs: the free GPU capacity of the host's reach group that its free cores can no
  longer feed at the workload's cores per GPU (`cores_per_part`), if requests of the usual
  ratio keep coming. Fragmentation looks one request ahead and sees a host's cores run out
  for a shape only once they have; this term sees it coming.

The penalty is the increase of both, in GPUs, made non-negative by adding what the request
itself takes (the most either can fall by), so every host of a request shifts alike. The
measure is computed only for the hosts a decision ranks and memoised per host state (the
same states recur across decisions and hosts): `Measure.fragment`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import composer.placement.policies as policies
from composer.placement.request import Note, PlacementRequest
from composer.placement.snapshot import HostInfo, Snapshot
from composer.placement.workload import WorkloadShape
from fabric.kinds import balanced, kind

__all__ = [
    "FRAGMENT_WEIGHT",
    "STRAND_WEIGHT",
    "applies",
    "host_penalty",
    "ranked",
    "words",
]

FRAGMENT_WEIGHT = 10.0  # host penalty per GPU fragmented or stranded by the placement
STRAND_WEIGHT = 1.0  # stranded GPU capacity against fragmented, in the same unit
RANKED_PER_GROUP = 4  # hosts of one reach group ranked per decision (snuggest first)
MAX_HEADS = 64  # counting the hosts holding partly shared GPUs too
_STATES = 200_000  # memoised host states per workload before the memo starts again


def applies(request: PlacementRequest) -> bool:
    """Whether the request is ranked by this measure: its policy says so in the registry
    (`Policy.ranks_by_fragmentation`; the default, "none")."""
    return policies.selected(request).ranks_by_fragmentation


def parts() -> int:
    """Shares in one GPU (the balanced kinds'): the unit of the measure."""
    return max((kind(k).shares for k in balanced()), default=1) or 1


# What the measure reads of a host: its free cores, the most free cores of its reach group
# (whole GPUs serve any of the group's hosts), the group's whole free GPUs and the free
# shares of the partly shared GPUs bound to the host. A plain tuple: it is hashed often.
State = tuple[int, int, int, tuple[int, ...]]


class Measure:
    """The expected shapes, compiled: per shape its cores, GPUs, the shares it needs of each
    GPU, and its weight; `cores_per_part` the cores a share of GPU comes with."""

    def __init__(self, shapes: tuple[WorkloadShape, ...], full: int, cores_per_part: float):
        total = sum(s.weight for s in shapes) or 1.0
        self.source, self.full = shapes, full
        self.shapes = tuple(
            (s.cores, s.gpus, s.share if s.share else full, s.weight / total) for s in shapes
        )
        gpu = [s for s in shapes if s.gpus]
        asked = sum(s.gpus * (s.share or full) * s.weight for s in gpu)
        self.cores_per_part = (
            sum(s.cores * s.weight for s in gpu) / asked if asked else cores_per_part
        )
        self.memo: dict[State, float] = {}
        # Effects on hosts without partly shared GPUs, by what they read (Ranker._effect).
        self.plain: dict[tuple[float, ...], Effect] = {}

    def fragment(self, state: State) -> float:
        """The expected GPU capacity (in shares) that the expected shapes cannot use."""
        found = self.memo.get(state)
        if found is not None:
            return found
        cores, group_cores, whole_free, partial = state
        full = self.full
        shared = sum(partial)
        total = whole_free * full + shared
        value = 0.0
        for need_cores, gpus, need, weight in self.shapes:
            if not gpus:
                value += weight * total  # a shape without GPUs leaves all of them free
                continue
            near = partial if cores >= need_cores else ()
            whole = whole_free if group_cores >= need_cores else 0
            if whole + sum(1 for p in near if p >= need) < gpus:
                value += weight * total
                continue
            lost = (whole_free - whole) * full + (shared if not near else 0)
            value += weight * (lost + sum(p for p in near if p < need))
        if len(self.memo) >= _STATES:
            self.memo.clear()
        self.memo[state] = value
        return value

    def stranded(self, gpu_parts: int, cores: int) -> float:
        """GPU shares that `cores` free cores cannot feed at the workload's ratio."""
        if not self.cores_per_part:
            return 0.0
        return max(0.0, gpu_parts - cores / self.cores_per_part)


_compiled: dict[object, Measure] = {}  # by workload (its id while it is kept alive) or shape


def measure(request: PlacementRequest, snapshot: Snapshot) -> Measure:
    """The snapshot's workload compiled, kept for the next snapshots with that very workload
    (carried from one snapshot to the next), so the memo of host states lives across
    decisions; none known: the request itself, at the fabric's cores per GPU."""
    full = parts()
    if snapshot.workload:
        key: object = id(snapshot.workload)
        found = _compiled.get(key)
        if found is None or found.source is not snapshot.workload:
            found = _keep(key, Measure(snapshot.workload, full, 0.0))
        return found
    shape = _shape(request, full)
    ratio = snapshot.cores_per_gpu / full
    key = (shape.cores, shape.gpus, shape.share, ratio)
    return _compiled.get(key) or _keep(key, Measure((shape,), full, ratio))


def _keep(key: object, made: Measure) -> Measure:
    if len(_compiled) >= 64:
        _compiled.clear()
    _compiled[key] = made
    return made


def _shape(request: PlacementRequest, full: int) -> WorkloadShape:
    gpus = [i for i in request.items if i.kind in balanced()]
    share = next((i.share for i in gpus if i.share), None)
    return WorkloadShape(request.cores, sum(i.count for i in gpus), share)


@dataclass(frozen=True, slots=True)
class Effect:
    """What placing the request on a host does: fragmentation and stranded GPU capacity
    before and after (shares), and the penalty it earns."""

    fragment: float
    fragment_after: float
    stranded: float
    stranded_after: float
    penalty: float


class Ranker:
    """One decision's measure: the request's GPUs and the compiled workload, worked out
    once, then `effect` per host ranked (kept: the plan's explanation reads it again)."""

    def __init__(self, request: PlacementRequest, snapshot: Snapshot):
        self.request, self.snapshot = request, snapshot
        self.measure = measure(request, snapshot)
        self.gpu_kinds = balanced()
        self.effects: dict[str, Effect] = {}
        self.whole, self.share = 0, 0
        for item in request.items:
            if item.kind in self.gpu_kinds:
                if item.share:
                    self.share = item.share
                else:
                    self.whole += item.count

    def partial(self, host_id: str) -> tuple[int, ...]:
        """Free shares of the partly shared GPUs bound to the host, fewest first."""
        on = self.snapshot.shared_on.get(host_id)
        if not on:
            return ()
        devices, kinds = self.snapshot.devices, self.gpu_kinds
        return tuple(devices[d].shares_free for d in on if devices[d].kind in kinds)

    def effect(self, host: HostInfo) -> Effect:
        """The measure's verdict on building the request on `host`."""
        found = self.effects.get(host.id)
        if found is None:
            found = self.effects[host.id] = self._effect(host)
        return found

    def _effect(self, host: HostInfo) -> Effect:
        snapshot, request, m = self.snapshot, self.request, self.measure
        share = self.share
        group = snapshot.host_group[host.id]
        others = _others_most(snapshot.group_cores_sorted[group], host.cores_free)
        whole_free = snapshot.group_gpus[group]
        partial = self.partial(host.id)
        left = host.cores_free - request.cores
        if not partial and not share:
            # A host without partly shared GPUs, for whole GPUs: the verdict depends on the
            # group's state only (and the weights), and the same states recur (hosts,
            # decisions): memoised.
            key = (
                request.cores,
                self.whole,
                max(others, host.cores_free),
                max(others, left),
                whole_free,
                snapshot.group_cores[group],
                snapshot.group_shares[group],
                FRAGMENT_WEIGHT,
                STRAND_WEIGHT,
            )
            found = m.plain.get(key)
            if found is None:
                found = m.plain[key] = self._measured(host, others, whole_free, (), left)
                if len(m.plain) >= _STATES:
                    m.plain.clear()
            return found
        return self._measured(host, others, whole_free, partial, left)

    def _measured(
        self, host: HostInfo, others: int, whole_free: int, partial: tuple[int, ...], left: int
    ) -> Effect:
        snapshot, request, m = self.snapshot, self.request, self.measure
        full, share = m.full, self.share
        group = snapshot.host_group[host.id]
        taken = self.whole * full
        after_partial, after_whole = partial, whole_free - self.whole
        if share:
            taken += share
            fits = [i for i, p in enumerate(partial) if p >= share]
            if fits:
                i = fits[0]  # the fullest that fits (`partial` is fewest free first)
                rest = partial[i] - share
                after_partial = tuple(
                    sorted(partial[:i] + partial[i + 1 :] + ((rest,) if rest else ()))
                )
            else:
                after_whole -= 1
                after_partial = tuple(sorted((*partial, full - share)))
        # The host's own cores matter only for partly shared GPUs bound to it: keyed 0
        # without, so that the memo serves every such host alike.
        fragment = m.fragment(
            (host.cores_free if partial else 0, max(others, host.cores_free), whole_free, partial)
        )
        fragment_after = m.fragment(
            (left if after_partial else 0, max(others, left), max(0, after_whole), after_partial)
        )
        # The group's free GPU capacity: its whole free GPUs and the free shares of those
        # partly shared on any of its hosts (not only this one): all of it wants cores.
        group_parts = whole_free * full + snapshot.group_shares[group]
        cores = snapshot.group_cores[group]
        stranded = m.stranded(group_parts, cores)
        stranded_after = m.stranded(group_parts - taken, cores - request.cores)
        rise = fragment_after - fragment + STRAND_WEIGHT * (stranded_after - stranded)
        penalty = FRAGMENT_WEIGHT * max(0.0, rise + (1 + STRAND_WEIGHT) * taken) / full
        return Effect(fragment, fragment_after, stranded, stranded_after, round(penalty, 6))


_last: list[Ranker] = []  # the decision's ranker (`ranked`): its plans' scores read it again


def ranker(request: PlacementRequest, snapshot: Snapshot) -> Ranker:
    """The ranker of the decision under way when it is for these very objects (a decision
    ranks its hosts, then scores and explains its plans, on the same request and snapshot,
    neither of which changes), else a new one. `ranked` starts a decision's afresh and
    `forget` drops it when the decision ends, so that it keeps no snapshot alive."""
    kept = _last[0] if _last else None
    if kept is not None and kept.request is request and kept.snapshot is snapshot:
        return kept
    return Ranker(request, snapshot)


def forget() -> None:
    """The decision is over: drop its ranker (and the snapshot it holds)."""
    _last.clear()


def effect(request: PlacementRequest, snapshot: Snapshot, host: HostInfo) -> Effect:
    """The measure's verdict on building `request` on `host`."""
    return ranker(request, snapshot).effect(host)


def _others_most(by_cores: tuple[int, ...], cores: int) -> int:
    """The most free cores among a reach group's other hosts (`by_cores` sorted; the host
    itself has `cores`): whole GPUs of the group serve whichever host has the cores."""
    if not by_cores:
        return -1
    if by_cores[-1] != cores:
        return by_cores[-1]
    return by_cores[-2] if len(by_cores) > 1 else -1


def host_penalty(request: PlacementRequest, snapshot: Snapshot, host: HostInfo) -> float:
    """The default policy's penalty for building on `host` (lower is better)."""
    return effect(request, snapshot, host).penalty


def ranked(
    request: PlacementRequest,
    snapshot: Snapshot,
    groups: Iterable[tuple[int, list[str]]],
    extra: dict[str, float],
) -> list[tuple[float, int, str, str]]:
    """The hosts measured, best first, as (penalty, cores free, name, id), `extra` added to
    some (the tenant's own hosts): the first `RANKED_PER_GROUP` usable hosts of each group
    (snuggest core fit first), measured where they can differ from the group's first.
    Ties: the snuggest core fit, then by name, so equal hosts fill one after the other
    rather than all a little."""
    hosts = snapshot.hosts
    measured = Ranker(request, snapshot)
    _last[:] = [measured]
    members = dict(groups)

    def entry(host_id: str) -> tuple[float, int, str, str]:
        host = hosts[host_id]
        penalty = measured.effect(host).penalty + extra.get(host_id, 0.0)
        return (penalty, host.cores_free, host.name, host_id)

    out = []
    shared = snapshot.shared_on
    for group, heads in members.items():
        most = snapshot.group_cores_sorted[group][-1] if heads else 0
        base: float | None = None  # the penalty of the group's first plain host
        sharing = bool(measured.share)
        for host_id in heads:
            host = hosts[host_id]
            # A host without partly shared GPUs differs from the group's first such host
            # only in its free cores, which the measure reads only for the group's host
            # with the most (whole GPUs serve whichever host has the cores): the same.
            # Not for a share: the rest of a GPU it opens stays with the host's own cores.
            if host_id in shared or host.cores_free == most or base is None or sharing:
                out.append(entry(host_id))
                if base is None and host_id not in shared and host.cores_free != most:
                    base = out[-1][0] - extra.get(host_id, 0.0)
            else:
                penalty = base + extra.get(host_id, 0.0)
                out.append((penalty, host.cores_free, host.name, host_id))
    out.sort()
    return out


def heads(walk: Iterator[str], snapshot: Snapshot) -> list[str]:
    """The hosts of a group's `walk` (snuggest first) that are ranked: the first
    `RANKED_PER_GROUP` without partly shared GPUs, and those with them met on the way (the
    snuggest hosts are often the ones sharing GPUs, whose cores feed those GPUs), at most
    `MAX_HEADS`."""
    shared, out, plain = snapshot.shared_on, [], 0
    for host_id in walk:
        out.append(host_id)
        plain += host_id not in shared
        if plain == RANKED_PER_GROUP or len(out) == MAX_HEADS:
            break
    return out


def words(request: PlacementRequest, snapshot: Snapshot, host: HostInfo) -> Note:
    """The sentence that says why the host ranks where it does, for operator and tenant."""
    e = effect(request, snapshot, host)
    full = parts()
    stranded = e.stranded_after / full
    fragment = (e.fragment_after - e.fragment) / full
    strand = (
        f"{_gpus(stranded)} in its reach would have no cores to feed them"
        if stranded >= 0.05
        else "no GPUs in its reach are left without cores to feed them"
    )
    frag = (
        f"the GPUs left free get {_gpus(fragment)} less usable for the requests expected"
        if fragment >= 0.05
        else "the GPUs left free stay as usable for the requests expected"
    )
    if request.host is not None:
        lead = lead_tenant = "On the host asked for"
    else:
        lead = "Leaves the least stranded and fragmented"
        lead_tenant = "Chosen to leave the fewest GPUs stranded or fragmented"
    return Note(
        f"{lead}: {strand}; {frag} (host penalty {e.penalty:.1f}).",
        f"{lead_tenant}: {strand}; {frag}.",
    )


def _gpus(amount: float) -> str:
    """An amount of GPU capacity in words: "2 GPUs", "0.5 GPU"."""
    shown = f"{amount:.0f}" if abs(amount - round(amount)) < 0.05 else f"{amount:.1f}"
    return f"{shown} GPU" + ("" if shown == "1" or amount < 1 else "s")
