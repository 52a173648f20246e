"""How much hardware the trace's stream needs, fixed-ratio and composable: the searches.

Pure Python over `bench.lifetimes_replay` and `bench.lifetimes_fabric` (no database):

* fixed-ratio (`size_fixed`): the smallest number of servers, the trace's node list's mix of
  shapes apportioned by largest remainder, at which at most 1 % of the pods are refused;
* composable (`size_composable`): hosts of one shape (`HostShape`), GPUs per model and CXL
  GiB, each searched on its own with the others generous, then the three together checked
  (and, should the combination refuse more than 1 %, all grown by 1 %, 2 %, ... of what
  the searches found until it does not).

A pod's memory on a composable host: its share of the host's local memory in proportion to
its cores (`HostShape.local_share`), the rest from CXL memory as the request's
`memory_gib`; on a fixed-ratio server, all of it from the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bench.lifetimes_fabric import (
    Fabric,
    Server,
    composable_inventory,
    fixed_inventory,
    request_for,
)
from bench.lifetimes_replay import Outcome, Search, TracePod, replay, smallest
from bench.packing_data import Pod
from composer.placement.request import PlacementRequest

MIB = 1024  # MiB per GiB
CHASSIS = 16  # GPUs per pooled chassis
CXL_DEVICE = 256 * MIB  # MiB per CXL memory device (the last of the pool may be smaller)
CXL_BOX = 8  # CXL memory devices per box
GENEROUS = 2.0  # a resource not being searched: this times its lower bound
GROW = 0.01  # the joint check: each resource grown by 1 % while it refuses too many


def apportion(shapes: list[tuple[Server, int]], total: int) -> list[Server]:
    """`total` servers in the mix of `shapes` (shape, count), by largest remainder: each
    shape its whole share, then the largest fractions one more each (ties: the commoner
    shape, then the list's order)."""
    whole = sum(n for _, n in shapes)
    quotas = [total * n / whole for _, n in shapes]
    counts = [math.floor(q) for q in quotas]
    order = sorted(range(len(shapes)), key=lambda i: (-(quotas[i] - counts[i]), -shapes[i][1], i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return [s for (s, _), n in zip(shapes, counts, strict=True) for _ in range(n)]


def fixed_request(pod: Pod) -> PlacementRequest:
    return request_for(pod.cpu, pod.mem, 0, pod.k, pod.milli)


def size_fixed(pods: list[TracePod], shapes: list[tuple[Server, int]], low: int) -> Search:
    """The fewest servers of the trace's mix at which at most 1 % of `pods` are refused."""

    def attempt(total: int) -> Outcome:
        fabric = Fabric(fixed_inventory(apportion(shapes, total)))
        return replay(pods, fabric, fixed_request)

    return smallest(low, attempt)


@dataclass(frozen=True)
class HostShape:
    """The composable hosts: big ones of `big` milli-cores (every pod fits one), small ones
    of `small` (most pods fit one, and the cores come in finer steps), each with `local`
    MiB of local memory per core."""

    big: int
    small: int
    local: int  # MiB per core

    def memory(self, cores: int) -> int:
        """The local MiB of a host of `cores` milli-cores."""
        return cores * self.local // 1000

    def local_share(self, pod: Pod) -> int:
        """The host memory a pod gets locally: at most its cores' share of the host's local
        memory (so a host's memory never runs out before its cores do); the rest of its
        memory comes from CXL."""
        return min(pod.mem, self.memory(pod.cpu))


def host_shape(
    pods: list[TracePod], cores: list[int], *, fit: float = 0.99, quantile: float = 0.05
) -> HostShape:
    """The host shapes, from the trace's server core counts `cores`: the largest (every pod
    fits) and the smallest that at least `fit` of the pods fit; local memory per core the
    `quantile` of what the pods ask per core (weighted by cores), rounded down to a whole
    GiB: nearly every core placed comes with at least that much memory asked, so a host's
    local memory sits idle only with its cores."""
    asked = sorted(p.pod.cpu for p in pods)
    need = asked[max(0, math.ceil(fit * len(asked)) - 1)] if asked else 0
    small = min((c for c in cores if c >= need), default=max(cores))
    ratios = sorted((p.pod.mem / max(p.pod.cpu, 1), p.pod.cpu) for p in pods)
    weight = sum(c for _, c in ratios)
    seen, per_milli = 0, ratios[0][0] if ratios else 0.0
    for ratio, c in ratios:
        seen += c
        per_milli = ratio
        if seen >= quantile * weight:
            break
    return HostShape(max(cores), small, math.floor(per_milli * 1000 / MIB) * MIB)


@dataclass(frozen=True)
class Composable:
    big: int  # hosts of HostShape.big cores
    small: int  # hosts of HostShape.small cores
    gpus: dict[str, int]
    cxl_gib: int

    def cores(self, shape: HostShape) -> int:
        """Milli-cores in all."""
        return self.big * shape.big + self.small * shape.small


def composable_fabric(shape: HostShape, size: Composable) -> Fabric:
    hosts = [shape.big] * size.big + [shape.small] * size.small
    return Fabric(
        composable_inventory(
            [(c, shape.memory(c)) for c in hosts],
            size.gpus,
            size.cxl_gib * MIB,
            chassis=CHASSIS,
            cxl_device=CXL_DEVICE,
            cxl_box=CXL_BOX,
        )
    )


def composable_request(shape: HostShape) -> Callable[[Pod], PlacementRequest]:
    def request(pod: Pod) -> PlacementRequest:
        local = shape.local_share(pod)
        return request_for(pod.cpu, local, pod.mem - local, pod.k, pod.milli)

    return request


@dataclass
class ComposableSizing:
    shape: HostShape
    size: Composable
    searches: dict[str, Search]
    joint: list[tuple[Composable, Outcome]]


def size_composable(
    pods: list[TracePod], shape: HostShape, model: str, low: Composable, cores: int
) -> ComposableSizing:
    """Big hosts, small hosts, GPUs (one pool of `model`) and CXL GiB, each the smallest
    at which at most 1 % of `pods` are refused with the others at GENEROUS times their
    lower bound (`low`): first the big hosts (with generous small ones), then the small
    hosts with those big ones (from what they leave of the peak of `cores`, milli-cores),
    then GPUs and CXL GiB. Then all together, grown (but the big hosts) by GROW,
    2 x GROW, ... while they refuse too many."""
    request = composable_request(shape)

    def run(size: Composable) -> Outcome:
        return replay(pods, composable_fabric(shape, size), request)

    g = Composable(
        math.ceil(low.big * GENEROUS) + 1,
        math.ceil(low.small * GENEROUS) + 1,
        {model: math.ceil(low.gpus[model] * GENEROUS) + CHASSIS},
        math.ceil(low.cxl_gib * GENEROUS) + CXL_DEVICE // MIB,
    )
    searches = {"big": smallest(low.big, lambda n: run(Composable(n, g.small, g.gpus, g.cxl_gib)))}
    big = searches["big"].size
    rest = max(0, cores - big * shape.big)
    searches["small"] = smallest(
        math.ceil(rest / shape.small), lambda n: run(Composable(big, n, g.gpus, g.cxl_gib))
    )
    searches["gpus"] = smallest(
        low.gpus[model], lambda n: run(Composable(g.big, g.small, {model: n}, g.cxl_gib))
    )
    searches["cxl"] = smallest(low.cxl_gib, lambda n: run(Composable(g.big, g.small, g.gpus, n)))
    size = first = Composable(
        big, searches["small"].size, {model: searches["gpus"].size}, searches["cxl"].size
    )
    joint = [(size, run(size))]
    grown = 0
    while not joint[-1][1].ok:
        grown += 1
        factor = 1 + GROW * grown
        size = Composable(
            big,
            math.ceil(first.small * factor),
            {m: math.ceil(n * factor) for m, n in first.gpus.items()},
            math.ceil(first.cxl_gib * factor),
        )
        joint.append((size, run(size)))
    return ComposableSizing(shape, size, searches, joint)
