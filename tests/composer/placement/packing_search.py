"""Tiny hand-made clusters and an exhaustive search over every composable policy, for the
packing tests: the simulator's, the ceiling's (bench/packing_bound.py) and the product
engine's (bench/packing_product.py) answers are checked against it on small instances; and
the drop split's cases scanned one by one, against which its search is checked."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from bench.packing_bound import after_drop
from bench.packing_configs import least_waste
from bench.packing_data import FULL, Cluster, Pod, allowed_models, cluster_from_rows

Waste = Callable[[set[int]], tuple[float, float]]


def cluster(*nodes: tuple[int, int, int, str]) -> Cluster:
    """Nodes as (cores, memory GiB, GPUs, model)."""
    return cluster_from_rows(
        [
            {"cpu_milli": str(c * 1000), "memory_mib": str(m * 1024), "gpu": str(g), "model": mo}
            for c, m, g, mo in nodes
        ]
    )


def best_any_policy(cl: Cluster, domains: np.ndarray, pods: list[Pod]) -> int:
    """Exhaustive search over every composable policy (every placement a pod has, forced
    when it has one): the most GPU milli allocated at the end. A pod with a gpu_spec only
    takes GPUs of the models it names."""
    ngpu = int(cl.gpus.sum())
    gdom = np.repeat(domains, cl.gpus)
    gmodel = np.repeat(cl.model, cl.gpus)

    def go(i, cpu, mem, bound, free):
        if i == len(pods):
            return sum(FULL - f for f in free)
        p = pods[i]
        fits = allowed_models(p.spec, cl.models)[gmodel]
        options: list[tuple[int, list[int]]] = []
        for h in range(len(cpu)):
            if cpu[h] < p.cpu or mem[h] < p.mem:
                continue
            unb = [g for g in range(ngpu) if bound[g] < 0 and gdom[g] == domains[h] and fits[g]]
            if p.k == 0:
                options.append((h, []))
            elif p.milli < FULL:
                shared = [g for g in range(ngpu) if bound[g] == h and fits[g]]
                options += [(h, [g]) for g in shared if free[g] >= p.milli]
                if unb:
                    options.append((h, unb[:1]))
            elif len(unb) >= p.k:
                options.append((h, unb[: p.k]))
        if not options:
            return go(i + 1, cpu, mem, bound, free)
        best = 0
        for h, gpus in options:
            c, m, b, f = list(cpu), list(mem), list(bound), list(free)
            c[h] -= p.cpu
            m[h] -= p.mem
            for g in gpus:
                b[g] = h
                f[g] -= p.milli
            best = max(best, go(i + 1, c, m, b, f))
        return best

    return go(0, list(cl.cpu), list(cl.mem), [-1] * ngpu, [FULL] * ngpu)


def waste_of(pods: list[Pod]) -> Waste:
    """drop_split's `waste` over `pods`: (gaps, fill) at the least free capacity beside a set
    of them placed, against every fraction that arrived."""
    kinds = Counter(p.milli for p in pods if p.k == 1 and p.milli < FULL)

    def waste(forced: set[int]) -> tuple[float, float]:
        return least_waste(Counter(pods[i].milli for i in forced), kinds)

    return waste


def drop_cases(
    pods: list[Pod], certified: list[int], waste: Waste, capacity: int
) -> list[tuple[float, list[int], set[int]]]:
    """Every case of the drop split, in its order: min(R_k, capacity - waste), the fraction
    the case drops first ([] for the case that drops none) and the pods it places."""
    rest = sorted((x, i) for i, x in after_drop(pods).items() if i not in certified)
    cases = []
    for k in range(len(rest) + 1):
        placed = set(certified) | {i for _, i in rest[:k]}
        gaps, fill = waste(placed)
        if k < len(rest):
            cases.append((min(rest[k][0], capacity - (gaps - fill)), [rest[k][1]], placed))
        else:
            cases.append((capacity - (gaps - fill), [], placed))
    return cases
