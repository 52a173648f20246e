"""What the contents a GPU can hold allow, for the composable ceiling (bench/packing_bound.py):
linear programmes over *configurations*, the multisets of fractions one GPU can hold
(sizes in whole milli summing to at most 1000), solved by scipy's HiGHS.

A run's GPUs at the end, counted by what they hold with the fractions counted by where
they sit, are a feasible point of `least_waste` if the run places the forced fractions,
and of `Anchored.most` under the limits of the case of a split it falls under (its pool
runs out at an x in [a, b): `Exhaustion.interval(a, b)`; the first fraction it drops is
one of a block of one shape: packing_bound.after_drop_programme). So each optimum bounds
every such run; model, host, CPU and memory are ignored, which only loosens it.
The programmes know the sizes of the fractions, not just their sum: 810 leaves 190 that no
320 can use, 470 + 470 leaves 60, and three fractions of 320 fill 960 of a GPU where a
splittable fill would fill it all.

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

`Anchored`: the most a run can allocate when some fractions may only join a GPU an earlier
pod had bound. `Exhaustion`: with all hosts pooled, that for a run whose pool runs out of
unbound GPUs at arrival x, for x in an interval [a, b) (see `Exhaustion.interval`), and the
largest of those over every x (`Exhaustion.bound`).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Limits:
    """What one case of a split allows, per fraction size (arrays in the order of
    `Anchored.sizes`), for `Anchored.most`."""

    anchors: np.ndarray  # may anchor a GPU: arrived before the GPUs stopped being bound
    free: np.ndarray  # may sit on any GPU (anchors among them)
    anchored: np.ndarray  # may only sit beside an anchor
    total: np.ndarray  # all of them together
    early: np.ndarray  # at least this many of the free ones placed
    placed: np.ndarray  # at least this many placed in all
    wholes: float  # whole GPUs that whole-GPU pods may take


class Anchored:
    """The most GPU milli a run can allocate when some fractions may only join a GPU that
    an earlier pod (an *anchor*) had bound, over what each GPU can hold.

    Both splits of the ceiling end in this shape: once the pool has run out, every later
    fraction needs a GPU bound before (`Exhaustion`); once a fraction has been dropped, a
    later pod asking at least its CPU and memory only fits a GPU bound before the drop
    (packing_bound.drop_split). A pod of no milli is an anchor too: it binds a GPU and
    leaves it free (where a fraction may not join a GPU bound with nothing taken, counting
    it so only loosens the bound); a configuration holds at most one, since more add
    nothing. Variables: for every maximal configuration c (what a GPU holds is part of
    one), the GPUs of it with an anchor (y_c) and without (z_c); on the first, per size s,
    the anchors e_cs, the other free fractions o_cs and the anchored ones b_cs; on the
    second the free fractions f_cs; w the GPUs whole-GPU pods take:

      maximise  sum_cs s (e_cs + o_cs + b_cs + f_cs) + 1000 w
      subject to
        e_cs + o_cs + b_cs <= (s's in c) y_c;  y_c <= sum_s e_cs;  f_cs <= (s's in c) z_c
        per size s: sum_c e_cs <= anchors;  sum_c (e_cs + o_cs + f_cs) <= free;
                    sum_c b_cs <= anchored;  all of them <= total;
                    sum_c (e_cs + o_cs + f_cs) >= early;  all of them >= placed
        sum_c (y_c + z_c) + w <= GPUs;  w <= wholes

    Only the limits change from case to case, so the matrix is built once. Without
    `unanchored` every GPU holds an anchor (the pool has run out, and the free fractions
    are the anchors): only y, e, b and w are variables, a programme half the size."""

    def __init__(self, sizes: Sequence[int], gpus: int, unanchored: bool = True):
        self.sizes, self.gpus = list(sizes), gpus
        positive = [s for s in sizes if s > 0]
        least = min(positive, default=FULL)
        configs = [c for c in contents(positive) if FULL - sum(c) < least]
        if 0 in sizes:
            configs = [(*c, 0) for c in configs] or [(0,)]
        column = {s: j for j, s in enumerate(self.sizes)}
        pairs = [
            (c, column[s], n) for c, held in enumerate(configs) for s, n in Counter(held).items()
        ]
        nc, nq, ns = len(configs), len(pairs), len(self.sizes)
        conf = np.array([c for c, _, _ in pairs], dtype=np.int64)
        size = np.array([j for _, j, _ in pairs], dtype=np.int64)
        held = np.array([n for _, _, n in pairs], dtype=np.float64)
        q, c = np.arange(nq), np.arange(nc)
        # variable blocks: y, e, b; with `unanchored` also o, z, f; w last
        y, e, b = 0, nc, nc + nq
        o, z, f = (b + nq, b + 2 * nq, b + 2 * nq + nc) if unanchored else (-1, -1, -1)
        w = f + nq if unanchored else b + nq
        free = (e, o, f) if unanchored else (e,)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []

        def put(row: np.ndarray, col: np.ndarray, val: float | np.ndarray) -> None:
            rows.append(row)
            cols.append(col)
            vals.append(np.broadcast_to(np.asarray(val, dtype=np.float64), row.shape))

        # per size, in the order of Limits: anchors, free, anchored, total, -early, -placed
        put(size, e + q, 1.0)
        for v in free:
            put(ns + size, v + q, 1.0)
            put(4 * ns + size, v + q, -1.0)
        put(2 * ns + size, b + q, 1.0)
        for v in (*free, b):
            put(3 * ns + size, v + q, 1.0)
            put(5 * ns + size, v + q, -1.0)
        r = 6 * ns
        for v in (e, b, o) if unanchored else (e, b):  # what an anchored GPU holds
            put(r + q, v + q, 1.0)
        put(r + q, y + conf, -held)
        put(r + nq + c, y + c, 1.0)  # its anchor
        put(r + nq + conf, e + q, -1.0)
        r += nq + nc
        gpus = [y + c]
        if unanchored:
            put(r + q, f + q, 1.0)  # what a GPU without one holds
            put(r + q, z + conf, -held)
            r += nq
            gpus.append(z + c)
        put(np.full(len(gpus) * nc + 1, r), np.concatenate([*gpus, [w]]), 1.0)
        self.matrix = coo_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(r + 1, w + 1),
        ).tocsr()
        gain = np.array([self.sizes[j] for j in size], dtype=np.float64)
        blocks = [np.zeros(nc), gain, gain]
        if unanchored:
            blocks += [gain, np.zeros(nc), gain]
        self.cost = -np.concatenate([*blocks, [FULL]])
        self.zero_rows = r - 6 * ns

    def most(self, limits: Limits) -> float:
        """The optimum (plus a rounding margin); -inf where no run meets the limits."""
        b_ub = np.concatenate(
            [
                limits.anchors,
                limits.free,
                limits.anchored,
                limits.total,
                -limits.early,
                -limits.placed,
                np.zeros(self.zero_rows),
                [float(self.gpus)],
            ]
        )
        bounds = [(0.0, None)] * (len(self.cost) - 1) + [(0.0, float(limits.wholes))]
        out = linprog(self.cost, A_ub=self.matrix, b_ub=b_ub, bounds=bounds, method="highs")
        if out.status == 2:
            return -np.inf
        if out.status != 0:
            raise ValueError(f"anchored programme not solved: {out.message}")
        return float(-out.fun) + SLACK * self.gpus * FULL


class Sizes:
    """The fractions of an arrival list counted per size, for any subset given as a mask,
    and the whole GPUs each pod asks (none for a fraction): what every case of a split
    hands `Anchored` as its limits."""

    def __init__(self, arriving: Sequence):
        milli = np.array([p.milli for p in arriving], dtype=np.int64)
        self.fraction = np.array([p.k == 1 and p.milli < FULL for p in arriving], dtype=bool)
        self.sizes = sorted({int(m) for m in milli[self.fraction]})
        self.column = np.searchsorted(self.sizes, milli)
        self.wholes = np.where(self.fraction, 0, [p.k for p in arriving]).astype(np.float64)

    def count(self, mask: np.ndarray) -> np.ndarray:
        """How many of the pods in `mask` are fractions of each size (order of `sizes`)."""
        chosen = self.column[mask & self.fraction]
        return np.bincount(chosen, minlength=len(self.sizes)).astype(np.float64)


class Exhaustion:
    """The pooled split: the most a run can allocate if the pool runs out of unbound GPUs at
    arrival x (the first x such that, once the pods before it are placed, no GPU is unbound).

    Before x every pod arrives to an unbound GPU, so those certified with one taken for
    granted (`early`) are placed; after x no whole-GPU pod is ever placed (it needs unbound
    GPUs), and a fraction only joins a GPU bound before x, beside an anchor that arrived
    before x. For x in [a, b) that is `Anchored` with: anchors and free fractions those
    that arrived before b, anchored ones those at a or later; at least the certified ones
    before a placed among the free, `always` placed anywhere; whole GPUs those asked before
    b. Any run that runs out in [a, b) gives a feasible point, so the optimum bounds it; an
    infeasible interval holds no run. `bound` takes the largest over a partition of the
    arrivals into intervals, splitting the interval that gives it until it is narrow, and
    the case where the pool runs out with the last pod or never (the interval [n, n):
    everything early)."""

    def __init__(self, arriving: Sequence, gpus: int, always: set[int], early: set[int]):
        self.n = len(arriving)
        self.index = np.arange(self.n)
        self.sizes = Sizes(arriving)
        self.programme = Anchored(self.sizes.sizes, gpus, unanchored=False)
        self.always = np.isin(self.index, list(always))
        self.early = self.always | np.isin(self.index, list(early))
        self.total = self.sizes.count(np.ones(self.n, dtype=bool))
        self.wholes_before = np.concatenate([[0.0], np.cumsum(self.sizes.wholes)])

    def interval(self, a: int, b: int) -> float:
        """The most GPU milli a run whose pool runs out at some x in [a, b) allocates
        (-inf: no run does); [n, n): one whose pool runs out with the last pod, or never."""
        count, index = self.sizes.count, self.index
        before_b = count(index < b)
        certified = self.early & (index < a)
        limits = Limits(
            anchors=before_b,
            free=before_b,
            anchored=count(index >= a),
            total=self.total,
            early=count(certified),
            placed=count(self.always | certified),
            wholes=float(self.wholes_before[b]),
        )
        return self.programme.most(limits)

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
