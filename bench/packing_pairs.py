"""The least capacity the GPUs holding given fractions must leave free, for the composable
ceiling (bench/packing_bound.py): a linear programme over how those fractions pair on their
GPUs and how the smaller fractions fill what is left.

A fraction of more than a third of a GPU (sizes are whole milli, so 334 or more: "a
third-plus") shares its GPU with at most one other such fraction (three would need 1,002
milli). So every GPU that holds one has a *skeleton*, the one or two third-plus fractions
on it, and what the skeleton leaves (its gap) only fractions of at most a third can use.
Two fractions of more than half a GPU never pair; 470 + 470 leaves 60 milli that almost no
fraction of the Alibaba trace fits, 810 leaves 190. The least free capacity of the GPUs
holding the fractions that every run places (`forced`, sizes to counts) is at least the
optimum of:

  minimise  sum over skeletons k of gap_k x_k  -  sum over (s, g) of y_sg
  subject to
    for every third-plus size a:  forced_a <= sum_k (a's in k) x_k <= arrived_a
    for every smaller size s:     sum_g y_sg <= s arrived_s         (what there is of it)
    for every gap g:              sum_{s <= g} y_sg <= g sum_{k: gap_k = g} x_k
    x, y >= 0;  x_aa <= floor(arrived_a / 2)

x_k counts GPUs of skeleton k; a skeleton's partner may be any arrival (placed or not, the
relaxation lets it be placed). y_sg is the milli of fractions of size s put into gaps of g:
splittable, but only into gaps at least their size. Every run's GPUs give a feasible point
(count its skeletons and what fills their gaps), so the optimum is at most what any run
leaves free there; GPUs without a forced fraction are taken as full. Model, host and CPU
are ignored, which only lowers the optimum. Adding a forced fraction shrinks the feasible
set, so the optimum never falls as the forced set grows (drop_split relies on it; the
rounding margin taken off it only ever raises the ceiling).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.optimize import linprog

FULL = 1000
THIRD = 333  # a fraction above this shares its GPU with at most one other such fraction
# HiGHS solves to absolute tolerances (1e-7 by default); the bound takes this share of the
# gaps (never less than the optimum) off the least waste, so a rounding error never turns
# into a ceiling below what some run reaches.
SLACK = 1e-7


def pairing_waste(forced: Mapping[int, int], arrived: Mapping[int, int]) -> tuple[float, float]:
    """(gaps, fill) at the optimum of the programme above: the skeletons' gaps, and how much
    of them fractions of at most a third fill (the least waste is gaps - fill). `forced` and
    `arrived` map a fraction's milli to how many; `forced` holds third-plus sizes only and
    is counted within `arrived`."""
    if not any(forced.values()):
        return 0.0, 0.0
    for size, count in forced.items():
        if count and not (THIRD < size < FULL and count <= arrived.get(size, 0)):
            raise ValueError(f"forced {count} x {size} milli: not above a third, or not arrived")
    plus = sorted(a for a, n in arrived.items() if THIRD < a < FULL and n > 0)
    small = sorted(s for s, n in arrived.items() if 0 < s <= THIRD and n > 0)
    skeletons = [(a,) for a in plus]
    skeletons += [(a, b) for i, a in enumerate(plus) for b in plus[i:] if a + b <= FULL]
    gap = np.array([FULL - sum(k) for k in skeletons], dtype=np.float64)
    gaps = sorted(set(gap.tolist()))
    fills = [(s, g) for s in small for g in gaps if s <= g]
    nx, ny = len(skeletons), len(fills)
    rows: list[np.ndarray] = []
    bounds: list[float] = []
    for a in plus:
        use = np.zeros(nx + ny)
        use[:nx] = [k.count(a) for k in skeletons]
        rows += [-use, use]
        bounds += [-float(forced.get(a, 0)), float(arrived[a])]
    for s in small:
        row = np.zeros(nx + ny)
        row[nx:] = [1.0 if f[0] == s else 0.0 for f in fills]
        rows.append(row)
        bounds.append(float(s * arrived[s]))
    for g in gaps:
        row = np.zeros(nx + ny)
        row[:nx] = np.where(gap == g, -g, 0.0)
        row[nx:] = [1.0 if f[1] == g else 0.0 for f in fills]
        rows.append(row)
        bounds.append(0.0)
    cost = np.concatenate([gap, -np.ones(ny)])
    # a pair of one size needs two of it: at most half of them, rounded down, so a single
    # fraction is never half of such a pair (a cut every real packing meets)
    limits = [
        (0.0, arrived[k[0]] // 2 if len(k) == 2 and k[0] == k[1] else None) for k in skeletons
    ]
    limits += [(0.0, None)] * ny
    out = linprog(cost, A_ub=np.array(rows), b_ub=np.array(bounds), bounds=limits, method="highs")
    if out.status != 0:  # feasible by construction (every forced fraction alone)
        raise ValueError(f"pairing programme not solved: {out.message}")
    x = out.x
    gaps_milli = float(gap @ x[:nx])
    fill = float(x[nx:].sum())
    # the optimum less a rounding margin, as gaps and a fill (never more fill than gaps)
    return gaps_milli, min(gaps_milli, fill + SLACK * max(gaps_milli, 1.0))
