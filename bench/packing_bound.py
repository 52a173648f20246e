"""A provable ceiling on GPU allocation in composable mode, for any placement policy.

Used by bench/bench_packing.py; stands alone (numpy, and scipy's linear programming in
bench/packing_configs.py) so that its argument can be read and tested on its own
(tests/composer/placement/test_packing_ceiling.py checks it against an exhaustive search over
all policies on small instances). The protocol forces placement: a pod that fits somewhere
must be placed; only a pod that fits nowhere is dropped. That, and not a lack of
cleverness, is what caps composable packing on traces rich in large fractions:

1. A fraction of more than 500 milli ("big") shares its GPU with no other big fraction, so
   every GPU holding a big pod b keeps 1000 - m_b milli that only smaller pods can use; one
   of more than a third of a GPU shares it with at most one other such fraction, so 470 +
   470 leaves 60 milli that only a fraction of at most 60 can use.
2. Some of these fractions are placed under *every* policy: those that arrive while a host
   with their CPU and memory and an unbound GPU it can take provably exist (the
   certificate below, from nothing but what the earlier arrivals could have consumed).
3. The GPUs those forced pods sit on leave free at least the optimum of a linear programme
   over what one GPU can hold (`packing_configs.least_waste`, whose docstring has the
   argument): every such GPU holds one of the multisets of fractions that fit it, and no
   more of a size than arrived.

So allocated milli <= min(arrived milli, GPUs x 1000 - that least waste). With all hosts
pooled the bound also splits on the arrival x at which the pool runs out of unbound GPUs
(`packing_configs.Exhaustion`): before x every certified pod is placed (a GPU is free, so
the certificate may take one for granted), after x no whole-GPU pod is ever placed and a
fraction only joins a GPU bound before x, beside a pod that arrived before x. A programme
over what each GPU holds, early and late, bounds every run that runs out in an interval
of x; the largest over all intervals, and the case where the pool never runs out, bounds
every run. Allocation never falls (no departures), so the bound holds at every sample up
to the last arrival.

4. A dropped fraction above a third closes the door behind it (`drop_split`; any domains,
   pooled or not). If such a pod i (cpu c, memory m, no gpu_spec) is dropped, then at its
   arrival every host has free CPU < c, or free memory < m, or no unbound GPU left in its
   domain (and no partly used GPU bound to it with room for i). Nothing is ever freed and
   rooms only shrink, so each host stays so, and every later pod asking at least c CPU and m
   memory and at least i's share of each GPU (a whole-GPU pod, or a fraction as big as i or
   bigger) fits nowhere: it would need a host with that CPU and memory and an unbound GPU in
   its domain or a partly used GPU there with that room (a gpu_spec only narrows that; i had
   none, so any model would have done for it). A run that drops i therefore allocates at
   most R_i = arrived milli - milli_i - the GPU milli of those later pods. Split on D, the
   fractions above a third without a gpu_spec that a run drops (never a certified one,
   2.): sort the uncertified ones by R; if the first of D in that order is the k-th, the
   k - 1 before it are placed, and allocation <= min(R_k, GPUs x 1000 - waste(certified and
   those k - 1)), waste as in 3. (which needs only that those pods are placed); if D is
   empty all are placed (R = infinity). Every run falls under one k, so the largest of these
   bounds over k holds for every run. The waste term never falls as k grows (a forced pod
   more only narrows the programme of 3., solved to optimality) and R is sorted, so the
   largest is where the two cross, found by bisection (a test checks it against a scan).
   In domains each case is sharpened (`after_drop_programme`): a later pod asking at least
   c and m that fits somewhere after the drop sits on a GPU already bound, bound before i's
   arrival (the host it lands on had that CPU and memory then, so no unbound GPU left in
   its domain), so beside the pod that bound it, which arrived before i (one of no milli
   leaves the GPU whole; a whole-GPU pod leaves no room); the most a run of case k
   allocates is at most the optimum of `packing_configs.Anchored` with those pods
   anchored, the whole-GPU and as-big ones shut out, and the certified ones and the k - 1
   placed. Cases dropping a fraction of one shape (CPU, memory, milli) share a programme
   that holds for each (the docstring of `after_drop_programme` says why), so the search
   bounds a block of such cases at a time, best first, halving the block with the largest
   bound until that bound is a single case's; a case is never solved on its own unless
   its block could be the largest (minutes a seed on the traces here). Where most whole-GPU
   pods ask more CPU and memory than the common big fractions (the default trace: 99 % of
   them against the 810-milli shape), an early drop costs the run most later whole-GPU pods
   (and the later fractions at least as big that ask as much), which no domain structure
   can dodge; that is what bounds 8-host domains, where the certificate alone (2.) is weak.
   The ceiling is the lower of this bound and the one above; allocation never falls, so
   both hold at every sample.

The certificate. An adversary keeps fraction b (cpu c, memory m) out only if every host is
blocked: its free CPU < c (its pods used cost_c = cap_c - c + 1 of CPU; a host smaller than c
costs 0), or its free memory < m (cost_m likewise), or every GPU of its domain is touched.
A pod sits on one host, so it helps block that host's CPU, or its memory, or (touching k
GPUs, a fraction at most one) its domain's GPUs, never two of them usefully: if its domain
is exhausted its host is blocked anyway, and if not its touch exhausts nothing. Under a mix
(l_c, l_m) >= 0 blocking host h costs at least w_h = min(l_c cost_c, l_m cost_m) and a pod
is worth at most max(l_c cpu, l_m mem) to it. With all hosts pooled the pool cannot be
exhausted while fewer GPUs than it has were requested (whole pods k, fractions 1), so b is
certified once some mix makes sum_h w_h exceed the earlier arrivals' worth. With domains
the adversary also picks domains E to exhaust, paying with the pods it puts to touching:
for every E, sum_{d not in E} K_d + S(touches of E) >= K - max_t (F(t) - S(t)), where K_d is
domain d's sum of w_h, F the fractional knapsack of domains by K_d / G_d (an upper bound on
what exhausting domains with t touches spares), and S(t) the least worth of pods that give t
touches (splittable, cheapest per touch first); b is certified if that exceeds the earlier
arrivals' worth. The mixes searched form a grid; a missed certificate weakens the bound,
never invalidates it. Certified arrivals of a shape form a prefix (the earlier arrivals only
grow), found by bisection.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from bench import packing_configs

FULL = packing_configs.FULL  # a whole GPU, in milli
THIRD = packing_configs.THIRD  # three fractions above this never share a GPU


@dataclass(frozen=True)
class Host:
    """What the bound needs of the cluster: per host CPU, memory, GPUs and domain."""

    cpu: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    domain: np.ndarray


@dataclass
class Bound:
    """The ceiling, and each argument's bound on its own (for the report and the tests)."""

    milli: float  # the ceiling on allocated GPU milli
    arrived: int  # GPU milli requested by the arrivals considered
    parts: dict[str, float] = field(default_factory=dict)


