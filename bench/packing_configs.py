"""What the contents a GPU can hold allow, for the composable ceiling (bench/packing_bound.py):
two linear programmes over *configurations*, the multisets of fractions one GPU can hold
(sizes in whole milli summing to at most 1000), solved by scipy's HiGHS.

Any run's GPUs at the end are a feasible point of both: count the GPUs by what they hold
and the fractions by where they sit. So each optimum bounds every run; model, host, CPU and
memory are ignored, which only loosens it. The programmes know the sizes of the fractions,
not just their sum: 810 leaves 190 that no 320 can use, 470 + 470 leaves 60, and three
fractions of 320 fill 960 of a GPU where a splittable fill would fill it all.

`least_waste`: the least capacity the GPUs holding given fractions above a third (those
that every run places) leave free. Variables: x_c, the GPUs holding configuration c, over
every configuration with a fraction above a third (334 milli or more: "a third-plus"):

  minimise  sum_c (1000 - milli of c) x_c
  subject to
    for every third-plus size a:  forced_a <= sum_c (a's in c) x_c      (those are placed)
    for every size s:             sum_c (s's in c) x_c <= arrived_s     (what there is)
    x >= 0;  for every size a: sum of x_c over the c holding two a's <= floor(arrived_a / 2)

The last is a cut every real packing meets (two of a size need two arrivals, so a single
one is never half of such a pair). GPUs without a forced fraction are taken as full.
Forcing one more fraction shrinks the feasible set, so the optimum never falls as the
forced set grows (drop_split relies on it; the rounding margin taken off it only ever
raises the ceiling).

`Exhaustion`: with all hosts pooled, the most a run can allocate if the pool runs out of
unbound GPUs at arrival x, for x in an interval [a, b) (see `Exhaustion.interval`), and the
largest of those over every x (`Exhaustion.bound`).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

FULL = 1000
THIRD = 333  # a fraction above this shares its GPU with at most one other such fraction
# HiGHS solves to absolute tolerances (1e-7 by default); each bound gives this share of its
# scale back (never less than the optimum), so a rounding error never turns into a ceiling
# below what some run reaches.
SLACK = 1e-7


def contents(sizes: Sequence[int], room: int = FULL) -> list[tuple[int, ...]]:
    """Every non-empty multiset of `sizes` (positive milli) fitting in `room`, each sorted
    from the biggest fraction down."""
    order = sorted(set(sizes), reverse=True)
    out: list[tuple[int, ...]] = []

    def grow(left: int, start: int, held: tuple[int, ...]) -> None:
        for j in range(start, len(order)):
            if order[j] <= left:
                now = (*held, order[j])
                out.append(now)
                grow(left - order[j], j, now)

    grow(room, 0, ())
    return out


def least_waste(forced: Mapping[int, int], arrived: Mapping[int, int]) -> tuple[float, float]:
    """(gaps, fill) at the optimum of the first programme above: what the forced fractions'
    GPUs leave beside their fractions above a third, and how much of it smaller fractions
    fill (the least waste is gaps - fill). `forced` and `arrived` map a fraction's milli to
    how many; `forced` holds third-plus sizes only and is counted within `arrived`."""
    if not any(forced.values()):
        return 0.0, 0.0
    for size, count in forced.items():
        if count and not (THIRD < size < FULL and count <= arrived.get(size, 0)):
            raise ValueError(f"forced {count} x {size} milli: not above a third, or not arrived")
    sizes = sorted(s for s, n in arrived.items() if 0 < s < FULL and n > 0)
    held = [c for c in contents(sizes) if c[0] > THIRD]
    index = {s: i for i, s in enumerate(sizes)}
    holds = np.zeros((len(sizes), len(held)))  # [size, configuration]: how many
    for j, c in enumerate(held):
        for s, n in Counter(c).items():
            holds[index[s], j] = n
    plus = [index[s] for s in sizes if s > THIRD]
    pairs = [np.array([Counter(c)[sizes[i]] == 2 for c in held], dtype=float) for i in plus]
    rows = np.vstack([-holds[plus], holds, *pairs])
    limits = [-float(forced.get(sizes[i], 0)) for i in plus] + [float(arrived[s]) for s in sizes]
    limits += [float(arrived[sizes[i]] // 2) for i in plus]
    plus_milli = np.array([sum(s for s in c if s > THIRD) for c in held], dtype=np.float64)
    small_milli = np.array([sum(s for s in c if s <= THIRD) for c in held], dtype=np.float64)
    out = linprog(
        FULL - plus_milli - small_milli,
        A_ub=rows,
        b_ub=np.array(limits),
        bounds=(0, None),
        method="highs",
    )
    if out.status != 0:  # feasible by construction (every forced fraction alone)
        raise ValueError(f"configuration programme not solved: {out.message}")
    gaps = float((FULL - plus_milli) @ out.x)
    fill = float(small_milli @ out.x)
    # the optimum less a rounding margin, as gaps and a fill (never more fill than gaps)
    return gaps, min(gaps, fill + SLACK * max(gaps, 1.0))


class Exhaustion:
    """The pooled split: the most a run can allocate if the pool runs out of unbound GPUs at
    arrival x (the first x such that, once the pods before it are placed, no GPU is unbound).

    Before x every pod arrives to an unbound GPU, so those certified with one taken for
    granted (`early`) are placed; after x no whole-GPU pod is ever placed (it needs unbound
    GPUs), and a fraction only joins a GPU bound before x, which holds a pod that arrived
    before x: an *anchor* (a pod of no milli on one GPU is one too: it binds a GPU and
    leaves it free). For x in [a, b) the fractions placed early arrived before b, those
    placed late at a or later. Variables: x_c, the GPUs whose contents fit configuration c
    (only the maximal ones: what a GPU holds is part of one), e_cs and l_cs, the fractions of
    size s placed early and late on them, and w, the GPUs whole-GPU pods take:

      maximise  sum_cs s (e_cs + l_cs) + 1000 w
      subject to
        e_cs + l_cs <= (s's in c) x_c;   x_c <= sum_s e_cs    (every GPU has an anchor)
        sum_c e_cs <= arrived before b;  sum_c l_cs <= arrived at a or later;
        sum_c (e_cs + l_cs) <= arrived   (per size s)
        sum_c e_ca >= certified before a; sum_c (e_ca + l_ca) >= those and `always`
                                         (per third-plus size a)
        sum_c x_c + w <= GPUs;  w <= whole GPUs asked before b

    Any run that runs out in [a, b) gives a feasible point, so the optimum bounds it; an
    infeasible interval holds no run. `bound` takes the largest over a partition of the
    arrivals into intervals, splitting the interval that gives it until it is narrow, and
    the case where the pool never runs out (the interval [n, n): everything early)."""

    def __init__(self, arriving: Sequence, gpus: int, always: set[int], early: set[int]):
        self.n, self.gpus = len(arriving), gpus
        fraction = np.array([p.k == 1 and p.milli < FULL for p in arriving], dtype=bool)
        milli = np.array([p.milli for p in arriving], dtype=np.int64)
        self.sizes = sizes = sorted({int(m) for m in milli[fraction]})
        positive = [s for s in sizes if s > 0]
        least = min(positive, default=FULL)
        configs = [c for c in contents(positive) if FULL - sum(c) < least]
        if 0 in sizes:  # an anchor that takes no room goes with any configuration
            configs = [(*c, 0) for c in configs] or [(0,)]
        # per size, how many arrived before t ([t, size]), and of the certified ones
        one_hot = np.zeros((self.n + 1, len(sizes)))
        forced_hot = np.zeros((self.n + 1, len(sizes)))
        column = {s: j for j, s in enumerate(sizes)}
        certified = always | early
        for i in np.nonzero(fraction)[0]:
            one_hot[i + 1, column[int(milli[i])]] = 1
            forced_hot[i + 1, column[int(milli[i])]] = i in certified
        self.arrived_before = np.cumsum(one_hot, axis=0)
        self.certified_before = np.cumsum(forced_hot, axis=0)
        self.always = np.zeros(len(sizes))
        for pod in always:
            self.always[column[int(milli[pod])]] += 1
        self.early_set = sorted(early - always)
        self.milli = milli
        whole = np.array([p.k if p.k >= 1 and p.milli >= FULL else 0 for p in arriving])
        self.wholes_before = np.concatenate([[0], np.cumsum(whole)])
        self.plus = [j for j, s in enumerate(sizes) if s > THIRD]
        self._build(configs, column)

    def _build(self, configs: list[tuple[int, ...]], column: dict[int, int]) -> None:
        """The constraint matrix, the same for every interval (only the limits change)."""
        pairs = [(c, s, n) for c, held in enumerate(configs) for s, n in Counter(held).items()]
        nc, nq, ns = len(configs), len(pairs), len(self.sizes)
        self.nc, self.nq = nc, nq
        e = nc + np.arange(nq)  # variable index of e_q; l_q is e + nq; w the last
        l_ = e + nq
        w = nc + 2 * nq
        size_of = np.array([column[s] for _, s, _ in pairs], dtype=np.int64)
        conf_of = np.array([c for c, _, _ in pairs], dtype=np.int64)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        r = 0

        def put(row: np.ndarray, col: np.ndarray, val: float | np.ndarray) -> None:
            rows.append(row)
            cols.append(col)
            vals.append(np.broadcast_to(np.asarray(val, dtype=np.float64), row.shape))

        # per size: early, late, all (rows 0..3 ns)
        put(r + size_of, e, 1.0)
        put(r + ns + size_of, l_, 1.0)
        put(r + 2 * ns + size_of, e, 1.0)
        put(r + 2 * ns + size_of, l_, 1.0)
        r += 3 * ns
        # per third-plus size: certified early, all forced (negated: >=)
        plus_row = {j: k for k, j in enumerate(self.plus)}
        on_plus = np.array([j in plus_row for j in size_of], dtype=bool)
        k_of = np.array([plus_row.get(int(j), -1) for j in size_of], dtype=np.int64)
        put(r + k_of[on_plus], e[on_plus], -1.0)
        put(r + len(self.plus) + k_of[on_plus], e[on_plus], -1.0)
        put(r + len(self.plus) + k_of[on_plus], l_[on_plus], -1.0)
        r += 2 * len(self.plus)
        # per (configuration, size): e + l <= n x_c
        q = np.arange(nq)
        put(r + q, e, 1.0)
        put(r + q, l_, 1.0)
        put(r + q, conf_of, -np.array([n for _, _, n in pairs], dtype=np.float64))
        r += nq
        # per configuration: an anchor placed early
        put(r + np.arange(nc), np.arange(nc), 1.0)
        put(r + conf_of, e, -1.0)
        r += nc
        # GPUs
        put(np.full(nc + 1, r), np.append(np.arange(nc), w), 1.0)
        r += 1
        self.matrix = coo_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(r, w + 1),
        ).tocsr()
        gain = np.array([s for _, s, _ in pairs], dtype=np.float64)
        self.cost = -np.concatenate([np.zeros(nc), gain, gain, [float(FULL)]])
        self.fixed_rows = nq + nc  # limits of zero, then the GPUs

    def interval(self, a: int, b: int) -> float:
        """The most GPU milli a run whose pool runs out at some x in [a, b) allocates
        (-inf: no run does); [n, n): a run whose pool never runs out before the last pod."""
        before_b = self.arrived_before[b]
        late = self.arrived_before[self.n] - self.arrived_before[a]
        total = self.arrived_before[self.n]
        certified_a = self.certified_before[a]
        forced = self.always.copy()
        for i in self.early_set:
            if i >= a:
                break
            forced[self.sizes.index(int(self.milli[i]))] += 1
        limits = np.concatenate(
            [
                before_b,
                late,
                total,
                -certified_a[self.plus],
                -forced[self.plus],
                np.zeros(self.fixed_rows),
                [float(self.gpus)],
            ]
        )
        bounds = [(0.0, None)] * (self.nc + 2 * self.nq) + [(0.0, float(self.wholes_before[b]))]
        out = linprog(self.cost, A_ub=self.matrix, b_ub=limits, bounds=bounds, method="highs")
        if out.status == 2:
            return -np.inf
        if out.status != 0:
            raise ValueError(f"exhaustion programme not solved: {out.message}")
        return float(-out.fun) + SLACK * self.gpus * FULL

    def bound(self, start: int = 32, width: int = 8) -> float:
        """The largest `interval` over every x, refined where it is largest: any partition's
        largest bounds every run, so stopping early only loosens it."""
        never = self.interval(self.n, self.n)
        edges = sorted({int(t) for t in np.linspace(0, self.n, min(start, self.n) + 1)})
        heap = [(-self.interval(a, b), a, b) for a, b in itertools.pairwise(edges)]
        heapq.heapify(heap)
        while heap and -heap[0][0] > never and heap[0][2] - heap[0][1] > width:
            _, a, b = heapq.heappop(heap)
            mid = (a + b) // 2
            for lo, hi in ((a, mid), (mid, b)):
                heapq.heappush(heap, (-self.interval(lo, hi), lo, hi))
        return max(never, -heap[0][0]) if heap else never
