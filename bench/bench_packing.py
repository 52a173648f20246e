"""Benchmark: GPU packing quality on the Alibaba GPU cluster trace (FGD, USENIX ATC'23).

Run from the repository root with the project's virtual environment (needs numpy, which is
not a dependency of the product: `pip install numpy` into the venv to run it):

    .venv/bin/python bench/bench_packing.py                     # everything, writes the docs
    .venv/bin/python bench/bench_packing.py --seeds 2 --traces default --modes fixed --no-write

Data: `../shared/data/alibaba-gpu-v2023/` (read in place, never copied): the cluster is
`openb_node_list_gpu_node.csv` (1,213 nodes, 6,212 GPUs), the pods each
`openb_pod_list_*.csv`. Published curves: `../shared/data/fgd-atc23-results/`.

Protocol (that of the FGD paper's simulator, see the results README): per seed (42..51) the
workload is the trace's pods plus random copies of trace pods appended until the GPU request
reaches 130 % of the cluster's GPU capacity; the list is shuffled with the same seed; pods
arrive one by one and never leave; a pod that fits nowhere is dropped. The metric is GPU
allocation % = allocated GPU milli / (6,212 * 1,000), sampled when the cumulative GPU
request of the *arrived* pods reaches 100 % and 130 % of capacity.

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

Policies (mode: policy):

* fixed: `random` (a uniformly random feasible node), `bestfit` (the feasible node with the
  least normalised CPU + GPU left after placing: (cpu free - cpu) / cpu capacity + (GPU milli
  free - milli) / GPU milli capacity), `fgd` (below), and `fgd-bf`: FGD whose increase gets
  a best-fit term added, 50 milli times the bestfit leftover (0..2), so that among nodes of
  (nearly) equal fragmentation increase the snugger one wins; `fgd-bal`: `fgd-bf` plus
  150 milli times max(0, GPU share left - CPU share left) of the node after placing, a
  penalty on leaving GPUs behind without the CPU to use them (the CPU:GPU balance). Both
  weights were tuned on the default trace's ten seeds (in-sample). Within a node a fraction goes
  to the fullest GPU it fits (random, bestfit) or to the GPU FGD picks.
* domain / all: `bestfit` (naive pooling: the host with the least CPU left after placing, a
  fraction on the fullest GPU bound to that host that fits, else a fresh pool GPU), and
  `balance` (below).

FGD (Weng et al., ATC'23, Sec. 4), implemented from the paper's definition. The target
workload M is the distribution of pod shapes of the trace: task types m = (cpu, num_gpu,
gpu_milli, gpu_spec) with popularity p_m = share of pods of that type (memory is left out of
the types, as in the authors' simulator). For a node n and a type m the GPU fragment F_n(m) is
* all of n's free GPU milli if m cannot run on n at all (not enough CPU, wrong GPU model, or
  fewer than num_gpu GPUs with at least the request free) — for a CPU-only type, all free
  GPU milli if the CPU does not fit and 0 if it does;
* otherwise the free milli of the GPUs that cannot serve m's per-GPU request (free < gpu_milli
  for a fraction, free < 1000 for whole GPUs).
F_n(M) = sum_m p_m F_n(m) is the node's expected fragmentation. For an arriving pod FGD tries
every feasible node and, for a fraction, every GPU of it that fits, and takes the placement
with the smallest increase F_n'(M) - F_n(M) (ties: the lowest node index). The authors'
plugin turns the increase into an integer Kubernetes score (100 * sigmoid(-increase/1000)),
ties at random, and may keep only the most popular types (a 60 % popularity walk); these
were tried here and scored no better (random ties, integer scores: within 0.1 point on the
default trace and still about 4 points under the published curve on gpushare100; the 60 %
walk: about 1 point worse), so exact increases and all types are kept. Pure `fgd` lands
0.7 point under the published FGD on the default trace and about 5 points under it on
gpushare100, where `fgd-bf` matches the published FGD within 0.2 point; the authors'
simulator differs somewhere not pinned down here (candidates: Kubernetes' own scoring and
filters around the plugin).
The increase of a (node state, pod shape) is cached per shape and recomputed only for the
nodes that changed since that shape was last scored, which keeps a 10,000-pod run to seconds.

`balance` (composable). The policy has to mind what it leaves behind: a partly used GPU can
only be finished by pods on its host, so a host's CPU is "reserved" for the free milli of its
partly used GPUs at the workload's CPU per GPU milli of fractional pods (`cpm`). Then
* a fraction goes to an already partly used GPU of the domain whose host fits the pod,
  chosen FGD-like over the pool: the smallest increase of phi, the expected sharing
  fragment of a GPU with x milli free (x times the share of the trace's fractional pods that
  ask more than x), ties to the fuller GPU; it opens a pool GPU instead only if that
  increases phi less (phi(1000) = 0). A fresh GPU goes to the host whose CPU left after the
  pod and after reserving for the rest of that GPU ((1000 - milli) * cpm) is smallest but not
  negative (else the host with the most);
* whole-GPU and CPU-only pods go to the host whose unreserved CPU fits the pod most snugly
  (best fit on CPU minus reservation; a host short of unreserved CPU only if no host has it,
  the one that steals least);
* in `domain` mode the domain term: among domains that can take the pod, the one whose
  remaining CPU : GPU ratio after placing stays closest (in log) to the workload's arriving
  CPU : GPU ratio weighs in (so CPU-heavy pods go where CPU is plentiful).
This follows the ideas of `composer/placement/scoring.py` (snug core fit; keep the reach
group's cores per GPU near the workload's ratio) but the simulation stands alone: it imports
nothing from the product, since the product's engine works on a database-built snapshot.

Targets (issue 4, benchmark b): fixed >= 95.4 % and composable >= 98 % at 130 % arrived on
the default trace. The script writes its section of docs/benchmarks.md either way.
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
TRACE_DIR = DATA / "alibaba-gpu-v2023"
RESULTS = DATA / "fgd-atc23-results" / "fgd_alloc_curve_summary.csv"
TUNE = 1.3
SEEDS = tuple(range(42, 52))
MODES = ("fixed", "domain", "all")
POLICIES = {
    "fixed": ("fgd", "fgd-bf", "fgd-bal", "bestfit", "random"),
    "domain": ("balance", "bestfit"),
    "all": ("balance", "bestfit"),
}
DOMAIN_SIZE = 8
FGD_STRAND_MILLI = 150.0  # fgd-bal: GPU share left above CPU share left, in F(M) milli
FGD_BESTFIT_MILLI = 50.0  # fgd-bf: best-fit leftover (0..2) weighs up to 100 milli of F(M)
PARTIAL_SLACK = 0.0  # milli: how much worse a partly used GPU may be than a fresh one
DOMAIN_FIT_WEIGHT = 0.1  # host snugness against the domain balance (both CPU milli)
SAMPLES = (100, 130)
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
    """The trace's pods plus random copies until the GPU request reaches `tune` x capacity,
    shuffled — the FGD simulator's `tune` + `shuffle-pod` with `seed`."""
    rng = random.Random(seed)
    out = list(pods)
    total = sum(p.gpu for p in out)
    while total < tune * capacity_milli:
        p = rng.choice(pods)
        out.append(p)
        total += p.gpu
    rng.shuffle(out)
    return out


