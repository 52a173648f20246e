"""Composable pools in bench/bench_packing.py: the re-implemented policies balance, bestfit
(naive pooling), fgd and fgd-bal over a pool of GPUs per switch domain or across all hosts."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from bench.packing_data import (
    DOMAIN_FIT_WEIGHT,
    DOMAIN_SIZE,
    FULL,
    PARTIAL_SLACK,
    TYPICAL_POPULARITY,
    Cluster,
    Pod,
    allowed_models,
)
from bench.packing_fixed import Fragmentation, stranded

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
        self.bind_unbound(self.pick_host(pod, cand), pod, allowed)
        return True

    def bind_unbound(self, h: int, pod: Pod, allowed: np.ndarray) -> None:
        """Bind `pod.k` unbound GPUs of host h's domain to it, of the allowed model the
        domain has most of."""
        d = int(self.dom[h])
        models = np.nonzero(allowed & (self.pool[d] >= pod.k))[0]
        m = int(models[np.argmax(self.pool[d, models])])
        gpus = [self.unbound[(d, m)].pop() for _ in range(pod.k)]
        self.pool[d, m] -= pod.k
        self.bind(h, pod, gpus)

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
        self.bind_unbound(x, pod, allowed)
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
