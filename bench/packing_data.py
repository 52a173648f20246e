"""The data of bench/bench_packing.py: the Alibaba trace's cluster and pods, the FGD protocol's
workload, the switch domains, the constants every part of the benchmark shares."""

from __future__ import annotations

import csv
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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


@dataclass
class Run:
    samples: dict[int, float] = field(default_factory=dict)
    dropped: int = 0
    seconds: float = 0.0
    skipped: int = 0  # pods never asked: fractions, where the product has no shared GPUs