def allowed_models(spec: str, models: list[str]) -> np.ndarray:
    if not spec:
        return np.ones(len(models), dtype=bool)
    wanted = set(spec.split("|"))
    return np.array([m in wanted for m in models], dtype=bool)


# --------------------------------------------------------------------------- FGD


class Fragmentation:
    """Expected GPU fragmentation F(M) of node states against the workload's task types."""

    def __init__(self, pods: list[Pod], models: list[str], popularity: float = 1.0):
        counts: dict[tuple[int, int, int, str], int] = defaultdict(int)
        for p in pods:
            counts[(p.cpu, p.k, p.milli, p.spec)] += 1
        types = sorted(counts, key=lambda t: (-counts[t], t))
        if popularity < 1.0:  # the authors' walk: top types, 10 at a time, to the threshold
            total, keep = sum(counts.values()), 0
            while keep < len(types) and sum(counts[t] for t in types[:keep]) < popularity * total:
                keep += 10
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
        frag = np.where(ok, np.where(self.gpu_type, lt[:, self.rj], 0), tot)
        return frag @ self.p


# --------------------------------------------------------------------------- fixed mode


class FixedSim:
    """Servers with their own GPUs. `free[n, g]` is GPU g's free milli (0 where absent)."""

    def __init__(self, cluster: Cluster, policy: str, frag: Fragmentation | None, rng):
        self.c = cluster
        self.policy = policy
        self.frag = frag
        self.rng = rng
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
        self.tie_break = FGD_BESTFIT_MILLI if policy in ("fgd-bf", "fgd-bal") else 0.0
        self.strand = FGD_STRAND_MILLI if policy == "fgd-bal" else 0.0
        self.cache: dict[Pod, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        if frag is not None:
            self.F = frag(self.cpu, self.free, cluster.model)

    def feasible(self, pod: Pod, idx=None) -> np.ndarray:
        sl = slice(None) if idx is None else idx
        ok = (self.cpu[sl] >= pod.cpu) & (self.mem[sl] >= pod.mem)
        if pod.k:
            ok &= allowed_models(pod.spec, self.c.models)[self.c.model[sl]]
            ok &= (self.maxfree[sl] >= pod.milli) if pod.milli < FULL else (self.nfull[sl] >= pod.k)
        return ok

    def gpu_choice(self, n: int, pod: Pod) -> int:
        """Best fit GPU for a fraction on node n (the fullest that fits)."""
        row = self.free[n]
        fits = np.nonzero(row >= pod.milli)[0]
        return int(fits[np.argmin(row[fits])])

    def place(self, pod: Pod) -> bool:
        if self.policy.startswith("fgd"):
            n, g = self.fgd(pod)
        else:
            ok = self.feasible(pod)
            cand = np.nonzero(ok)[0]
            if not len(cand):
                return False
            if self.policy == "random":
                n = int(cand[self.rng.randrange(len(cand))])
            else:
                left = (self.cpu[cand] - pod.cpu) / self.c.cpu[cand]
                gcap = np.maximum(self.c.gpus[cand] * FULL, 1)
                left = left + (self.gfree[cand] - pod.gpu) / gcap
                n = int(cand[np.argmin(left)])
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
        """Increase of F(M) (inf where infeasible) and the GPU chosen, for nodes `idx`."""
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
            # the GPU with the smallest increase on each node (ties: fuller GPU)
            order = np.lexsort((free[rows, cols], delta, rows))
            first = np.unique(rows[order], return_index=True)[1]
            best = order[first]
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
        score, choice, stamp = entry
        stale = np.nonzero(stamp != self.ver)[0]
        if len(stale):
            score[stale], choice[stale] = self.fgd_scores(pod, stale)
            stamp[stale] = self.ver[stale]
        if self.tie_break:  # among equal increases, the node best-fit would pick
            cpu_left = (self.cpu - pod.cpu) / self.c.cpu
            gpu_left = (self.gfree - pod.gpu) / np.maximum(self.c.gpus * FULL, 1)
            extra = self.tie_break * (cpu_left + gpu_left)
            if self.strand:  # the node's GPU share left above its CPU share left
                extra = extra + self.strand * np.maximum(gpu_left - cpu_left, 0.0)
            n = int(np.argmin(score + extra))
        else:
            n = int(np.argmin(score))
        if not math.isfinite(score[n]):
            return -1, -1
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


def simulate(
    cluster: Cluster,
    pods: list[Pod],
    mode: str,
    policy: str,
    seed: int,
    frag: Fragmentation | None = None,
    samples=SAMPLES,
    tune: float = TUNE,
) -> Run:
    capacity = cluster.gpu_total * FULL
    arriving = workload(pods, capacity, seed, tune)
    started = time.perf_counter()
    if mode == "fixed":
        sim = FixedSim(
            cluster, policy, frag if policy.startswith("fgd") else None, random.Random(seed)
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
        sim = PoolSim(
            cluster,
            domains,
            policy,
            cpm,
            ratio,
            share_fragment(pods) if policy == "balance" else None,
        )
    run = Run()
    pending = sorted(samples)
    arrived = 0
    for pod in arriving:
        if not sim.place(pod):
            run.dropped += 1
        arrived += pod.gpu
        while pending and arrived >= pending[0] / 100 * capacity:
            run.samples[pending.pop(0)] = 100.0 * sim.allocated / capacity
    for pct in pending:  # the workload ends a hair under the last point
        run.samples[pct] = 100.0 * sim.allocated / capacity
    run.seconds = time.perf_counter() - started
    return run


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


def job(args: tuple[str, str, str, int]) -> tuple[tuple[str, str, str], int, Run]:
    trace, mode, policy, seed = args
    cluster = cluster_from_rows(read_csv(TRACE_DIR / "openb_node_list_gpu_node.csv"))
    pods = [pod_from_row(r) for r in read_csv(TRACE_DIR / f"openb_pod_list_{trace}.csv")]
    frag = Fragmentation(pods, cluster.models) if policy.startswith("fgd") else None
    return (trace, mode, policy), seed, simulate(cluster, pods, mode, policy, seed, frag)


def fmt(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.2f} ± {sd:.2f}"


MODE_TEXT = {
    "fixed": "fixed-ratio servers",
    "domain": "composable, 8-host domains",
    "all": "composable, all hosts",
}


def section(results, traces, modes, seeds, elapsed, header: str) -> str:
    pub = published()
    lines = [
        "<!-- bench:packing:start -->",
        "## Packing: GPU allocation on the Alibaba GPU trace (FGD protocol)",
        "",
        header,
        "",
        f"`python bench/bench_packing.py`: cluster `openb_node_list_gpu_node` (1,213 nodes, "
        f"6,212 GPUs), each pod list tuned to {TUNE:.0%} of GPU capacity with random copies, "
        f"shuffled per seed ({len(seeds)} seeds, {seeds[0]}..{seeds[-1]}), no departures, a "
        "pod that fits nowhere dropped; GPU allocation % (allocated GPU milli / 6,212,000) "
        "when the arrived GPU request reaches 100 % and 130 % of capacity; mean ± sd over "
        f"the seeds. Whole run: {elapsed:.0f} s on 2 processes. Published: the FGD authors' "
        "simulator (fgd_alloc_curve_summary.csv). Composable: hosts keep CPU and memory, "
        "GPUs pooled per domain (8 consecutive hosts of one GPU model) or across all hosts; a "
        "shared GPU stays bound to the host that opened it. Policies are described in the "
        "script's docstring.",
        "",
        "| trace | mode | policy | @100 % | @130 % | published @100 % | published @130 % "
        "| dropped pods | s/run |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for trace in traces:
        for mode in modes:
            for policy in POLICIES[mode]:
                runs = results.get((trace, mode, policy))
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
                    f"| {trace} | {MODE_TEXT[mode]} | {policy} | {cells[0]} | "
                    f"{cells[1]} | {pubs[0]} | {pubs[1]} | {drop:.0f} | {secs:.1f} |"
                )
    lines += ["", "TARGETS", "", *NOTES, "<!-- bench:packing:end -->"]
    return "\n".join(lines)


NOTES = [
    "Reading the table:",
    "",
    "- Sanity: `bestfit` and `random` land within about 0.3 and 0.6 point of the published "
    "figures on every trace. Pure `fgd` (the paper's definition, exact increases) lands 0.7 "
    "point under the published FGD on the default trace and about 5 points under it on "
    "gpushare100; `fgd-bf` (FGD plus a best-fit term, see the script) comes within about 0.2 "
    "point of the published FGD (above it on cpu250). What the authors' simulator does "
    "beyond the plugin's formula (integer scores with random ties and the 60 % type walk "
    "were tried and do not explain it) is not pinned down.",
    "- `fgd-bal` adds the CPU:GPU balance to `fgd-bf` (a penalty on leaving a node's GPUs "
    "without the CPU to use them); its two weights were tuned on the default trace's ten "
    "seeds, so its default figure is in-sample; it gains 0.1 point on the default trace and "
    "on gpushare100 and loses 0.45 on cpu250, where CPU is the scarce resource.",
    "- Naive pooling is worse than fixed servers, as the issue warns: `bestfit` over a pool "
    "strands half-used GPUs on hosts whose CPU it has just filled, and in 8-host domains it "
    "also runs some domains out of CPU while their GPUs sit unbound (default: 83 % in "
    "domains, 90 % across all hosts, against 93 % for fixed best-fit).",
    "- `balance` (CPU reserved for the rest of a half-used GPU, fractions finishing "
    "half-used GPUs before opening fresh ones, domains kept at the workload's CPU:GPU ratio) "
    "beats every fixed-ratio policy on every trace, and 8-host domains get nearly all of "
    "the benefit of one pool.",
    "- Why 98 % is out of reach on the default trace under this protocol: 35 % of its "
    "fractional pods ask 810 milli. Two of them never share a GPU, so while free GPUs remain "
    "any policy that places every pod that fits gives each its own GPU and leaves 190 milli "
    "that only pods of at most 190 milli can use. Seed 42, composable across all hosts: "
    "1,048 such pods placed = 3.2 % of capacity left over, and all the pods of at most 190 "
    "milli placed in the run (140) make up 0.3 %: a ceiling near 97.1 % before any other "
    "fragmentation, which `balance` comes within about 1.4 points of (the rest is mostly "
    "the leftovers of 470 + 470 and 3 x 320). At the end of that run no GPU is unbound: all "
    "the idle GPU milli is in such slivers.",
]


def verdict(results) -> tuple[str, bool]:
    def mean(key):
        runs = results.get(key)
        return statistics.fmean(r.samples[130] for r in runs) if runs else None

    parts, ok = [], True
    for policy in ("fgd", "fgd-bf", "fgd-bal"):
        fixed = mean(("default", "fixed", policy))
        if fixed is not None:
            hit = fixed >= 95.4
            ok &= hit
            parts.append(
                f"fixed-ratio {policy} {fixed:.2f} % against ≥ 95.4 % — "
                f"{'met' if hit else f'missed by {95.4 - fixed:.2f} point'}"
            )
    for mode in ("domain", "all"):
        v = mean(("default", mode, "balance"))
        if v is not None:
            hit = v >= 98.0
            ok &= hit
            parts.append(
                f"{MODE_TEXT[mode]} balance {v:.2f} % against ≥ 98 % — "
                f"{'met' if hit else f'missed by {98.0 - v:.2f} points'}"
            )
    text = "Targets (default trace, 130 % arrived): " + "; ".join(parts) + "." if parts else ""
    return text, ok


def main(argv: list[str] | None = None) -> int:
    traces_all = sorted(
        p.stem.removeprefix("openb_pod_list_") for p in TRACE_DIR.glob("openb_pod_list_*.csv")
    )
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=len(SEEDS), help="how many seeds from 42")
    ap.add_argument("--traces", default=",".join(traces_all), help="comma list, e.g. default")
    ap.add_argument("--modes", default=",".join(MODES), help="fixed,domain,all")
    ap.add_argument("--policies", default="", help="only these policies (comma list)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--no-write", action="store_true", help="print instead of writing docs")
    args = ap.parse_args(argv)
    seeds = list(range(42, 42 + args.seeds))
    traces = [t for t in args.traces.split(",") if t]
    modes = [m for m in args.modes.split(",") if m]
    only = {p for p in args.policies.split(",") if p}
    jobs = [
        (t, m, p, s)
        for t in traces
        for m in modes
        for p in POLICIES[m]
        if not only or p in only
        for s in seeds
    ]
    started = time.perf_counter()
    results: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    if args.jobs > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            out = pool.imap_unordered(job, jobs)
            for key, _seed, run in out:
                results[key].append(run)
                sys.stderr.write(f"{key} {run.samples} dropped={run.dropped} {run.seconds:.1f}s\n")
    else:
        for j in jobs:
            key, _seed, run = job(j)
            results[key].append(run)
            sys.stderr.write(f"{key} {run.samples} dropped={run.dropped} {run.seconds:.1f}s\n")
    elapsed = time.perf_counter() - started
    text, ok = verdict(results)
    if args.no_write:
        print(
            section(results, traces, modes, seeds, elapsed, "(not written)").replace(
                "TARGETS", text
            )
        )
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
    body = section(results, traces, modes, seeds, elapsed, header).replace("TARGETS", text)
    write_section("packing", body)
    print(body)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
