"""Benchmark: GPU packing quality on the Alibaba GPU cluster trace (FGD, USENIX ATC'23).

Run from the repository root with the project's virtual environment (needs numpy, which is
not a dependency of the product: `pip install numpy` into the venv to run it):

    .venv/bin/python bench/bench_packing.py                     # everything, writes the docs
    .venv/bin/python bench/bench_packing.py --seeds 2 --traces default --modes fixed --no-write
    .venv/bin/python bench/bench_packing.py --seeds 3 --traces default --policies composer \
        --no-bound --no-write                   # the product's engine alone, a few seeds

Data (read in place, never copied), under `$COMPOSER_BENCH_DATA` (default `var/bench-data/`):
`alibaba-gpu-v2023/`, Alibaba's public GPU cluster trace (cluster-trace-gpu-v2023 of
alibaba/clusterdata): the cluster is `openb_node_list_gpu_node.csv` (1,213 nodes, 6,212
GPUs), the pods each `openb_pod_list_*.csv`; `fgd-atc23-results/`, the published curves
(`fgd_alloc_curve_summary.csv`, from the FGD authors' artifact), optional.

Protocol: that of the FGD authors' simulator (hkust-adsl/kubernetes-scheduler-simulator,
read for this; nothing of it is copied). Per seed (42..51) the trace's pods are shuffled and
random copies of trace pods appended while the GPU request stays within 130 % of the
cluster's GPU capacity (pkg/simulator/core.go, simulator.go `TunePodsByNodeTotalResource`:
the copies come after the shuffled trace, and the loop stops at the first copy whose per-GPU
milli would cross the target); pods arrive one by one and never leave; a pod that fits
nowhere is dropped. The metric is GPU allocation % = allocated GPU milli / (6,212 * 1,000)
at 100 % and 130 % arrived, sampled as their analysis does (experiments/analysis/
merge_alloc_discrete*.py): the mean over the arrivals whose arrived GPU request rounds to
that percent.

Fit rules. A pod asks `cpu_milli`, `memory_mib`, `num_gpu` and `gpu_milli`; `num_gpu == 1`
with `gpu_milli < 1000` is a shared fraction of one GPU (several such pods share a GPU while
their milli sum stays <= 1000); otherwise it takes `num_gpu` whole GPUs. CPU and memory come
from one host. `gpu_spec` ("A|B") limits the GPU models; the GPUs of one pod are of one model.

Modes:

* fixed: each trace node is a server with its own GPUs (the classical setting).
* domain: composable; the same hosts keep their CPU and memory, but their GPUs form a pool per
  switch domain of 8 hosts: the nodes sorted by (GPU model, trace order) and cut in runs of 8
  (the last run of a model may be shorter), so a domain holds one GPU model. A pod takes CPU
  and memory from one host of a domain and whole GPUs, or a fraction of one GPU, from that
  domain's pool; the GPUs are bound to that host. A shared GPU stays bound to the host that
  opened it: later fractions of it can go only to pods on that host (no departures, so
  nothing is ever unbound).
* all: composable across all hosts (one pool of 6,212 GPUs, mixed models).

FGD (Weng et al., ATC'23, Sec. 4) as the authors' simulator runs it. Task types m = (cpu,
num_gpu, gpu_milli, gpu_spec) of the trace (memory is not part of a type), most popular
first, kept until they cover 95 % of the pods, popularity renormalised over those
(pkg/utils/frag.go `GetTypicalPods`, with scripts/generate_config_and_run.py's
--pod-popularity-threshold 95 and --pod-increase-step 1). A node's fragment for a GPU type
is the free milli of its GPUs below the type's per-GPU request if the type fits, else all
of its free GPU milli (not enough CPU, wrong model, too few GPUs with the request free);
for a CPU-only type it is all of the free GPU milli whether the CPU fits or not (frag.go
`NodeGpuShareFragAmount` sums every class but "Q3 satisfied", the "XL" class included).
F_n(M) = sum_m p_m F_n(m). The score of a placement is the authors' integer
int(100 * sigmoid(-increase / 1000)) (pkg/simulator/plugin/fgd_score.go), a fraction goes to
the first GPU (lowest index) of the best score, whole GPUs to the first untouched ones. The
node of the best score wins; a tie goes to the node with the lowest rank in a random
permutation of the nodes drawn once per seed. That last rule is what the earlier version of
this benchmark lacked (it took exact increases and the lowest node index; with random ties
it was as far off): the authors build against a patched Kubernetes
(go.mod `k8s.io/kubernetes => github.com/mental2008/kubernetes v1.20.5-minor`, vendored) whose
`selectHost` (vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go) keeps the
smallest node name among equal scores "for reproducibility", where stock Kubernetes picks one
at random, and `syncClusterResourceList` (pkg/simulator/simulator.go) renames every node
"%04d-<name>" with a seeded `rand.Perm`. With integer scores hundreds of nodes tie for a
typical pod, so the rule makes FGD pack first-fit along a fixed random order, which is worth
about 5 points on the default trace (`fgd-stock`: the same FGD, random ties) and closes the
gap to the published figures on every trace.

Policies (mode: policy). `composer`, in every mode, is the product's engine: the trace is
replayed through `composer.placement.engine.place()` on snapshots and requests built from
it (bench/packing_product.py, whose docstring gives the mapping: units, modes as reach,
`gpu_spec`, shared GPUs); `composer-pack` is the same with the request policy "pack" and
runs only when named in --policies. Every other policy below is re-implemented here, for
speed and as the published baselines, and the table labels it so:

* fixed: `fgd` (above), `fgd-stock` (the same with stock Kubernetes' random ties), `fgd-bal`
  (below), `bestfit` (the authors' BestFit: 100 * (1 - (0.5 * CPU left / 128 cores + 0.5 *
  GPU milli left / 8 GPUs)) as an integer, pkg/simulator/plugin/best_fit_score.go, ties by
  rank, a fraction on the fullest GPU that fits) and `random` (a random feasible node and,
  as their --gpusel random, a random GPU that fits).
* `fgd-bal` adds the CPU:GPU balance to `fgd`: before the integer score the increase gets
  FGD_STRAND_WEIGHT times the increase of the node's stranded GPU milli, max(0, free GPU
  milli - free CPU / rho), with rho the trace's CPU milli per GPU milli over its GPU pods:
  the GPU milli the node's CPU can no longer feed if average GPU pods keep coming. FGD looks
  one pod ahead and only sees a node's CPU run out for a type once it has; the term sees it
  coming. The weight is 1 (the same unit as F(M)) and was not tuned: a sweep over 0.5, 1,
  2, 4 on cpu250 and gpushare100 (seeds 42..45) and on default seeds 52..55 (`--first-seed
  52 --strand-weight W`) is flat between 0.5 and 1 and falls on cpu250 above it; the default
  trace's seeds 42..51 were never used to choose it, so its figure is out-of-sample.
* domain / all: `fgd` is FGD's measure over a pool (PoolFragment: a partly used GPU is a
  fragment for the types it cannot serve, counting its host's free CPU, and a domain's
  unbound GPUs for the types none of its hosts has the CPU for); every placement takes the
  smallest increase, ties to a partly used GPU, then to the snuggest host on CPU. `fgd-bal`
  adds the stranded-GPU term of the domain (weight 1, as above); with all hosts pooled that
  term shifts every placement of a pod alike, so only `fgd-bal` is run there. `balance` (the earlier
  policy: CPU reserved for the rest of a partly used GPU at the workload's CPU per GPU milli
  of fractions, fractions finishing partly used GPUs by a GPU-only FGD-like measure, domains
  kept at the workload's CPU:GPU ratio) and `bestfit` (naive pooling: the host with the
  least CPU left, a fraction on the fullest GPU bound to it that fits, else a fresh one).

The composable ceiling (bench/packing_bound.py, whose docstring has the proof): placement
is forced, so every fraction above 500 milli that arrives while, provably, an unbound GPU and
a host with its CPU and memory exist is placed, alone on its GPU with a gap only smaller pods
can use; the bound takes those gaps, fills them as well as all small fractions that arrive
could, and subtracts the rest from capacity (with all hosts pooled also splitting on when
the pool runs out of unbound GPUs). A second argument splits on which big fractions a run
drops: dropping one means no host has its CPU and memory next to an unbound GPU any more, so
every later whole-GPU pod asking at least as much is dropped too, which caps that run; a run
that drops none places them all. The ceiling is the lower of the two. Both are checked
against an exhaustive search over all policies on small instances in the tests.

The increase of a (node state, pod shape) is cached per shape and recomputed only for the
nodes that changed since that shape was last scored, which keeps a 10,000-pod run of a
re-implemented policy to seconds; a `composer` run takes minutes (the engine decides each
pod on the whole fabric and explains it), so the full table takes hours.

Targets: fixed >= 95.4 % and composable >= 98 % at 130 % arrived on the default trace for
the best policy; for the product's engine, fixed >= 95.8 % and composable >= 96.5 %. The
script writes its section of docs/benchmarks.md either way (not with --no-write, nor from a
run of other seeds or weights).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

try:
    from bench.packing_bound import Host, ceiling
except ImportError:  # run as a script: bench/ is on the path, the repository root is not
    from packing_bound import Host, ceiling

ROOT = Path(__file__).resolve().parent.parent
# The public data sets, read in place: COMPOSER_BENCH_DATA, else var/bench-data/.
DATA = Path(os.environ.get("COMPOSER_BENCH_DATA") or ROOT / "var" / "bench-data")
TRACE_DIR = DATA / "alibaba-gpu-v2023"
RESULTS = DATA / "fgd-atc23-results" / "fgd_alloc_curve_summary.csv"
TUNE = 1.3
SEEDS = tuple(range(42, 52))
MODES = ("fixed", "domain", "all")
POLICIES = {  # "composer": the product's engine; the others are re-implemented here
    "fixed": ("composer", "fgd", "fgd-stock", "fgd-bal", "bestfit", "random"),
    "domain": ("composer", "fgd", "fgd-bal", "balance", "bestfit"),
    # pooled, fgd-bal's stranded term is the same for every placement of a pod: it is fgd
    "all": ("composer", "fgd-bal", "balance", "bestfit"),
}
OPTIONAL = ("composer-pack",)  # run only when named in --policies
PRODUCT = ("composer", "composer-pack")
DOMAIN_SIZE = 8
FGD_STRAND_WEIGHT = 1.0  # fgd-bal: weight of the stranded-GPU increase against F(M)'s
TYPICAL_POPULARITY = 0.95  # the authors' typical pods: top shapes covering 95 % of the pods
MAX_SPEC_CPU = 128_000  # the authors' BestFit normalises by the largest node spec
MAX_SPEC_GPU = 8_000
PARTIAL_SLACK = 0.0  # milli: how much worse a partly used GPU may be than a fresh one
DOMAIN_FIT_WEIGHT = 0.1  # host snugness against the domain balance (both CPU milli)
SAMPLES = (100, 130)
PRODUCT_TARGETS = {"fixed": 95.8, "domain": 96.5, "all": 96.5}  # the engine, @130 %, default
FULL = 1000


# --------------------------------------------------------------------------- data


@dataclass
class Cluster:
    cpu: np.ndarray  # milli per node
    mem: np.ndarray  # MiB per node
    gpus: np.ndarray  # GPUs per node
    model: np.ndarray  # model index per node
    models: list[str]

    @property
    def gpu_total(self) -> int:
        return int(self.gpus.sum())


@dataclass(frozen=True)
class Pod:
    cpu: int
    mem: int
    k: int  # GPUs asked (0: CPU only)
    milli: int  # per GPU; < 1000 only when k == 1 (a shared fraction)
    spec: str = ""

    @property
    def gpu(self) -> int:
        return self.k * self.milli


def cluster_from_rows(rows: list[dict[str, str]]) -> Cluster:
    models = sorted({r["model"] for r in rows})
    index = {m: i for i, m in enumerate(models)}
    return Cluster(
        cpu=np.array([int(r["cpu_milli"]) for r in rows], dtype=np.int64),
        mem=np.array([int(r["memory_mib"]) for r in rows], dtype=np.int64),
        gpus=np.array([int(r["gpu"]) for r in rows], dtype=np.int64),
        model=np.array([index[r["model"]] for r in rows], dtype=np.int64),
        models=models,
    )


def pod_from_row(r: dict[str, str]) -> Pod:
    k = int(r["num_gpu"])
    milli = int(r["gpu_milli"]) if k else 0
    if k > 1:
        milli = FULL
    return Pod(int(r["cpu_milli"]), int(r["memory_mib"]), k, milli, r.get("gpu_spec") or "")


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def workload(pods: list[Pod], capacity_milli: int, seed: int, tune: float = TUNE) -> list[Pod]:
    """The arriving pods, as the authors' simulator builds them with `seed`: the trace's pods
    shuffled, then random copies of trace pods appended while the GPU request stays within
    `tune` x capacity (their loop stops at the first copy whose per-GPU milli would cross
    it); a trace already above the target loses random pods instead."""
    rng = random.Random(seed)
    out = list(pods)
    rng.shuffle(out)
    total = sum(p.gpu for p in out)
    target = tune * capacity_milli
    if total > target or not any(p.gpu for p in pods):
        while total > target:
            total -= out.pop(rng.randrange(len(out))).gpu
        return out
    while True:
        p = rng.choice(pods)
        if total + p.milli > target:
            return out
        out.append(p)
        total += p.gpu


def allowed_models(spec: str, models: list[str]) -> np.ndarray:
    if not spec:
        return np.ones(len(models), dtype=bool)
    wanted = set(spec.split("|"))
    return np.array([m in wanted for m in models], dtype=bool)


# --------------------------------------------------------------------------- FGD


class Fragmentation:
    """Expected GPU fragmentation F(M) of node states against the workload's task types."""

    def __init__(
        self,
        pods: list[Pod],
        models: list[str],
        popularity: float = TYPICAL_POPULARITY,
        step: int = 1,
    ):
        counts: dict[tuple[int, int, int, str], int] = defaultdict(int)
        for p in pods:
            counts[(p.cpu, p.k, p.milli, p.spec)] += 1
        # most popular first; equal counts: larger (cpu, milli, k, spec) first, as the
        # authors' reverse sort does
        types = sorted(counts, key=lambda t: (counts[t], t[0], t[2], t[1], t[3]), reverse=True)
        if popularity < 1.0:  # the authors' walk: top types, `step` at a time, to the threshold
            total, keep, cum = sum(counts.values()), 0, 0
            while cum < popularity * total and keep < len(types):
                for t in types[keep : keep + step]:
                    cum += counts[t]
                keep += step
            types = types[:keep]
        n = sum(counts[t] for t in types)
        self.cpu = np.array([t[0] for t in types], dtype=np.int64)
        self.k = np.array([t[1] for t in types], dtype=np.int64)
        thresholds = sorted({t[2] if t[1] else FULL for t in types})
        self.r = np.array(thresholds, dtype=np.int64)
        self.rj = np.array([thresholds.index(t[2] if t[1] else FULL) for t in types])
        self.p = np.array([counts[t] / n for t in types], dtype=np.float64)
        ok = np.array([allowed_models(t[3], models) for t in types], dtype=bool)  # [T, M]
        ok[self.k == 0] = True
        self.model_ok = ok.T.copy()  # [M, T]
        self.gpu_type = self.k > 0

    def __call__(self, cpu: np.ndarray, free: np.ndarray, model: np.ndarray) -> np.ndarray:
        """F(M) for S states: free CPU [S], free milli per GPU [S, G], model index [S]."""
        f = free[:, :, None]
        ge = (f >= self.r).sum(1)  # [S, R] GPUs with at least r free
        lt = np.where(f < self.r, f, 0).sum(1)  # [S, R] free milli of GPUs below r
        tot = free.sum(1)[:, None]
        ok = (cpu[:, None] >= self.cpu) & self.model_ok[model] & (ge[:, self.rj] >= self.k)
        # a GPU type that fits sees the GPUs below its per-GPU request; one that does not fit
        # (CPU, model or GPUs short) and every CPU-only type see all the free GPU milli
        frag = np.where(ok & self.gpu_type, lt[:, self.rj], tot)
        return frag @ self.p


