"""The trace's pods replayed in time order with departures, the lower bound, the search.

Pure Python (no database): an event queue of arrivals at `creation_time` and departures at
`deletion_time` (a departure before an arrival at the same second, so that what leaves is
free for what comes; a pod refused at its arrival never departs), replayed through the
product's `place()` on a `bench.lifetimes_fabric.Fabric`; the peak of concurrent demand from
the same events; and the smallest size of a resource at which at most 1 % of the pods are
refused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from bench.lifetimes_fabric import FULL, SHARES, Fabric, Holding
from bench.packing_data import Pod
from composer.placement.engine import place
from composer.placement.request import Placement, PlacementRequest

REFUSED_SHARE = 0.01  # at most 1 % of the pods refused
DEPART, ARRIVE = 0, 1
_AT_ONCE = 2  # sorts a zero-lifetime pod's departure after its arrival


@dataclass(frozen=True)
class TracePod:
    """A pod of the trace with its lifetime (seconds)."""

    pod: Pod
    start: int
    end: int


def allowed(pods: int) -> int:
    """How many of `pods` may be refused: at most 1 %."""
    return math.floor(pods * REFUSED_SHARE + 1e-9)


def events(pods: list[TracePod]) -> Iterator[tuple[int, int, int]]:
    """(time, DEPART or ARRIVE, pod index) in time order; at one time departures first, then
    arrivals in the pods' order. A pod that leaves the second it comes (the trace has a few)
    leaves right after its own arrival: ordered before it, it would depart holding nothing
    and then stay for the rest of the stream."""
    queue = [(p.start, ARRIVE, i) for i, p in enumerate(pods)]
    queue += [
        (max(p.end, p.start), DEPART if p.end > p.start else _AT_ONCE, i)
        for i, p in enumerate(pods)
    ]
    for at, kind, i in sorted(queue):
        yield at, DEPART if kind == _AT_ONCE else kind, i


def gpus(pod: Pod, *, shares: bool = SHARES) -> float:
    """The GPUs a pod holds: its fraction with shares, else whole GPUs."""
    if pod.k == 1 and pod.milli < FULL and not shares:
        return 1.0
    return pod.gpu / FULL


@dataclass(frozen=True)
class Peaks:
    gpus: float  # GPU milli / 1000
    gpus_whole: float  # fractions rounded up: what the engine holds without shares
    cores: float
    mem_mib: int


def peak(pods: list[TracePod], amount: Callable[[Pod], float]) -> float:
    """The peak of the concurrent sum of `amount` over the stream, every pod placed."""
    now = top = 0.0
    for _, kind, i in events(pods):
        now += amount(pods[i].pod) if kind == ARRIVE else -amount(pods[i].pod)
        top = max(top, now)
    return top


def peaks(pods: list[TracePod]) -> Peaks:
    """The peak of concurrent demand per resource if every pod were placed: the lower bound
    of what must be provisioned (each resource's peak on its own)."""
    return Peaks(
        gpus=peak(pods, lambda p: p.gpu) / FULL,
        gpus_whole=peak(pods, lambda p: round(FULL * gpus(p, shares=False))) / FULL,
        cores=peak(pods, lambda p: p.cpu) / 1000,
        mem_mib=int(peak(pods, lambda p: p.mem)),
    )


@dataclass
class Outcome:
    """A replay: pods placed and refused, and whether it stopped early (refused too many)."""

    pods: int
    placed: int = 0
    refused: int = 0
    stopped: bool = False
    seconds: float = 0.0
    decisions: int = 0

    @property
    def ok(self) -> bool:
        return not self.stopped and self.refused <= allowed(self.pods)


def replay(
    pods: list[TracePod],
    fabric: Fabric,
    request_of: Callable[[Pod], PlacementRequest],
    *,
    give_up: bool = True,
) -> Outcome:
    """Replay `pods` on `fabric`; with `give_up`, stop at the first refusal beyond 1 %."""
    started = time.perf_counter()
    out = Outcome(len(pods))
    limit = allowed(len(pods))
    held: dict[int, Holding] = {}
    for _, kind, i in events(pods):
        if kind == DEPART:
            holding = held.pop(i, None)
            if holding is not None:  # a refused pod never departs
                fabric.give(holding)
            continue
        request = request_of(pods[i].pod)
        result = place(request, fabric.snapshot())
        out.decisions += 1
        if isinstance(result, Placement):
            held[i] = fabric.take(request, result)
            out.placed += 1
            continue
        out.refused += 1
        if give_up and out.refused > limit:
            out.stopped = True
            break
    out.seconds = time.perf_counter() - started
    return out


@dataclass
class Search:
    """The smallest size at which `ok` holds, and every size tried (size, outcome)."""

    size: int
    tried: list[tuple[int, Outcome]] = field(default_factory=list)


def smallest(
    low: int,
    try_size: Callable[[int], Outcome],
    *,
    step: float = 0.5,
    tolerance: float = 0.005,
) -> Search:
    """The smallest size from `low` up at which the replay refuses at most 1 %: `low` first
    (the lower bound often suffices), then sizes growing by `step` until one passes, then
    a bisection between the last that failed and the first that passed, to within
    `tolerance` of the size (the answer is at most that much above the smallest). Refusals are
    taken to fall as the size grows (true of every run seen, not proven)."""
    tried: list[tuple[int, Outcome]] = []

    def ok(size: int) -> bool:
        outcome = try_size(size)
        tried.append((size, outcome))
        return outcome.ok

    if ok(low):
        return Search(low, tried)
    bad, good = low, max(low + 1, math.ceil(low * (1 + step)))
    while not ok(good):
        bad, good = good, math.ceil(good * (1 + step))
    while good - bad > max(1, tolerance * good):
        middle = (bad + good) // 2
        if ok(middle):
            good = middle
        else:
            bad = middle
    return Search(good, tried)
