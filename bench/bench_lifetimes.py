"""Benchmark: the hardware the trace's real stream needs, fixed-ratio against composable.

Run from the repository root with the project's virtual environment (numpy, for
bench_packing's helpers, as bench_packing.py says):

    .venv/bin/python bench/bench_lifetimes.py                   # the whole stream, writes the docs
    .venv/bin/python bench/bench_lifetimes.py --limit 1000 --no-write   # the first 1,000 pods

Data (read in place) as bench/bench_packing.py reads it, under `$COMPOSER_BENCH_DATA`
(default `var/bench-data/`): `alibaba-gpu-v2023/openb_pod_list_default.csv` (the pods, each
with its `creation_time` and `deletion_time`) and `openb_node_list_gpu_node.csv` (the
servers). `--limit N` keeps the first N pods in time order.

The pods are replayed in time order with departures (bench/lifetimes_replay.py: arrivals at
creation_time, departures at deletion_time, a departure before an arrival at the same
second, a refused pod never departs), each decided by the product's
`composer.placement.engine.place()` on a snapshot built with `Snapshot.build` from the
inventory less what the pods placed so far hold (bench/lifetimes_fabric.py), with the
engine's "pack" policy (fill hosts rather than spread: the question is how little carries
the stream). Reported, for the whole stream with at most 1 % of the pods refused, the GPUs,
cores and memory to provision (bench/lifetimes_sizing.py):

(a) fixed-ratio: the fewest servers of the node list's mix of shapes (apportioned by largest
    remainder), each server's GPUs in an enclosure only it reaches;
(b) composable: hosts of one shape (the trace's largest server's cores, so every pod fits;
    local memory per core the 5th percentile, by cores, of what the pods ask per core,
    rounded down to a whole GiB), GPUs in pooled chassis of 16 every host reaches, CXL
    memory in boxes of 8 partitionable devices of 256 GiB; a pod's memory is local up to its
    cores' share of its host's local memory and from CXL beyond that (`memory_gib`). Hosts,
    GPUs and CXL GiB are each searched with the other two at twice their lower bound, then
    checked together;
(c) the lower bound: the peak of concurrent demand of each resource over the same events.

The searches try the lower bound first, then grow by half until the replay refuses at most
1 %, then bisect to within 0.5 %. A replay stops at the first refusal beyond 1 %.

GPU shares: a pod asking a fraction of one GPU asks a share when the engine has them
(bench/lifetimes_fabric.py `SHARES`); until then a whole GPU, and the output says so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.lifetimes_fabric import ROUNDED, SHARES, Server  # noqa: E402
from bench.lifetimes_replay import Peaks, Search, TracePod, allowed, peak, peaks  # noqa: E402
from bench.lifetimes_sizing import (  # noqa: E402
    CHASSIS,
    CXL_BOX,
    CXL_DEVICE,
    MIB,
    Composable,
    ComposableSizing,
    HostShape,
    apportion,
    host_shape,
    size_composable,
    size_fixed,
)
from bench.packing_data import TRACE_DIR, pod_from_row, read_csv  # noqa: E402

TARGET = 1.05  # composable within 5 % of the lower bound on every resource


def load(trace: str, limit: int | None) -> list[TracePod]:
    """The trace's pods in time order (creation, then the list's order); the first `limit`."""
    rows = read_csv(TRACE_DIR / f"openb_pod_list_{trace}.csv")
    pods = [
        TracePod(pod_from_row(r), int(r["creation_time"]), int(r["deletion_time"])) for r in rows
    ]
    pods.sort(key=lambda p: p.start)  # stable: the list's order at equal times
    return pods[:limit] if limit else pods


def server_shapes() -> list[tuple[Server, int]]:
    """The node list's server shapes and how many of each, commonest first."""
    rows = read_csv(TRACE_DIR / "openb_node_list_gpu_node.csv")
    counts = Counter(
        Server(int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"]) for r in rows
    )
    return counts.most_common()


def totals(servers: list[Server]) -> tuple[int, float, float]:
    """GPUs, cores and GiB of a list of servers."""
    return (
        sum(s.gpus for s in servers),
        sum(s.cpu for s in servers) / 1000,
        sum(s.mem for s in servers) / MIB,
    )


def fixed_low(shapes: list[tuple[Server, int]], bound: Peaks) -> int:
    """The fewest servers of the mix whose GPUs, cores and memory each reach their peak."""
    total = 1
    while True:
        gpus, cores, gib = totals(apportion(shapes, total))
        if gpus >= bound.gpus_whole and cores >= bound.cores and gib >= bound.mem_mib / MIB:
            return total
        total += 1


def tried(search: Search, unit: str) -> str:
    return ", ".join(
        f"{size:,} {unit} {'refused ≥' if o.stopped else 'refused'} {o.refused} ({o.seconds:.0f} s)"
        for size, o in search.tried
    )


def section(
    pods: list[TracePod],
    bound: Peaks,
    shapes: list[tuple[Server, int]],
    fixed: Search,
    comp: ComposableSizing,
    elapsed: float,
    header: str,
) -> tuple[str, bool]:
    servers = apportion(shapes, fixed.size)
    f_gpus, f_cores, f_gib = totals(servers)
    size, shape = comp.size, comp.shape
    c_gpus = sum(size.gpus.values())
    c_cores = size.cores(shape) / 1000
    c_gib = shape.memory(size.cores(shape)) / MIB + size.cxl_gib
    lb_gib = bound.mem_mib / MIB
    rows = [
        ("GPUs", f_gpus, c_gpus, bound.gpus, "{:,.0f}", "{:,.1f}"),
        ("cores", f_cores, c_cores, bound.cores, "{:,.0f}", "{:,.1f}"),
        ("memory (GiB)", f_gib, c_gib, lb_gib, "{:,.0f}", "{:,.0f}"),
    ]
    missed = [f"{name} ({c / lb:.3f})" for name, _, c, lb, _, _ in rows if c > TARGET * lb]
    fixed_out = next(o for n, o in fixed.tried if n == fixed.size)
    joint_out = comp.joint[-1][1]
    mix = Counter(servers)
    decisions = sum(o.decisions for s in (fixed, *comp.searches.values()) for _, o in s.tried)
    decisions += sum(o.decisions for _, o in comp.joint)
    shares = "GPU fractions as the engine's shares" if SHARES else f"Note: {ROUNDED}"
    lines = [
        "<!-- bench:lifetimes:start -->",
        "## Lifetimes: what the trace's stream needs, fixed-ratio and composable",
        "",
        header,
        "",
        f"`python bench/bench_lifetimes.py`: the {len(pods):,} pods of "
        "openb_pod_list_default replayed in time order with their real lifetimes "
        "(arrival at creation_time, departure at deletion_time; a refused pod never "
        "departs), every decision the product's `place()` (policy pack) on a snapshot of "
        f"the inventory less what is held; at most {allowed(len(pods)):,} pods (1 %) "
        f"refused. {shares}. Lower bound: the peak of concurrent demand of each resource "
        "(GPUs as milli / 1000).",
        "",
        "| resource | fixed-ratio (a) | composable (b) | lower bound (c) | (b)/(c) | (a)/(c) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, a, b, c, whole, bound_fmt in rows:
        lines.append(
            f"| {name} | {whole.format(a)} | {whole.format(b)} | {bound_fmt.format(c)} | "
            f"{b / c:.3f} | {a / c:.3f} |"
        )
    lines += [
        "",
        f"Fixed-ratio: {fixed.size:,} servers of the node list's mix ("
        + ", ".join(
            f"{n} x {s.cpu // 1000} cores / {s.mem // MIB} GiB / {s.gpus} {s.model}"
            for s, n in mix.most_common()
        )
        + f"); {fixed_out.refused:,} pods refused. Servers tried (from the first count whose "
        f"GPUs, cores and memory each reach their peak): {tried(fixed, 'servers')}.",
        "",
        f"Composable: {size.big:,} hosts of {shape.big // 1000} cores (the trace's largest "
        f"server: every pod fits one) and {size.small:,} of {shape.small // 1000} cores (the "
        "smallest of the trace's servers that 99 % of the pods fit), each with "
        f"{shape.local // MIB} GiB of local memory per core (the 5th percentile of the pods' "
        "memory per core, by cores, in whole GiB); "
        + ", ".join(f"{n:,} {m} GPUs" for m, n in size.gpus.items())
        + " (the node list's commonest model: the pod list names none, so one pool serves "
        f"every pod) in chassis of {CHASSIS}; {size.cxl_gib:,} GiB of CXL memory in devices of "
        f"{CXL_DEVICE // MIB} GiB, {CXL_BOX} to a box. A pod's memory is local up to its "
        "cores' share of its host's local memory, CXL memory beyond it; peak CXL demand "
        f"{peak(pods, lambda p: p.mem - shape.local_share(p)) / MIB:,.0f} GiB. Together: "
        f"{joint_out.refused:,} pods refused"
        + (
            f" after growing all but the big hosts by {len(comp.joint) - 1} %"
            if len(comp.joint) > 1
            else ""
        )
        + ". Searched one at a time, the others at twice their lower bound: big hosts "
        f"{tried(comp.searches['big'], 'hosts')}; small hosts (with those big ones) "
        f"{tried(comp.searches['small'], 'hosts')}; GPUs {tried(comp.searches['gpus'], 'GPUs')}; "
        f"CXL {tried(comp.searches['cxl'], 'GiB')}.",
        "",
        f"Without shares the engine holds a whole GPU for each fraction: the peak is then "
        f"{bound.gpus_whole:,.0f} GPUs, composable {c_gpus / bound.gpus_whole:.3f} and "
        f"fixed-ratio {f_gpus / bound.gpus_whole:.3f} of it. Whole run: {elapsed:.0f} s, "
        f"{decisions:,} decisions "
        f"({decisions / elapsed:,.0f} per second, a snapshot built for each).",
        "",
        "Target: composable within 5 % of the lower bound on every resource: "
        + (f"missed on {', '.join(missed)}." if missed else "met.")
        + " The lower bound places every pod; (a) and (b) may refuse 1 %.",
        "<!-- bench:lifetimes:end -->",
    ]
    return "\n".join(lines), not missed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--limit", type=int, help="only the first N pods in time order")
    ap.add_argument("--no-write", action="store_true", help="print instead of writing docs")
    args = ap.parse_args(argv)
    if not TRACE_DIR.is_dir():
        print(f"No trace in {TRACE_DIR}: see bench/bench_packing.py.", file=sys.stderr)
        return 2
    started = time.perf_counter()
    pods = load("default", args.limit)
    if any(p.pod.spec for p in pods):  # one pool, any model: a model asked would be ignored
        print("Pods that ask for a GPU model (gpu_spec) are not replayed yet.", file=sys.stderr)
        return 2
    shapes = server_shapes()
    bound = peaks(pods)
    if not SHARES:
        sys.stderr.write(f"{ROUNDED}\n")
    sys.stderr.write(f"{len(pods)} pods; lower bound {bound}\n")
    fixed = size_fixed(pods, shapes, fixed_low(shapes, bound))
    sys.stderr.write(f"fixed: {fixed.size} servers; {tried(fixed, 'servers')}\n")
    shape: HostShape = host_shape(pods, sorted({s.cpu for s, _ in shapes}))
    model = shapes[0][0].model  # the commonest: the default pod list names no model
    big = peak(pods, lambda p: p.cpu if p.cpu > shape.small else 0)
    low = Composable(
        math.ceil(big / shape.big),
        math.ceil(max(0.0, bound.cores * 1000 - big) / shape.small),
        {model: math.ceil(bound.gpus if SHARES else bound.gpus_whole)},
        math.ceil(peak(pods, lambda p: p.mem - shape.local_share(p)) / MIB),
    )
    comp = size_composable(pods, shape, model, low, math.ceil(bound.cores * 1000))
    sys.stderr.write(f"composable: {comp.size}\n")
    elapsed = time.perf_counter() - started
    if args.no_write or args.limit:
        text, ok = section(pods, bound, shapes, fixed, comp, elapsed, "(not written)")
        print(text)
        return 0 if ok else 1
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    from bench.common import machine, write_section

    info = machine()
    header = (
        f"Measured {info['date']} on {info['arch']}, {info['cpu']}, {info['cores']} cores "
        f"(load average {info['load']}); Python {info['python']} (no database used)."
    )
    body, ok = section(pods, bound, shapes, fixed, comp, elapsed, header)
    write_section("lifetimes", body)
    print(body)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