# --------------------------------------------------------------------------- fixed mode


@dataclass(frozen=True)
class FgdVariant:
    """How an FGD policy turns fragmentation increases into a node choice.

    Every variant scores like the authors' plugin (`k8s_score` of the increase, the GPU of a
    node with the best score and the lowest index); they differ in the tie between nodes of
    equal score, which is most of the decisions (hundreds of nodes tie for a typical pod)."""

    ties: str = "rank"  # "rank": the authors' patched selectHost; "random": stock Kubernetes
    strand: float = 0.0  # weight of the increase of the node's stranded GPU milli (fgd-bal)


FGD_VARIANTS = {
    "fgd": FgdVariant(),
    "fgd-stock": FgdVariant(ties="random"),
    "fgd-bal": FgdVariant(strand=FGD_STRAND_WEIGHT),
}


def k8s_score(increase: np.ndarray) -> np.ndarray:
    """The authors' FGD plugin score: int(100 * sigmoid(-increase / 1000)), 0..100."""
    with np.errstate(over="ignore"):
        return np.floor(100.0 / (1.0 + np.exp(np.asarray(increase, dtype=np.float64) / 1000.0)))


def stranded(cpu: np.ndarray, gpu: np.ndarray, cpu_per_milli: float) -> np.ndarray:
    """GPU milli a node's free CPU cannot feed at the workload's CPU per GPU milli: what is
    left idle once the CPU runs out, if the node keeps receiving average GPU pods."""
    return np.maximum(gpu - np.maximum(cpu, 0) / cpu_per_milli, 0.0)


