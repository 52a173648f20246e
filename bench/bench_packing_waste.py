"""Where the product's engine leaves GPU capacity free at the end of the packing protocol.

bench/bench_packing.py measures how much of the GPU capacity the engine allocates; this
says where the rest stays free in the engine's own final state, so that a target the engine
misses can be read against it. The product's engine replays seeds of the default trace as
it does there (bench/packing_product.py: the protocol's arrivals, `place()` deciding), the
whole workload (arrivals while the GPU request stays within 130 % of capacity); each free
thousandth of a GPU is then sorted by what could still use it:

* a whole GPU left free;
* a gap on a GPU that holds a fraction of more than half a GPU: only a smaller fraction can
  use it, as two such fractions never share a GPU (the ceiling's argument,
  bench/packing_bound.py);
* a gap on a GPU that holds only fractions of half a GPU or less;

and each gap by whether some fraction of the trace fits it (its share, its cores and
memory on the GPU's host, its GPU model) or none does. That is this engine's state, not a
bound on every policy (bench/packing_bound.py gives that). The GPUs' contents (the fractions
they hold) that leave the most free are listed too, and fixed-ratio servers' whole free GPUs
(stranded beside spent cores or memory: what pooling frees) are set against the gaps beside
fractions (which it does not: a shared GPU serves one host). The run is deterministic (the seed),
so the section is a pure function of the trace and the code that decides.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import markers, write_section  # noqa: E402
from bench.packing_data import (  # noqa: E402
    FULL,
    PRODUCT_TARGETS,
    SEEDS,
    TRACE_DIR,
    TUNE,
    Cluster,
    Pod,
    cluster_from_rows,
    pod_from_row,
    read_csv,
    workload,
)
from bench.packing_product import ProductSim  # noqa: E402
from bench.packing_runs import stamp, trace_missing  # noqa: E402
from composer.placement.request import Placement  # noqa: E402
from composer.placement.shares import shares_taken  # noqa: E402

MODES = {"fixed": "fixed-ratio servers", "domain": "8-host domains", "all": "all hosts"}
TOP = 5  # GPU contents listed, those that leave the most free first
CATEGORIES = (
    ("whole", "whole GPUs free"),
    ("big-none", "beside a fraction > 1/2 GPU, no fraction fits"),
    ("big-fits", "beside a fraction > 1/2 GPU, a fraction fits"),
    ("small-none", "beside fractions ≤ 1/2 GPU, no fraction fits"),
    ("small-fits", "beside fractions ≤ 1/2 GPU, a fraction fits"),
)


Fraction = tuple[int, int, int, frozenset[str] | None]  # share, cores, memory, models


class Tracked(ProductSim):
    """The product's replay, noting which fractions each GPU holds (the engine's snapshot
    keeps only what is free)."""

    def __init__(self, cluster: Cluster, mode: str, pods: Sequence[Pod]):
        super().__init__(cluster, mode, "composer", pods)
        self.held: dict[str, list[int]] = defaultdict(list)

    def take(self, pod: Pod, plan: Placement) -> None:
        super().take(pod, plan)
        for device_id in shares_taken(plan):
            self.held[device_id].append(pod.milli)


@dataclass
class Waste:
    """One run's free GPU capacity at the end of the workload, in thousandths of a GPU (or
    several runs' together: `merged`)."""

    capacity: int
    allocated: int
    by_category: Counter[str] = field(default_factory=Counter)
    by_contents: Counter[str] = field(default_factory=Counter)  # "810", "470 + 470"


def merged(wastes: Sequence[Waste]) -> Waste:
    """The seeds' runs as one: capacities, allocations and free capacity summed, so that a
    share of the sum is the mean share over the seeds (every run has the same capacity)."""
    total = Waste(capacity=sum(w.capacity for w in wastes), allocated=0)
    for w in wastes:
        total.allocated += w.allocated
        total.by_category.update(w.by_category)
        total.by_contents.update(w.by_contents)
    return total


def fractions(pods: Iterable[Pod]) -> list[Fraction]:
    """The trace's distinct fractions as (share, cores, memory, models or None: any)."""
    found = {
        (p.milli, p.cpu, p.mem, frozenset(p.spec.split("|")) if p.spec else None)
        for p in pods
        if p.k == 1 and p.milli < FULL
    }
    return sorted(found, key=lambda f: (f[0], f[1], f[2]))


