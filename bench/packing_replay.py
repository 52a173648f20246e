"""The replay of bench/bench_packing.py: one run of a policy over a seed's workload (the
protocol's arrivals and sampling) and one composable ceiling, each as a job for a worker
process. Apart from the command line (bench_packing.py), so that the runs kept under a
digest of this code (bench/packing_runs.py) stay valid when only the command line changes.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.packing_bound import Host, ceiling
from bench.packing_data import (
    FGD_STRAND_WEIGHT,
    FULL,
    SAMPLES,
    TRACE_DIR,
    TUNE,
    Cluster,
    Pod,
    Run,
    cluster_from_rows,
    pod_from_row,
    read_csv,
    switch_domains,
    workload,
)
from bench.packing_fixed import FGD_VARIANTS, FixedSim, Fragmentation
from bench.packing_pool import PoolFgd, PoolFragment, PoolSim, share_fragment

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["ceiling_pct", "job", "product_sim", "simulate"]


def simulate(
    cluster: Cluster,
    pods: list[Pod],
    mode: str,
    policy: str,
    seed: int,
    frag: Fragmentation | None = None,
    samples=SAMPLES,
    tune: float = TUNE,
    strand: float | None = None,
) -> Run:
    capacity = cluster.gpu_total * FULL
    arriving = workload(pods, capacity, seed, tune)
    started = time.perf_counter()
    sim: Any
    if policy.startswith("composer"):  # the product's engine (bench/packing_product.py)
        sim = product_sim()(cluster, mode, policy, pods)
    elif mode == "fixed":
        gpu_pods = [p for p in pods if p.k]
        cpm = sum(p.cpu for p in gpu_pods) / max(1, sum(p.gpu for p in gpu_pods))
        sim = FixedSim(
            cluster,
            policy,
            frag if policy in FGD_VARIANTS else None,
            random.Random(seed),
            cpm,
            strand,
        )
    else:
        share = [p for p in arriving if p.k == 1 and p.milli < FULL]
        cpm = sum(p.cpu for p in share) / max(1, sum(p.milli for p in share))
        ratio = sum(p.cpu for p in arriving) / max(1, sum(p.gpu for p in arriving))
        domains = (
            switch_domains(cluster)
            if mode == "domain"
            else np.zeros(len(cluster.cpu), dtype=np.int64)
        )
        if policy in ("fgd", "fgd-bal"):
            gpu_pods = [p for p in pods if p.k]
            rho = sum(p.cpu for p in gpu_pods) / max(1, sum(p.gpu for p in gpu_pods))
            weight = (FGD_STRAND_WEIGHT if strand is None else strand) if policy == "fgd-bal" else 0
            sim = PoolFgd(cluster, domains, PoolFragment(pods), weight, rho)
        else:
            sim = PoolSim(
                cluster,
                domains,
                policy,
                cpm,
                ratio,
                share_fragment(pods) if policy == "balance" else None,
            )
    run = Run()
    # the authors' sampling: the mean allocation over the arrivals whose arrived GPU request
    # rounds to the point (x - 0.5 % .. x + 0.5 %); none there: those within one point
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0])
    arrived = 0
    for pod in arriving:
        if not sim.place(pod):
            run.dropped += 1
        arrived += pod.gpu
        pct = 100.0 * arrived / capacity
        near = math.floor(pct + 0.5)
        for x in samples:
            if abs(pct - x) <= 1.5:
                key = x if near == x else -x  # -x: the one-point fallback
                sums[key][0] += 100.0 * sim.allocated / capacity
                sums[key][1] += 1
    for x in samples:
        total, count = sums.get(x) or sums.get(-x) or [100.0 * sim.allocated / capacity, 1]
        run.samples[x] = total / count
    run.seconds = time.perf_counter() - started
    run.skipped = getattr(sim, "skipped", 0)
    return run


def product_sim() -> Any:
    """bench/packing_product.ProductSim, imported on first use (it imports this module, and
    the product: the repository root goes on the path when run as a script)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.packing_product import ProductSim

    return ProductSim


def job(args: tuple) -> tuple[str, tuple[str, str, str], int, Run | float]:
    """One simulation ("run", trace, mode, policy, seed, strand) or one composable ceiling
    ("bound", trace, mode, "", seed, None), in a worker process."""
    kind, trace, mode, policy, seed, strand = args
    cluster = cluster_from_rows(read_csv(TRACE_DIR / "openb_node_list_gpu_node.csv"))
    pods = [pod_from_row(r) for r in read_csv(TRACE_DIR / f"openb_pod_list_{trace}.csv")]
    if kind == "bound":
        return kind, (trace, mode, ""), seed, ceiling_pct(cluster, pods, mode, seed)
    frag = Fragmentation(pods, cluster.models) if policy in FGD_VARIANTS else None
    run = simulate(cluster, pods, mode, policy, seed, frag, strand=strand)
    return kind, (trace, mode, policy), seed, run


def ceiling_pct(cluster: Cluster, pods: list[Pod], mode: str, seed: int) -> float:
    """The provable ceiling (bench/packing_bound.py) on GPU allocation % at the end of the
    seed's workload (130 % arrived), for any policy in composable `mode`."""
    capacity = cluster.gpu_total * FULL
    arriving = workload(pods, capacity, seed)
    pooled = mode == "all"
    domains = np.zeros(len(cluster.cpu), dtype=np.int64) if pooled else switch_domains(cluster)
    hosts = Host(cluster.cpu, cluster.mem, cluster.gpus, domains)
    return 100.0 * ceiling(hosts, arriving, cluster.gpu_total, pooled).milli / capacity