class FixedSim:
    """Servers with their own GPUs. `free[n, g]` is GPU g's free milli (0 where absent).

    Ties between nodes of equal score go, as in the authors' simulator, to the node with the
    lowest rank: a random permutation of the nodes drawn once per seed (their node names get a
    random `%04d-` prefix and their patched `selectHost` keeps the smallest name)."""

    def __init__(
        self,
        cluster: Cluster,
        policy: str,
        frag: Fragmentation | None,
        rng: random.Random,
        cpu_per_milli: float = 0.0,
        strand: float | None = None,
    ):
        self.c = cluster
        self.policy = policy
        self.frag = frag
        self.rng = rng
        self.variant = FGD_VARIANTS.get(policy)
        if self.variant is not None and strand is not None and self.variant.strand:
            self.variant = replace(self.variant, strand=strand)
        n, g = len(cluster.cpu), int(cluster.gpus.max())
        self.cpu = cluster.cpu.copy()
        self.mem = cluster.mem.copy()
        self.free = np.zeros((n, g), dtype=np.int64)
        for i, count in enumerate(cluster.gpus):
            self.free[i, :count] = FULL
        self.nfull = cluster.gpus.copy()
        self.maxfree = np.where(cluster.gpus > 0, FULL, 0)
        self.gfree = cluster.gpus * FULL
        self.allocated = 0
        self.ver = np.zeros(n, dtype=np.int64)
        perm = list(range(n))
        rng.shuffle(perm)
        self.rank = np.array(perm, dtype=np.int64)
        self.cpm = cpu_per_milli
        self.cache: dict[Pod, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        if self.variant is not None:
            if frag is None:
                raise ValueError(f"{policy} needs the workload's fragmentation measure")
            if self.variant.strand and cpu_per_milli <= 0:
                raise ValueError(f"{policy} needs the workload's CPU per GPU milli")
            self.F = frag(self.cpu, self.free, cluster.model)

    def feasible(self, pod: Pod, idx=None) -> np.ndarray:
        sl = slice(None) if idx is None else idx
        ok = (self.cpu[sl] >= pod.cpu) & (self.mem[sl] >= pod.mem)
        if pod.k:
            ok &= allowed_models(pod.spec, self.c.models)[self.c.model[sl]]
            ok &= (self.maxfree[sl] >= pod.milli) if pod.milli < FULL else (self.nfull[sl] >= pod.k)
        return ok

    def gpu_choice(self, n: int, pod: Pod) -> int:
        """The GPU of node n for a fraction: best fit (the fullest that fits, lowest index on
        ties) as the authors' `best` GPU selection, or any that fits for `random`."""
        row = self.free[n]
        fits = np.nonzero(row >= pod.milli)[0]
        if self.policy == "random":
            return int(fits[self.rng.randrange(len(fits))])
        return int(fits[np.argmin(row[fits])])

    def lowest_rank(self, ties: np.ndarray) -> int:
        return int(ties[np.argmin(self.rank[ties])])

    def place(self, pod: Pod) -> bool:
        if self.variant is not None:
            n, g = self.fgd(pod)
        else:
            cand = np.nonzero(self.feasible(pod))[0]
            if not len(cand):
                return False
            if self.policy == "random":
                n = int(cand[self.rng.randrange(len(cand))])
            else:  # the authors' BestFit: leftover over the largest node spec, 0..100
                left = 0.5 * (self.cpu[cand] - pod.cpu) / MAX_SPEC_CPU
                left = left + 0.5 * (self.gfree[cand] - pod.gpu) / MAX_SPEC_GPU
                score = np.floor((1.0 - left) * 100.0)
                n = self.lowest_rank(cand[score == score.max()])
            g = self.gpu_choice(n, pod) if pod.k == 1 and pod.milli < FULL else -1
        if n < 0:
            return False
        self.commit(n, g, pod)
        return True

    def commit(self, n: int, g: int, pod: Pod) -> None:
        self.cpu[n] -= pod.cpu
        self.mem[n] -= pod.mem
        row = self.free[n]
        if pod.k == 1 and pod.milli < FULL:
            row[g] -= pod.milli
        elif pod.k:
            full = np.nonzero(row == FULL)[0][: pod.k]
            row[full] = 0
        self.nfull[n] = int((row == FULL).sum())
        self.maxfree[n] = int(row.max())
        self.gfree[n] -= pod.gpu
        self.allocated += pod.gpu
        self.ver[n] += 1
        if self.frag is not None:
            self.F[n] = self.frag(self.cpu[n : n + 1], row[None, :], self.c.model[n : n + 1])[0]

    def fgd_scores(self, pod: Pod, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Increase of F(M) (inf where infeasible) and the GPU chosen, for nodes `idx`. For a
        fraction the GPU is the authors' choice: the best integer score, then the lowest
        index; the increase kept is that GPU's."""
        score = np.full(len(idx), np.inf)
        choice = np.full(len(idx), -1, dtype=np.int64)
        ok = self.feasible(pod, idx)
        pos = np.nonzero(ok)[0]
        if not len(pos):
            return score, choice
        nodes = idx[pos]
        cpu = self.cpu[nodes] - pod.cpu
        free = self.free[nodes]
        model = self.c.model[nodes]
        if pod.k == 1 and pod.milli < FULL:
            rows, cols = np.nonzero(free >= pod.milli)
            states = free[rows].copy()
            states[np.arange(len(rows)), cols] -= pod.milli
            delta = self.frag(cpu[rows], states, model[rows]) - self.F[nodes][rows]
            order = np.lexsort((cols, -k8s_score(delta), rows))
            best = order[np.unique(rows[order], return_index=True)[1]]
            score[pos[rows[best]]] = delta[best]
            choice[pos[rows[best]]] = cols[best]
        else:
            if pod.k:
                full = free == FULL
                take = full & (np.cumsum(full, axis=1) <= pod.k)
                free = np.where(take, 0, free)
            score[pos] = self.frag(cpu, free, model) - self.F[nodes]
        return score, choice

    def fgd(self, pod: Pod) -> tuple[int, int]:
        entry = self.cache.get(pod)
        if entry is None:
            n = len(self.cpu)
            entry = (
                np.full(n, np.inf),
                np.full(n, -1, dtype=np.int64),
                np.full(n, -1, dtype=np.int64),
            )
            self.cache[pod] = entry
        increase, choice, stamp = entry
        stale = np.nonzero(stamp != self.ver)[0]
        if len(stale):
            increase[stale], choice[stale] = self.fgd_scores(pod, stale)
            stamp[stale] = self.ver[stale]
        ok = np.isfinite(increase)
        if not ok.any():
            return -1, -1
        cand = np.nonzero(ok)[0]
        total = increase[cand]
        if self.variant.strand:  # the CPU:GPU balance: GPU milli the node's CPU cannot feed
            before = stranded(self.cpu[cand], self.gfree[cand], self.cpm)
            after = stranded(self.cpu[cand] - pod.cpu, self.gfree[cand] - pod.gpu, self.cpm)
            total = total + self.variant.strand * (after - before)
        score = k8s_score(total)
        ties = cand[score == score.max()]
        if self.variant.ties == "rank":
            n = self.lowest_rank(ties)
        else:
            n = int(ties[self.rng.randrange(len(ties))])
        return n, int(choice[n])


# --------------------------------------------------------------------------- composable


class PoolSim:
    """Composable: hosts keep CPU and memory; GPUs are pooled per domain and bound to the
    host of the pod that takes them. A GPU opened for a fraction stays bound to that host."""

    def __init__(
        self,
        cluster: Cluster,
        domains: np.ndarray,
        policy: str,
        cpm: float,
        ratio: float,
        phi: np.ndarray | None = None,
    ):
        self.c = cluster
        self.policy = policy
        self.cpm = cpm  # CPU milli per GPU milli of fractional pods (reservation)
        self.ratio = ratio  # workload CPU milli per GPU milli
        self.dom = domains
        self.ndom = int(domains.max()) + 1
        nm = len(cluster.models)
        self.cpu = cluster.cpu.copy()
        self.mem = cluster.mem.copy()
        gm, gd = [], []
        for n, count in enumerate(cluster.gpus):
            gm += [int(cluster.model[n])] * int(count)
            gd += [int(domains[n])] * int(count)
        self.gmodel = np.array(gm, dtype=np.int64)
        self.gdom = np.array(gd, dtype=np.int64)
        self.gfree = np.full(len(gm), FULL, dtype=np.int64)
        self.gbound = np.full(len(gm), -1, dtype=np.int64)
        self.pool = np.zeros((self.ndom, nm), dtype=np.int64)
        self.unbound: dict[tuple[int, int], list[int]] = defaultdict(list)
        for i in range(len(gm) - 1, -1, -1):
            self.unbound[(gd[i], gm[i])].append(i)
            self.pool[gd[i], gm[i]] += 1
        self.reserve = np.zeros(len(self.cpu), dtype=np.float64)  # partial free milli
        self.dcpu = np.bincount(domains, weights=self.cpu, minlength=self.ndom)
        self.dgpu = np.bincount(self.gdom, minlength=self.ndom).astype(np.float64) * FULL
        self.allocated = 0
        self.phi = phi

    def place(self, pod: Pod) -> bool:
        allowed = allowed_models(pod.spec, self.c.models)
        host_ok = (self.cpu >= pod.cpu) & (self.mem >= pod.mem)
        if pod.k == 0:
            cand = np.nonzero(host_ok)[0]
            if not len(cand):
                return False
            h = self.pick_host(pod, cand)
            self.bind(h, pod, [])
            return True
        share = pod.k == 1 and pod.milli < FULL
        if share:
            g = self.partial_gpu(pod, host_ok, allowed)
            if g >= 0:
                self.bind(int(self.gbound[g]), pod, [g])
                return True
        pool_ok = (self.pool[:, allowed] >= pod.k).any(1)  # per domain
        cand = np.nonzero(host_ok & pool_ok[self.dom])[0]
        if not len(cand):
            return False
        h = self.pick_host(pod, cand)
        d = int(self.dom[h])
        models = np.nonzero(allowed & (self.pool[d] >= pod.k))[0]
        m = int(models[np.argmax(self.pool[d, models])])
        gpus = [self.unbound[(d, m)].pop() for _ in range(pod.k)]
        self.pool[d, m] -= pod.k
        self.bind(h, pod, gpus)
        return True

    def partial_gpu(self, pod: Pod, host_ok: np.ndarray, allowed: np.ndarray) -> int:
        """A partly used GPU whose host fits the pod (naive: only on the best-fit host)."""
        b = self.gbound
        mask = (b >= 0) & (self.gfree >= pod.milli) & (self.gfree < FULL) & (self.gfree > 0)
        if not mask.any():
            return -1
        idx = np.nonzero(mask)[0]
        idx = idx[host_ok[b[idx]] & allowed[self.gmodel[idx]]]
        if not len(idx):
            return -1
        if self.policy == "bestfit":
            # naive: the best-fit host among all candidate hosts; its partial GPU if any
            hosts = np.nonzero(host_ok)[0]
            h = hosts[np.argmin(self.cpu[hosts] - pod.cpu)]
            idx = idx[b[idx] == h]
            if not len(idx):
                return -1
        free = self.gfree[idx]
        if self.phi is None:
            key = free * 1e9 - self.cpu[b[idx]]
            return int(idx[np.argmin(key)])
        # FGD over the pool: the increase of the expected sharing fragment, against opening
        # a fresh GPU (phi(1000) = 0); ties to the fuller GPU
        delta = self.phi[free - pod.milli] - self.phi[free]
        best = int(np.argmin(delta * 1e6 + free))
        fresh = self.phi[FULL - pod.milli]
        pool_ok = (self.pool[:, allowed] >= 1).any(1)
        if delta[best] > fresh + PARTIAL_SLACK and pool_ok[self.dom[host_ok]].any():
            return -1
        return int(idx[best])

    def pick_host(self, pod: Pod, cand: np.ndarray) -> int:
        cpu = self.cpu[cand]
        if self.policy == "bestfit":
            return int(cand[np.argmin(cpu - pod.cpu)])
        avail = cpu - pod.cpu - self.reserve[cand] * self.cpm
        if pod.k == 1 and pod.milli < FULL:
            avail = avail - (FULL - pod.milli) * self.cpm
        # snug: the smallest non-negative leftover; else the least shortfall
        score = np.where(avail >= 0, avail, 1e12 - avail)
        if self.ndom > 1:
            # domain balance: keep each domain's free CPU matched to its free GPU milli at
            # the workload's ratio; the change of |excess| the pod causes in its domain
            d = self.dom[cand]
            excess = self.dcpu[d] - self.dgpu[d] * self.ratio
            delta = pod.cpu - pod.gpu * self.ratio
            score = score * DOMAIN_FIT_WEIGHT + (np.abs(excess - delta) - np.abs(excess))
        return int(cand[np.argmin(score)])

    def bind(self, h: int, pod: Pod, gpus: list[int]) -> None:
        self.cpu[h] -= pod.cpu
        self.mem[h] -= pod.mem
        d = int(self.dom[h])
        self.dcpu[d] -= pod.cpu
        self.dgpu[d] -= pod.gpu
        for g in gpus:
            was_partial = 0 < self.gfree[g] < FULL
            take = pod.milli
            self.gfree[g] -= take
            self.gbound[g] = h
            if was_partial:
                self.reserve[h] -= take
            elif self.gfree[g] > 0:
                self.reserve[h] += self.gfree[g]
        self.allocated += pod.gpu


class PoolFragment:
    """FGD's expected fragment, for a pool. A partly used GPU with x milli free, bound to a
    host with c CPU milli free, is a fragment for every task type that cannot use it (a
    whole-GPU or CPU-only type, a fraction asking more than x, or one asking more CPU than
    c): with U(x, c) the popularity of the fractional types that can use it, its fragment is
    x * (1 - U(x, c)) -- FGD's F_n(M) with the node replaced by the GPU and its host's CPU.
    An unbound GPU of a domain is a fragment for the CPU-only types and for the GPU types
    that no host of the domain has the CPU for, or that need more GPUs than the domain has
    left. The CPU:GPU balance is thus part of the measure, at host and at domain level."""

    def __init__(self, pods: list[Pod], popularity: float = TYPICAL_POPULARITY):
        frag = Fragmentation(pods, [""], popularity)
        milli = frag.r[frag.rj]
        share = (frag.k == 1) & (milli < FULL)
        self.levels = np.unique(frag.cpu[frag.k > 0])  # CPU requests of the GPU types
        table = np.zeros((FULL + 1, len(self.levels) + 1))
        for cpu, m, p in zip(frag.cpu[share], milli[share], frag.p[share], strict=True):
            table[m:, int(np.searchsorted(self.levels, cpu)) + 1 :] += p
        self.table = table  # [x, level]: U(x, c)
        whole = np.zeros((len(self.levels) + 1, DOMAIN_SIZE * 8 + 1))
        for cpu, k, p in zip(frag.cpu, frag.k, frag.p, strict=True):
            if k:  # a GPU type an unbound GPU serves, given the CPU and enough GPUs left
                whole[int(np.searchsorted(self.levels, cpu)) + 1 :, k:] += p
        self.whole = whole  # [level, unbound GPUs left]

    def level(self, cpu: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.levels, np.maximum(cpu, 0), side="right")

    def of(self, free: np.ndarray, cpu: np.ndarray) -> np.ndarray:
        """Fragment of partly used GPUs with `free` milli on hosts with `cpu` free."""
        return free * (1.0 - self.table[np.clip(free, 0, FULL), self.level(cpu)])

    def unbound(self, count: np.ndarray, best_cpu: np.ndarray) -> np.ndarray:
        """Fragment of `count` unbound GPUs in a domain whose freest host has `best_cpu`."""
        left = np.clip(count, 0, self.whole.shape[1] - 1)
        return count * FULL * (1.0 - self.whole[self.level(best_cpu), left])


class PoolFgd(PoolSim):
    """`fgd` composable: every placement (a partly used GPU, a fresh GPU on a host, or for a
    whole-GPU or CPU-only pod just the host) is scored by the increase of the pool's expected
    fragment (PoolFragment): the pod's own GPU, the CPU it takes from the other partly used
    GPUs of its host, and what it changes for the unbound GPUs of its domain. The smallest
    increase wins; ties go to a partly used GPU before a fresh one, then to the host the pod
    fits most snugly on CPU."""

    def __init__(
        self,
        cluster: Cluster,
        domains: np.ndarray,
        frag: PoolFragment,
        strand: float = 0.0,
        cpu_per_milli: float = 0.0,
    ):
        super().__init__(cluster, domains, "fgd", 0.0, 0.0, None)
        self.fr = frag
        self.strand = strand  # fgd-bal: weight of the domain's stranded-GPU increase
        self.cpm = cpu_per_milli
        width = int(np.bincount(domains).max())
        members = np.full((self.ndom, width), -1, dtype=np.int64)
        for d in range(self.ndom):
            hosts = np.nonzero(domains == d)[0]
            members[d, : len(hosts)] = hosts
        self.members = members

    def host_term(self, pod: Pod) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per host, the fragment the pod's CPU adds to the host's partly used GPUs, and
        per partly used GPU (indices), its own share of that."""
        part = np.nonzero((self.gbound >= 0) & (self.gfree > 0) & (self.gfree < FULL))[0]
        h = self.gbound[part]
        free = self.gfree[part]
        own = self.fr.of(free, self.cpu[h] - pod.cpu) - self.fr.of(free, self.cpu[h])
        term = np.bincount(h, weights=own, minlength=len(self.cpu))
        return term, part, own

    def domain_term(self, pod: Pod, taken: int, gpu: int) -> np.ndarray:
        """Per host, the change of its domain's unbound-GPU fragment if the pod goes there
        taking `taken` unbound GPUs and `gpu` milli; fgd-bal adds the change of the
        domain's stranded GPU milli (free GPU milli its free CPU cannot feed at the
        workload's CPU per GPU milli), weighted by `strand`."""
        cpu = np.where(self.members >= 0, self.cpu[self.members], -1)
        cpu = np.sort(cpu, axis=1)
        top = cpu[:, -1]
        second = cpu[:, -2] if cpu.shape[1] > 1 else np.full(self.ndom, -1)
        d = self.dom
        others = np.where(self.cpu >= top[d], second[d], top[d])
        after = np.maximum(others, self.cpu - pod.cpu)
        count = self.pool.sum(1)[d]
        delta = self.fr.unbound(count - taken, after) - self.fr.unbound(count, top[d])
        if self.strand:
            free, gfree = self.dcpu[d], self.dgpu[d]  # the domain's free CPU and GPU milli
            before = stranded(free, gfree, self.cpm)
            delta = delta + self.strand * (stranded(free - pod.cpu, gfree - gpu, self.cpm) - before)
        return delta

    def place(self, pod: Pod) -> bool:
        allowed = allowed_models(pod.spec, self.c.models)
        host_ok = (self.cpu >= pod.cpu) & (self.mem >= pod.mem)
        term, part, own = self.host_term(pod)
        snug = (self.cpu - pod.cpu) / 1e9  # tie-break: least CPU left, well below 1 milli
        if pod.k == 0:
            cand = np.nonzero(host_ok)[0]
            if not len(cand):
                return False
            key = term[cand] + self.domain_term(pod, 0, 0)[cand] + snug[cand]
            self.bind(int(cand[np.argmin(key)]), pod, [])
            return True
        pool_ok = (self.pool[:, allowed] >= pod.k).any(1)[self.dom]  # per host
        best, pick = np.inf, None
        if pod.k == 1 and pod.milli < FULL:
            fits = part[(self.gfree[part] >= pod.milli) & allowed[self.gmodel[part]]]
            hp = self.gbound[fits]
            sel = host_ok[hp]
            fits, hp = fits[sel], hp[sel]
            if len(fits):
                mine = own[np.searchsorted(part, fits)]
                after = self.fr.of(self.gfree[fits] - pod.milli, self.cpu[hp] - pod.cpu)
                delta = after - self.fr.of(self.gfree[fits], self.cpu[hp]) + term[hp] - mine
                key = delta + self.domain_term(pod, 0, pod.gpu)[hp] + snug[hp] - 1e-6
                i = int(np.argmin(key))
                best, pick = key[i], ("partial", int(fits[i]))
        cand = np.nonzero(host_ok & pool_ok)[0]
        if len(cand):
            key = term[cand] + self.domain_term(pod, pod.k, pod.gpu)[cand] + snug[cand]
            if pod.k == 1 and pod.milli < FULL:
                key = key + self.fr.of(
                    np.full(len(cand), FULL - pod.milli), self.cpu[cand] - pod.cpu
                )
            i = int(np.argmin(key))
            if key[i] < best:
                pick = ("fresh", int(cand[i]))
        if pick is None:
            return False
        kind, x = pick
        if kind == "partial":
            self.bind(int(self.gbound[x]), pod, [x])
            return True
        h, d = x, int(self.dom[x])
        models = np.nonzero(allowed & (self.pool[d] >= pod.k))[0]
        m = int(models[np.argmax(self.pool[d, models])])
        gpus = [self.unbound[(d, m)].pop() for _ in range(pod.k)]
        self.pool[d, m] -= pod.k
        self.bind(h, pod, gpus)
        return True


def share_fragment(pods: list[Pod]) -> np.ndarray:
    """phi[x]: expected fragment of a partly used GPU with x milli free, against the trace's
    fractional pods: x times the share of them that ask more than x."""
    asks = np.array(sorted(p.milli for p in pods if p.k == 1 and p.milli < FULL))
    if not len(asks):
        return np.zeros(FULL + 1)
    x = np.arange(FULL + 1)
    above = 1.0 - np.searchsorted(asks, x, side="right") / len(asks)
    return x * above


def switch_domains(cluster: Cluster, size: int = DOMAIN_SIZE) -> np.ndarray:
    """Runs of `size` consecutive nodes of one GPU model (nodes sorted by model, then trace
    order)."""
    dom = np.zeros(len(cluster.cpu), dtype=np.int64)
    next_id = 0
    for m in range(len(cluster.models)):
        nodes = np.nonzero(cluster.model == m)[0]
        for start in range(0, len(nodes), size):
            dom[nodes[start : start + size]] = next_id
            next_id += 1
    return dom


# --------------------------------------------------------------------------- runs


@dataclass
class Run:
    samples: dict[int, float] = field(default_factory=dict)
    dropped: int = 0
    seconds: float = 0.0
    skipped: int = 0  # pods never asked: fractions, where the product has no shared GPUs


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
        sim = product_sim()(cluster, mode, policy)
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


def published() -> dict[tuple[str, str, int], tuple[float, float]]:
    out = {}
    if not RESULTS.exists():
        return out
    names = {"06-FGD": "fgd", "05-BestFit": "bestfit", "01-Random": "random"}
    for r in read_csv(RESULTS):
        pct = int(r["arrived_gpu_pct_of_capacity"])
        if r["policy"] in names and pct in SAMPLES:
            trace = r["workload"].removeprefix("openb_pod_list_")
            out[(trace, names[r["policy"]], pct)] = (
                float(r["gpu_alloc_pct_mean"]),
                float(r["gpu_alloc_pct_sd"]),
            )
    return out


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


def fmt(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.2f} ± {sd:.2f}"


MODE_TEXT = {
    "fixed": "fixed-ratio servers",
    "domain": "composable, 8-host domains",
    "all": "composable, all hosts",
}
Results = dict[tuple[str, str, str], list[tuple[int, Run]]]
Ceilings = dict[tuple[str, str], list[tuple[int, float]]]


def at130(results: Results, key: tuple[str, str, str]) -> float | None:
    runs = results.get(key)
    return statistics.fmean(r.samples[130] for _, r in runs) if runs else None


def policy_label(policy: str, runs: list[Run]) -> str:
    """The policy as the table names it: the product's engine, or a re-implementation; a
    product run that could not ask for fractional pods says so."""
    if policy not in PRODUCT:
        return f"{policy} (re-implemented)"
    skipped = statistics.fmean(r.skipped for r in runs)
    return f"{policy} (product engine)" + (
        f", whole-GPU pods only ({skipped:.0f} fractional pods not asked)" if skipped else ""
    )


def section(
    results: Results,
    ceilings: Ceilings,
    traces: list[str],
    modes: list[str],
    seeds: list[int],
    elapsed: float,
    header: str,
) -> str:
    pub = published()
    lines = [
        "<!-- bench:packing:start -->",
        "## Packing: GPU allocation on the Alibaba GPU trace (FGD protocol)",
        "",
        header,
        "",
        f"`python bench/bench_packing.py`: cluster `openb_node_list_gpu_node` (1,213 nodes, "
        f"6,212 GPUs); per seed ({len(seeds)} seeds, {seeds[0]}..{seeds[-1]}) the pod list "
        "is shuffled and random copies of its pods appended up to "
        f"{TUNE:.0%} of GPU capacity, as the FGD authors' simulator does; no departures; a "
        "pod that fits nowhere is dropped. GPU allocation % (allocated GPU milli / "
        "6,212,000) when the arrived GPU request reaches 100 % and 130 % of capacity (the "
        "authors' sampling: the mean over the arrivals that round to that percent); mean ± "
        f"sd over the seeds. Whole run: {elapsed:.0f} s on 2 processes. Published: the FGD "
        "authors' results (fgd_alloc_curve_summary.csv). Composable: hosts keep CPU and "
        "memory, GPUs pooled per domain (8 consecutive hosts of one GPU model) or across "
        "all hosts; a shared GPU stays bound to the host that opened it. `composer` is "
        "the product's engine, `composer.placement.engine.place()` deciding on snapshots "
        "and requests built from the trace (bench/packing_product.py); every other policy "
        "is re-implemented in the script (the published baselines and earlier policies). "
        "Policies: see the scripts' docstrings.",
        "",
        "| trace | mode | policy | @100 % | @130 % | published @100 % | published @130 % "
        "| dropped pods | s/run |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for trace in traces:
        for mode in modes:
            for policy in (*POLICIES[mode], *OPTIONAL):
                runs = [r for _, r in results.get((trace, mode, policy), [])]
                if not runs:
                    continue
                cells = [fmt([r.samples[p] for r in runs]) for p in SAMPLES]
                pubs = []
                for p in SAMPLES:
                    v = pub.get((trace, policy, p)) if mode == "fixed" else None
                    pubs.append(f"{v[0]:.2f} ± {v[1]:.2f}" if v else "—")
                drop = statistics.fmean(r.dropped for r in runs)
                secs = statistics.fmean(r.seconds for r in runs)
                lines.append(
                    f"| {trace} | {MODE_TEXT[mode]} | {policy_label(policy, runs)} | {cells[0]} | "
                    f"{cells[1]} | {pubs[0]} | {pubs[1]} | {drop:.0f} | {secs:.1f} |"
                )
    if ceilings:
        lines += [
            "",
            "Ceiling: a provable upper bound on GPU allocation % at 130 % arrived for *any* "
            "composable policy under this protocol, per seed (bench/packing_bound.py; the "
            "argument is below), beside the best composable policy of the table.",
            "",
            "| trace | mode | ceiling @130 % (mean ± sd) | ceiling per seed | best policy | "
            "best @130 % | best / ceiling |",
            "|---|---|--:|---|---|--:|--:|",
        ]
        for trace in traces:
            for mode in modes:
                per_seed = sorted(ceilings.get((trace, mode), []))
                if not per_seed:
                    continue
                values = [v for _, v in per_seed]
                best = max(
                    (p for p in POLICIES[mode] if at130(results, (trace, mode, p)) is not None),
                    key=lambda p: at130(results, (trace, mode, p)) or 0.0,
                    default=None,
                )
                got = at130(results, (trace, mode, best)) if best else None
                lines.append(
                    f"| {trace} | {MODE_TEXT[mode]} | {fmt(values)} | "
                    f"{' '.join(f'{v:.1f}' for v in values)} | {best or '—'} | "
                    f"{f'{got:.2f}' if got else '—'} | "
                    f"{f'{100 * got / statistics.fmean(values):.1f} %' if got else '—'} |"
                )
    lines += ["", verdict(results, ceilings)[0], "", *notes(results, ceilings)]
    lines.append("<!-- bench:packing:end -->")
    return "\n".join(lines)


def notes(results: Results, ceilings: Ceilings) -> list[str]:
    """The reading of the table; the figures quoted come from the results themselves."""

    def v(trace: str, mode: str, policy: str) -> str:
        x = at130(results, (trace, mode, policy))
        return f"{x:.2f}" if x is not None else "n/a"

    def ceil(trace: str, mode: str) -> str:
        got = ceilings.get((trace, mode))
        return f"{statistics.fmean(x for _, x in got):.2f}" if got else "n/a"

    def gap(trace: str, mode: str, policy: str) -> str:
        got, x = ceilings.get((trace, mode)), at130(results, (trace, mode, policy))
        return f"{statistics.fmean(c for _, c in got) - x:.2f}" if got and x else "n/a"

    def reach() -> str:
        """Whether the ceilings rule the 98 % target out on the default trace."""
        tops = [
            max((x for _, x in ceilings.get(("default", m), [])), default=100.0)
            for m in ("all", "domain")
        ]
        if max(tops) < 98.0:
            return "98 % cannot be reached by any policy in either (on any seed)"
        return "the ceilings do not rule 98 % out everywhere"

    pub = published()

    def off(policy: str) -> str:
        """The largest distance to the published mean over the traces and points."""
        gaps = []
        for (trace, pol, pct), (mean, _sd) in pub.items():
            runs = results.get((trace, "fixed", policy))
            if pol == policy and runs:
                gaps.append(abs(statistics.fmean(r.samples[pct] for _, r in runs) - mean))
        return f"{max(gaps):.2f}" if gaps else "n/a"

    return [
        "Reading the table:",
        "",
        "- FGD reproduced. Pure `fgd` used to land 0.7 point under the published FGD on "
        "the default trace and 5.4 points under it on gpushare100. The difference was not "
        "in the fragmentation measure but in how the authors' simulator breaks ties: it "
        "builds against a patched Kubernetes (go.mod: `k8s.io/kubernetes => "
        "github.com/mental2008/kubernetes v1.20.5-minor`, vendored in their repository) "
        "whose `selectHost` (vendor/k8s.io/kubernetes/pkg/scheduler/core/"
        "generic_scheduler.go) keeps the node with the lexicographically smallest name among "
        "the best scores instead of a random one, and `syncClusterResourceList` "
        "(pkg/simulator/simulator.go) prefixes every node name with a per-seed random "
        "permutation (`%04d-`). FGD's score is an integer, int(100 sigmoid(-increase/1000)) "
        "(pkg/simulator/plugin/fgd_score.go), so hundreds of nodes tie for a typical pod, "
        "and the tie rule turns into first-fit packing over a fixed random node order. With "
        "that rule (and the smaller details listed in the script's docstring: 95 % typical "
        "pods, CPU-only types counted as fragments everywhere, the GPU of the best score "
        "with the lowest index, shuffled trace then copies, window sampling) the three "
        "published policies land on the published curves at 100 % and 130 % on every "
        f"trace: `fgd` within {off('fgd')} point, `bestfit` within {off('bestfit')}, "
        f"`random` within {off('random')} (about its seed-to-seed sd). "
        f"`fgd` {v('default', 'fixed', 'fgd')} / {v('gpushare100', 'fixed', 'fgd')} / "
        f"{v('cpu250', 'fixed', 'fgd')} % on default / gpushare100 / cpu250 against "
        "95.39 / 86.90 / 93.41 %. `fgd-stock`, the same FGD with stock Kubernetes' random "
        f"ties, gets {v('default', 'fixed', 'fgd-stock')} % on default: the tie rule alone "
        "is worth about 5 points.",
        "- `fgd-bal` adds the CPU:GPU balance to the authors' FGD: the increase of the "
        "node's stranded GPU milli (free GPU milli its free CPU cannot feed at the trace's "
        "CPU per GPU milli of GPU pods), weight 1 (same unit as F(M)), not tuned. A sweep "
        "of the weight (0.5, 1, 2, 4) on cpu250 and gpushare100 (seeds 42..45) and on "
        "default seeds 52..55, never on default 42..51, is flat between 0.5 and 1 and "
        "falls on cpu250 above 1 (`--strand-weight`, `--first-seed`), so 1 stays. The "
        "default figure above is therefore out-of-sample: "
        f"{v('default', 'fixed', 'fgd-bal')} % against the 95.4 % target.",
        "- Naive pooling is worse than fixed servers, as the issue warns: `bestfit` over a "
        "pool strands half-used GPUs on hosts whose CPU it has just filled, and in 8-host "
        "domains it also runs some domains out of CPU while their GPUs sit unbound.",
        "- Composable `fgd-bal` is FGD's measure over the pool: a partly used GPU is a "
        "fragment for the task types it cannot serve, counting its host's free CPU, and a "
        "domain's unbound GPUs for the types none of its hosts has the CPU for; each "
        "placement (partly used GPU, fresh GPU, host) takes the smallest increase, plus "
        "the same stranded-GPU term at domain level (weight 1). `fgd` is that measure "
        "without the stranded term (with all hosts pooled the term is the same for every "
        "placement of a pod, so there `fgd-bal` is `fgd`); in 8-host domains `fgd` lets "
        "CPU-hungry pods drain domains whose GPUs then sit unbound. `balance` "
        "(CPU reserved for half-used GPUs, domains kept at the workload's CPU:GPU ratio) "
        "is about as good; neither dominates on every trace. FGD's measure ignores memory, "
        "as the authors' does; on gpushare100, where memory runs out first, `balance` is "
        "ahead.",
        "- The ceiling. The protocol forces placement: a pod that fits somewhere must be "
        "placed. A fraction above 500 milli shares its GPU with no other such fraction, so "
        "each one placed leaves 1000 - m milli that only smaller pods can use. Some of them "
        "are placed under every policy: those arriving while, provably, an unbound GPU and "
        "a host with the CPU and memory exist. The host part is proved per arrival by a "
        "weak-duality certificate against an adversary who spends the earlier arrivals' "
        "CPU, memory and GPU touches on blocking every host; the GPU part by splitting on "
        "when the pool runs out of unbound GPUs (after that no whole-GPU pod is ever "
        "placed, so allocation is at most what arrived before plus the later fractions). "
        "The gaps those forced pods leave are then filled, at best, by a splittable "
        "assignment of every small fraction that arrives. In 8-host domains that "
        "certificate is weak (an adversary may exhaust whole domains' GPUs while blocking "
        "the other hosts' CPU), so a second argument splits on which big fractions a run "
        "drops: a big fraction that fits nowhere means no host has its CPU and memory next "
        "to an unbound GPU, and since nothing is freed, every later whole-GPU pod asking at "
        "least its CPU and memory is dropped too (on the default trace 99 % of the "
        "whole-GPU pods ask at least the CPU and memory of the common 810-milli "
        "fraction). So a run that drops one early loses most later whole-GPU pods, and a "
        "run that drops none pays every "
        "gap; the worst case between them bounds every run, whatever the domains. The "
        "ceiling is the lower of the two arguments; both ignore every other waste, so it "
        f"is optimistic. On the default trace it is {ceil('default', 'all')} % with all "
        f"hosts pooled and {ceil('default', 'domain')} % in 8-host domains: "
        f"{reach()}. The best policies, {v('default', 'all', 'fgd-bal')} % pooled and "
        f"{v('default', 'domain', 'fgd-bal')} % in domains (`fgd-bal`; `balance` "
        f"{v('default', 'domain', 'balance')} %), are {gap('default', 'all', 'fgd-bal')} "
        f"and {gap('default', 'domain', 'fgd-bal')} points under it, part of which is the "
        "bound's optimism.",
    ]


def verdict(results: Results, ceilings: Ceilings) -> tuple[str, bool]:
    parts, ok = [], True
    for policy in ("fgd", "fgd-bal"):
        fixed = at130(results, ("default", "fixed", policy))
        if fixed is not None:
            hit = fixed >= 95.4
            ok &= hit
            parts.append(
                f"fixed-ratio `{policy}` {fixed:.2f} % against ≥ 95.4 % — "
                f"{'met' if hit else f'missed by {95.4 - fixed:.2f} point'}"
            )
    for mode in ("domain", "all"):
        got = {p: at130(results, ("default", mode, p)) for p in POLICIES[mode]}
        got = {p: x for p, x in got.items() if x is not None}
        if not got:
            continue
        best = max(got, key=lambda p: got[p])
        hit = got[best] >= 98.0
        ok &= hit
        text = (
            f"{MODE_TEXT[mode]} best `{best}` {got[best]:.2f} % against ≥ 98 % — "
            f"{'met' if hit else f'missed by {98.0 - got[best]:.2f} points'}"
        )
        bound = ceilings.get(("default", mode))
        if bound:
            top = max(x for _, x in bound)
            mean = statistics.fmean(x for _, x in bound)
            if top < 98.0:
                text += (
                    f"; not achievable under the protocol: the ceiling for any policy is "
                    f"{mean:.2f} % (at most {top:.2f} % on any seed)"
                )
            else:
                text += f"; the ceiling ({mean:.2f} %) does not rule 98 % out"
        parts.append(text)
    for mode, target in PRODUCT_TARGETS.items():
        runs = results.get(("default", mode, "composer"))
        if not runs:
            continue
        got = statistics.fmean(r.samples[130] for _, r in runs)
        whole = any(r.skipped for _, r in runs)
        hit = got >= target and not whole
        ok &= hit
        parts.append(
            f"product engine (`composer`) {MODE_TEXT[mode]} {got:.2f} % against ≥ {target} % — "
            + (
                "not the protocol's figure (whole-GPU pods only: the engine has no shared GPUs)"
                if whole
                else ("met" if hit else f"missed by {target - got:.2f} points")
            )
        )
    text = "Targets (default trace, 130 % arrived): " + "; ".join(parts) + "." if parts else ""
    return text, ok


def main(argv: list[str] | None = None) -> int:
    if not TRACE_DIR.is_dir():
        print(
            f"No trace in {TRACE_DIR}: put Alibaba's cluster-trace-gpu-v2023 there, or point "
            "COMPOSER_BENCH_DATA at the folder that holds alibaba-gpu-v2023/.",
            file=sys.stderr,
        )
        return 2
    traces_all = sorted(
        p.stem.removeprefix("openb_pod_list_") for p in TRACE_DIR.glob("openb_pod_list_*.csv")
    )
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=len(SEEDS), help="how many seeds")
    ap.add_argument("--first-seed", type=int, default=SEEDS[0], help="tuning: use 52 and up")
    ap.add_argument("--strand-weight", type=float, help="fgd-bal's weight (tuning only)")
    ap.add_argument("--traces", default=",".join(traces_all), help="comma list, e.g. default")
    ap.add_argument("--modes", default=",".join(MODES), help="fixed,domain,all")
    ap.add_argument("--policies", default="", help="only these policies (comma list)")
    ap.add_argument("--no-bound", action="store_true", help="skip the composable ceilings")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--no-write", action="store_true", help="print instead of writing docs")
    args = ap.parse_args(argv)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    traces = [t for t in args.traces.split(",") if t]
    modes = [m for m in args.modes.split(",") if m]
    only = {p for p in args.policies.split(",") if p}
    jobs = [
        ("run", t, m, p, s, args.strand_weight)
        for t in traces
        for m in modes
        for p in (*POLICIES[m], *OPTIONAL)
        if p in only or (not only and p in POLICIES[m])
        for s in seeds
    ]
    if not args.no_bound:
        jobs += [
            ("bound", t, m, "", s, None)
            for t in traces
            for m in modes
            if m != "fixed"
            for s in seeds
        ]
    started = time.perf_counter()
    results: Results = defaultdict(list)
    ceilings: Ceilings = defaultdict(list)

    def collect(out: tuple) -> None:
        kind, key, seed, value = out
        if kind == "bound":
            ceilings[key[:2]].append((seed, value))
            sys.stderr.write(f"{key[:2]} seed {seed}: ceiling {value:.2f} %\n")
        else:
            results[key].append((seed, value))
            sys.stderr.write(
                f"{key} {seed} {value.samples} dropped={value.dropped} {value.seconds:.1f}s\n"
            )

    if args.jobs > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            for out in pool.imap_unordered(job, jobs):
                collect(out)
    else:
        for j in jobs:
            collect(job(j))
    elapsed = time.perf_counter() - started
    ok = verdict(results, ceilings)[1]
    if args.no_write or args.first_seed != SEEDS[0] or args.strand_weight is not None:
        print(section(results, ceilings, traces, modes, seeds, elapsed, "(not written)"))
        return 0 if ok else 1
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from bench.common import machine, write_section

    info = machine()
    header = (
        f"Measured {info['date']} on {info['arch']}, {info['cpu']}, {info['cores']} "
        f"cores; Python {info['python']}, numpy {np.__version__} (no database used)."
    )
    body = section(results, ceilings, traces, modes, seeds, elapsed, header)
    write_section("packing", body)
    print(body)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
