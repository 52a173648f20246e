"""Fixed-ratio servers in bench/bench_packing.py: FGD's fragmentation measure and the
re-implemented policies fgd, fgd-stock, fgd-bal, bestfit and random (see bench_packing's
docstring for the protocol and the authors' rules they follow)."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from bench.packing_data import (
    FGD_STRAND_WEIGHT,
    FULL,
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    TYPICAL_POPULARITY,
    Cluster,
    Pod,
    allowed_models,
)

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