MIXES = np.stack([1.0 - np.linspace(0, 1, 201), np.linspace(0, 1, 201)], 1)  # CPU : memory


class Spend:
    """What the arrivals before pod i can spend on blocking hosts. A pod sits on one host,
    so it helps block that host's CPU, or its memory, or (with its GPU touches) its domain's
    GPUs, and never two of them usefully (if its domain is exhausted its host is blocked
    anyway; if not, its touch exhausts nothing). Under a multiplier mix (l_c, l_m) a pod is
    worth max(l_c cpu, l_m mem) to CPU/memory blocking. Pods are counted by shape."""

    def __init__(self, arriving: list, hosts: Host):
        self.sc, self.sm = float(max(hosts.cpu.sum(), 1)), float(max(hosts.mem.sum(), 1))
        shapes: dict[tuple[int, int, int], int] = {}
        col = np.array(
            [shapes.setdefault((p.cpu, p.mem, p.k), len(shapes)) for p in arriving], dtype=int
        )
        vec = np.array(list(shapes), dtype=np.float64).reshape(-1, 3)  # [S, (cpu, mem, k)]
        counts = np.zeros((len(arriving) + 1, len(shapes)), dtype=np.int32)
        counts[np.arange(1, len(arriving) + 1), col] = 1
        self.counts = np.cumsum(counts, axis=0)  # [n + 1, S]: shapes arrived before pod i
        self.value = np.maximum(  # [Q, S]
            MIXES[:, 0:1] * vec[:, 0] / self.sc, MIXES[:, 1:2] * vec[:, 1] / self.sm
        )
        self.touches = vec[:, 2]  # GPUs a pod of the shape touches (a fraction: one)

    def before(self, i: int) -> np.ndarray:
        return self.value @ self.counts[i]

    def sacrifice(self, q: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Breakpoints (touches, value) of the cheapest way, under mix q, to touch t GPUs with
        the arrivals before pod i (splittable: pods of least value per touch first)."""
        has = (self.touches > 0) & (self.counts[i] > 0)
        per = self.value[q, has] / self.touches[has]
        order = np.argsort(per)
        n = self.counts[i][has][order]
        t = np.concatenate([[0.0], np.cumsum(n * self.touches[has][order])])
        v = np.concatenate([[0.0], np.cumsum(n * self.value[q, has][order])])
        return t, v


class Certifier:
    """Decides, for one shape (CPU, memory) of fraction above a third, whether the earlier
    arrivals leave a host that must take it (see the module docstring)."""

    def __init__(self, hosts: Host, cpu: int, mem: int, spend: Spend, pooled: bool):
        cost_c = np.maximum(hosts.cpu - cpu + 1, 0) / spend.sc
        cost_m = np.maximum(hosts.mem - mem + 1, 0) / spend.sm
        w = np.minimum(MIXES[:, 0:1] * cost_c, MIXES[:, 1:2] * cost_m)  # [Q, H]
        ndom = int(hosts.domain.max()) + 1
        self.k = np.zeros((len(MIXES), ndom))  # [Q, D]: blocking domain d host by host
        np.add.at(self.k.T, hosts.domain, w.T)
        self.g = np.bincount(hosts.domain, weights=hosts.gpus, minlength=ndom)
        self.total = self.k.sum(1)
        self.spend = spend
        self.pooled = pooled

    def certified(self, i: int, gpu_free: bool = False) -> bool:
        """True if, under some mix, blocking every host costs more than the arrivals before
        pod i can spend. `gpu_free`: an unbound GPU is known to exist (pooled, before the
        pool runs out)."""
        budget = self.spend.before(i)
        if gpu_free or self.pooled:
            if not gpu_free and self.spend.counts[i] @ self.spend.touches >= self.g.sum():
                return False  # the pool may be exhausted: no certificate from this argument
            return bool((self.total > budget + 1e-12).any())
        # domains: the adversary exhausts a set E of domains with pods put to touching
        # GPUs and blocks the other domains' hosts by CPU/memory with the rest. Over all E,
        # sum_{d not in E} K_d + sacrifice(touches of E) >= K - max_t (F(t) - S(t)), F the
        # fractional knapsack of the domains by K_d / G_d, S the sacrifice curve.
        for q in np.nonzero(self.total > budget + 1e-12)[0]:
            order = np.argsort(-self.k[q] / self.g)
            fg = np.concatenate([[0.0], np.cumsum(self.g[order])])
            fk = np.concatenate([[0.0], np.cumsum(self.k[q, order])])
            st, sv = self.spend.sacrifice(int(q), i)
            ts = np.unique(np.concatenate([fg[fg <= st[-1]], st]))
            gain = np.interp(ts, fg, fk) - np.interp(ts, st, sv)
            if self.total[q] - gain.max() > budget[q] + 1e-12:
                return True
        return False


def ceiling(hosts: Host, arriving: list, gpu_total: int, pooled: bool) -> Bound:
    """The bound over `arriving` (objects with cpu, mem, k, milli, spec, gpu) for any policy,
    composable with the domains in `hosts.domain`; `pooled`: one domain of all hosts."""
    gpu = np.array([p.gpu for p in arriving], dtype=np.float64)
    spend = Spend(arriving, hosts)
    shapes: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(arriving):
        if p.k == 1 and THIRD < p.milli < FULL and not p.spec:
            shapes.setdefault((p.cpu, p.mem), []).append(i)
    # per shape, the arrivals certified in every run and, pooled, those certified with an
    # unbound GPU taken for granted (valid before the pool runs out)
    always: list[int] = []
    early: list[int] = []
    for (c, m), idx in shapes.items():
        cert = Certifier(hosts, c, m, spend, pooled)
        for out, free in ((always, False), (early, True)):
            if free and not pooled:
                continue
            lo, hi = 0, len(idx)  # certified arrivals of a shape form a prefix
            while lo < hi:
                mid = (lo + hi) // 2
                ok = cert.certified(idx[mid], free)
                lo, hi = (mid + 1, hi) if ok else (lo, mid)
            out += idx[:lo]
    kinds = Counter(p.milli for p in arriving if p.k == 1 and p.milli < FULL)
    solved: dict[tuple[tuple[int, int], ...], tuple[float, float]] = {}

    def waste(forced: set[int]) -> tuple[float, float]:
        sizes = tuple(sorted(Counter(arriving[i].milli for i in forced).items()))
        if sizes not in solved:
            solved[sizes] = packing_configs.least_waste(dict(sizes), kinds)
        return solved[sizes]

    arrived = float(gpu.sum())
    capacity = gpu_total * FULL
    gaps, fill = waste(set(always))
    best = min(arrived, capacity - (gaps - fill))
    if pooled:
        # the pool runs out of unbound GPUs at some arrival x, or never: the largest of
        # what a run can allocate over every x bounds them all (packing_configs.Exhaustion)
        run_out = packing_configs.Exhaustion(arriving, gpu_total, set(always), set(early))
        best = min(best, run_out.bound())
    parts = {"certificate": best}
    # in domains the drop split decides, so each of its cases is sharpened by what the drop
    # leaves a later pod (minutes a seed); pooled, the exhaustion split is the lower
    sharper = None if pooled else after_drop_programme(arriving, gpu_total)
    drop = drop_split(arriving, always, waste, capacity, sharper)
    parts["drop"] = float(min(arrived, drop))
    return Bound(min(best, parts["drop"]), int(arrived), parts=parts)


def after_drop(arriving: list) -> dict[int, float]:
    """R_i for every fraction i above a third without gpu_spec: the most GPU milli a run that
    drops i can allocate, i.e. all that arrives but i and the later pods asking at least i's
    CPU, memory and share of a GPU: whole-GPU pods, and fractions as big as i or bigger (see
    4. in the module docstring)."""
    gpu = np.array([p.gpu for p in arriving], dtype=np.float64)
    cpu = np.array([p.cpu for p in arriving], dtype=np.int64)
    mem = np.array([p.mem for p in arriving], dtype=np.int64)
    per_gpu = np.array([p.milli if p.k >= 1 else 0 for p in arriving], dtype=np.int64)
    total = float(gpu.sum())
    shapes: dict[tuple[int, int, int], list[int]] = {}
    for i, p in enumerate(arriving):
        if p.k == 1 and THIRD < p.milli < FULL and not p.spec:
            shapes.setdefault((p.cpu, p.mem, p.milli), []).append(i)
    out: dict[int, float] = {}
    for (c, m, share), idx in shapes.items():
        shut = np.where((per_gpu >= share) & (cpu >= c) & (mem >= m), gpu, 0.0)
        later = np.concatenate([np.cumsum(shut[::-1])[::-1], [0.0]])  # [i]: arrivals >= i
        for i in idx:
            out[i] = total - gpu[i] - later[i + 1]
    return out


def drop_split(
    arriving: list,
    certified: list[int],
    waste: Callable[[set[int]], tuple[float, float]],
    capacity: int,
    sharper: Sharper | None = None,
) -> float:
    """The bound of 4. in the module docstring. `certified`: pods placed in every run
    (fractions above a third); `waste(set)`: (gaps, fill) at the least free capacity the
    GPUs of a set of placed such pods leave (3.); `sharper(drops, placed)`, if given: a
    bound on every run that drops one of `drops` (fractions of one shape; none: drops
    none) first and places `placed` (`after_drop_programme`), taken in each case too."""
    r = after_drop(arriving)
    fixed = set(certified)
    rest = sorted((x, i) for i, x in r.items() if i not in fixed)

    def cap_at(k: int) -> float:  # never rises with k
        g, f = waste(fixed | {i for _, i in rest[:k]})
        return capacity - (g - f)

    def r_at(k: int) -> float:  # sorted; k == len(rest): nothing dropped
        return rest[k][0] if k < len(rest) else np.inf

    lo, hi = 0, len(rest)  # the first k with R_k >= cap_at(k); len(rest) qualifies
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if r_at(mid) >= cap_at(mid) else (mid + 1, hi)
    # k >= lo: min(R_k, cap_at(k)) = cap_at(k) <= cap_at(lo); k < lo: it is R_k <= R_{lo-1}
    if sharper is None:
        return float(max(cap_at(lo), r_at(lo - 1) if lo > 0 else -np.inf))

    def plain(ks: list[int]) -> float:  # the largest min(R_k, cap_at(k)) over the cases
        below, above = [k for k in ks if k < lo], [k for k in ks if k >= lo]
        return max(r_at(below[-1]) if below else -np.inf, cap_at(above[0]) if above else -np.inf)

    def sharpened(ks: list[int]) -> float:  # one programme bounds every case in ks
        drops = [rest[k][1] for k in ks if k < len(rest)]
        return sharper(drops, fixed | {i for _, i in rest[: ks[0]]})

    # best first over blocks of cases that drop a fraction of one shape (k ascending), each
    # keyed by an upper bound on all its cases: plain until sharpened; a sharpened block of
    # more than one case is halved. The largest key bounds every case, so the search may
    # stop once it is a sharpened single case or within the rounding margin of one.
    shape: dict[tuple[int, int, int], list[int]] = {}
    for k, (_, i) in enumerate(rest):
        p = arriving[i]
        shape.setdefault((p.cpu, p.mem, p.milli), []).append(k)
    blocks = [*shape.values(), [len(rest)]]
    heap = [(-plain(ks), False, ks) for ks in blocks]
    heapq.heapify(heap)
    margin, single = packing_configs.SLACK * capacity, -np.inf
    while heap:
        key, sharp, ks = heapq.heappop(heap)
        if sharp and (len(ks) == 1 or -key <= single + margin):
            if key == np.inf:  # every run falls under some case
                raise ValueError("no case of the drop split holds a run")
            return float(-key)
        if sharp:
            for half in (ks[: len(ks) // 2], ks[len(ks) // 2 :]):
                heapq.heappush(heap, (max(key, -plain(half)), False, half))
            continue
        value = min(-key, sharpened(ks))
        if len(ks) == 1:
            single = max(single, value)
        heapq.heappush(heap, (-value, True, ks))
    raise AssertionError("every pop returns or pushes back, so the heap never empties")


# sharper(drops, placed) for drop_split: see after_drop_programme
Sharper = Callable[[Sequence[int], set[int]], float]


def after_drop_programme(arriving: list, gpus: int) -> Sharper:
    """sharper(drops, placed) for drop_split: a bound on what a run can allocate that drops
    one of `drops` (fractions of one shape: CPU, memory and milli) first, or none if it is
    empty, and places `placed` (packing_configs.Anchored). After fraction i is dropped, no
    host with its CPU and memory has an unbound GPU in its domain, ever again (4. in the
    module docstring), so a later pod asking at least both only fits a GPU already bound,
    before i: a whole-GPU pod or a fraction as big as i never, a smaller fraction only
    beside an anchor that arrived before i. Every other pod may go anywhere.

    For several drops, one programme holds for each: with the last of them, l, "later"
    shrinks (only pods after l are shut) and "before" grows (anchors arrived before l); a
    smaller fraction that i's drop anchored but l's does not is free, which only allows
    more (a free fraction may sit where an anchored one may); and l itself is never placed
    where it is not dropped, as it comes after the dropped one and asks as much as it does
    (so one fraction of the shape's size is always missing). `placed` must be what every
    case of the block places: drop_split passes the first case's."""
    sizes = packing_configs.Sizes(arriving)
    milli = np.array([p.milli for p in arriving], dtype=np.int64)
    cpu = np.array([p.cpu for p in arriving], dtype=np.int64)
    mem = np.array([p.mem for p in arriving], dtype=np.int64)
    programme = packing_configs.Anchored(sizes.sizes, gpus)
    index = np.arange(len(arriving))

    def sharper(drops: Sequence[int], placed: set[int]) -> float:
        count = sizes.count
        if drops:
            last = max(drops)
            shut = (index > last) & (cpu >= cpu[last]) & (mem >= mem[last])
            anchored = shut & (milli < milli[last])
            before, free = index < last, ~shut & (index != last)
        else:
            before, free = np.ones(len(arriving), dtype=bool), np.ones(len(arriving), dtype=bool)
            anchored = np.zeros(len(arriving), dtype=bool)
        limits = packing_configs.Limits(
            anchors=count(before),
            free=count(free),
            anchored=count(anchored),
            total=count(free | anchored),
            early=np.zeros(len(sizes.sizes)),
            placed=count(np.isin(index, list(placed))),
            wholes=float(sizes.wholes[free].sum()),
        )
        return programme.most(limits)

    return sharper