def sort_free(sim: Tracked, shapes: Sequence[Fraction], capacity: int) -> Waste:
    """The free capacity of `sim`'s snapshot, sorted by what could still use it."""
    snapshot = sim.snapshot
    waste = Waste(capacity=capacity, allocated=sim.allocated)
    for device in snapshot.devices.values():
        if device.kind != "gpu":
            continue
        held = sim.held.get(device.id)
        if not held:
            assert device.shared_host is None, f"{device.id} is bound but holds nothing"
            waste.by_category["whole"] += FULL
            continue
        assert device.shared_host is not None, f"{device.id} holds shares but is unbound"
        gap = device.shares_free
        host = snapshot.hosts[device.shared_host]
        fits = any(
            share <= gap
            and cores <= host.cores_free
            and memory <= host.memory_gib_free
            and (models is None or device.model in models)
            for share, cores, memory, models in shapes
        )
        side = "big" if max(held) * 2 > FULL else "small"
        waste.by_category[f"{side}-{'fits' if fits else 'none'}"] += gap
        waste.by_contents[" + ".join(str(m) for m in sorted(held, reverse=True))] += gap
    return waste


def run(cluster: Cluster, pods: list[Pod], mode: str, seed: int) -> Waste:
    """Replay `seed`'s whole workload in `mode` (arrivals up to 130 % of capacity)."""
    capacity = cluster.gpu_total * FULL
    sim = Tracked(cluster, mode, pods)
    for pod in workload(pods, capacity, seed, TUNE):
        sim.place(pod)
    return sort_free(sim, fractions(pods), capacity)


def job(args: tuple[str, str, int]) -> tuple[str, int, Waste]:
    trace, mode, seed = args
    cluster = cluster_from_rows(read_csv(TRACE_DIR / "openb_node_list_gpu_node.csv"))
    pods = [pod_from_row(r) for r in read_csv(TRACE_DIR / f"openb_pod_list_{trace}.csv")]
    return mode, seed, run(cluster, pods, mode, seed)


def pct(milli: float, capacity: int) -> str:
    return f"{100.0 * milli / capacity:.2f}"


def fitting(contents: str, pods: Sequence[Pod]) -> float:
    """The share (%) of the trace's fractional pods small enough for the gap that GPU
    contents ("470 + 470") leave, whatever their cores."""
    gap = FULL - sum(int(m) for m in contents.split(" + "))
    asks = [p.milli for p in pods if p.k == 1 and p.milli < FULL]
    return 100.0 * sum(1 for m in asks if m <= gap) / max(1, len(asks))


def reading(trace: str, runs: dict[str, list[Waste]]) -> list[str]:
    """Per composable mode of the default trace (the one the engine's targets are set on),
    what the target would ask of the free capacity: the points beside big fractions (usable
    by small fractions only) against the rest."""
    out = []
    for mode, wastes in runs.items():
        target = PRODUCT_TARGETS.get(mode)
        if trace != "default" or mode == "fixed" or target is None:
            continue
        total = merged(wastes)
        capacity = total.capacity
        free = sum(total.by_category.values())
        none = total.by_category["big-none"]
        big = none + total.by_category["big-fits"]
        allowed = 100.0 - target
        share = 100.0 * big / capacity
        if share > allowed:
            ask = (
                f"the gaps beside big fractions alone exceed that by {share - allowed:.2f} "
                "points, so the engine would have to leave fewer of them, or fill more with "
                "small fractions"
            )
        else:
            ask = (
                "with the gaps beside big fractions as they are, everything else would have "
                f"to fall to {allowed - share:.2f} points"
            )
        out.append(
            f"- {MODES[mode]}: of the {pct(free, capacity)} points left free, "
            f"{share:.2f} sit beside fractions of more than half a GPU ({pct(none, capacity)} "
            "where no fraction of the trace fits any longer, the rest where one would fit but "
            f"none came), and {pct(free - big, capacity)} elsewhere. The target of {target} % "
            f"leaves {allowed:.2f} points free: {ask}."
        )
    if not out:
        return []
    return [
        "Against the engine's composable targets, in this final state:",
        "",
        *out,
        "",
        *pooling(runs),
    ]


def pooling(runs: dict[str, list[Waste]]) -> list[str]:
    """What composing could still win over fixed-ratio servers here: the whole GPUs those
    leave free (stranded beside spent cores or memory, which pooling frees) against the gaps
    beside fractions (a shared GPU serves one host, pooled or not)."""
    if "fixed" not in runs or not any(m in runs for m in ("domain", "all")):
        return []
    fixed = merged(runs["fixed"])
    whole = fixed.by_category["whole"]
    gaps = sum(fixed.by_category.values()) - whole
    best = max((merged(runs[m]) for m in ("domain", "all") if m in runs), key=lambda w: w.allocated)
    text = (
        f"Fixed-ratio servers end with {pct(whole, fixed.capacity)} % of the GPU capacity in "
        "whole free GPUs (stranded beside spent cores or memory: the waste composing removes) "
        f"and {pct(gaps, fixed.capacity)} % in gaps beside fractions (which it does not: a "
        "shared GPU serves only the host it is bound to). The best composable run allocates "
        f"{pct(best.allocated, best.capacity)} % against fixed-ratio's "
        f"{pct(fixed.allocated, fixed.capacity)} %"
    )
    if whole * 10 <= gaps:
        text += (
            ": with so little stranded, what the composable targets ask is tighter packing "
            "of the fractions, which pooling does not give"
        )
    return [text + ".", ""]


def section(trace: str, runs: dict[str, list[Waste]], pods: Sequence[Pod], measured: str) -> str:
    """The docs section: per mode the free capacity by category, then the GPU contents
    that leave the most, each as a mean share of the GPU capacity over the seeds."""
    start, end = markers("packing-waste")
    seeds = len(next(iter(runs.values())))
    head = "| mode | allocated | free | " + " | ".join(t for _, t in CATEGORIES) + " |"
    rule = "|---|" + "--:|" * (2 + len(CATEGORIES))
    rows = []
    contents: list[str] = []
    for mode, wastes in runs.items():
        total = merged(wastes)
        capacity = total.capacity
        cells = [pct(total.allocated, capacity), pct(sum(total.by_category.values()), capacity)]
        cells += [pct(total.by_category[k], capacity) for k, _ in CATEGORIES]
        rows.append(f"| {MODES[mode]} | " + " | ".join(cells) + " |")
        listed = "; ".join(
            f"{held} milli, {pct(milli, capacity)} % ({fitting(held, pods):.1f} % of the "
            "fractional pods are small enough for its gap)"
            for held, milli in total.by_contents.most_common(TOP)
        )
        contents.append(f"- {MODES[mode]}: {listed}.")
    return "\n".join(
        [
            start,
            "## Where the free GPU capacity sits (product engine, end of the packing protocol)",
            "",
            f"`python bench/bench_packing_waste.py`: the product's engine replays the "
            f"{trace} trace (seeds {SEEDS[0]}..{SEEDS[0] + seeds - 1}) as in the packing "
            "benchmark above, the whole workload (arrivals while the GPU request stays within "
            "130 % of capacity); the GPU capacity still free at its end is then sorted by what "
            "could use it. "
            "Shares of the GPU capacity, mean over the seeds. A fraction fits a gap when its "
            "share, its cores and memory on the GPU's host and its GPU model do; a fraction "
            "of more than half a GPU never shares a GPU with another such fraction, so a gap "
            "beside one is for smaller fractions only.",
            "",
            head,
            rule,
            *rows,
            "",
            "The GPU contents that leave the most free: the fractions a GPU holds, the share "
            "of the capacity left free on such GPUs, and how many of the trace's fractional "
            "pods are small enough for the gap they leave:",
            "",
            *contents,
            "",
            *reading(trace, runs),
            f"Measured {measured}; Python {platform.python_version()} (no database used).",
            end,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=len(SEEDS), help="how many seeds")
    ap.add_argument("--trace", default="default", help="the pod list, e.g. default")
    ap.add_argument("--modes", default=",".join(MODES), help="fixed,domain,all")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--no-write", action="store_true", help="print instead of writing docs")
    args = ap.parse_args(argv)
    if trace_missing(TRACE_DIR):
        return 2
    modes = [m for m in args.modes.split(",") if m]
    jobs = [(args.trace, m, s) for m in modes for s in SEEDS[: args.seeds]]
    runs: dict[str, list[Waste]] = {m: [] for m in modes}
    if args.jobs > 1 and len(jobs) > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            outs = list(pool.imap_unordered(job, jobs))
    else:
        outs = [job(j) for j in jobs]
    for mode, seed, waste in sorted(outs, key=lambda o: (modes.index(o[0]), o[1])):
        runs[mode].append(waste)
        sys.stderr.write(f"{mode} {seed} {pct(waste.allocated, waste.capacity)} %\n")
    pods = [pod_from_row(r) for r in read_csv(TRACE_DIR / f"openb_pod_list_{args.trace}.csv")]
    text = section(args.trace, runs, pods, stamp())
    if args.no_write:
        print(text)
    else:
        for path in write_section("packing-waste", text):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
