"""Benchmark: the topology graph, its JSON, blast radius and reachability at 10,000 devices.

Run from the repository root with the project's virtual environment:

    .venv/bin/python bench/bench_topology.py            # SQLite file under var/bench/
    DATABASE_URL=postgres://... .venv/bin/python bench/bench_topology.py

It creates a throwaway database (the test runner's machinery: created, migrated, dropped),
lays out a simulated data centre of N devices with the simulated builder
(`WorldSpec.for_device_count`), and discovers it with a real inventory sync (which also
derives the failure domains), so the tables hold what the product would hold. Then, in
process (no network):

- topology JSON: `load_graph()` + `topology_json()` (what the page draws and the API serves),
  and the API endpoint `/api/v1/topology/` through Django's test client when it exists;
- blast radius of every single failure domain, one at a time (p50, p99, max per kind);
- all paths from one host (`reachable_devices`) for a sample of hosts, on the world as
  generated (pods: each leaf pair of spines serves its racks) and on the same world with
  the spines joined in a ring (every host reaches every device: the worst case).

The figures replace this benchmark's own section of docs/benchmarks.md. Targets: topology
JSON at most 250 ms (p95), blast radius at most 10 ms (p99) per domain, all paths from one
host at most 5 ms (p99) on the world as generated. The script exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import (  # noqa: E402
    CaptureQueriesContext,
    setup_databases,
    teardown_databases,
)
from django.urls import NoReverseMatch, reverse  # noqa: E402

from bench.common import (  # noqa: E402
    LINK,
    busy_note,
    machine,
    markers,
    percentile,
    write_section,
)
from fabric.models import FabricManager, FailureDomain  # noqa: E402
from fabric.services.domains import domains_refresh  # noqa: E402
from fabric.services.sync import inventory_sync  # noqa: E402
from fabric.simulator.builder import world_write  # noqa: E402
from fabric.simulator.spec import WorldSpec  # noqa: E402
from fabric.topology.domains import derive_domains  # noqa: E402
from fabric.topology.graph import Edge, FabricGraph, reachable_devices  # noqa: E402
from fabric.topology.load import load_graph  # noqa: E402
from fabric.topology.radius import blast_radius  # noqa: E402
from fabric.topology.reach import reach_index  # noqa: E402
from fabric.topology.render import topology_json  # noqa: E402

START, END = markers("topology")
JSON_TARGET_MS = 250.0
BLAST_TARGET_MS = 10.0
REACH_TARGET_MS = 5.0


@dataclass(frozen=True)
class Timing:
    label: str
    samples: list[float]  # ms
    note: str = ""

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    def p(self, fraction: float) -> float:
        return percentile(self.samples, fraction)

    @property
    def max(self) -> float:
        return max(self.samples)


def timed(fn: Callable[[], Any], iterations: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def once(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000


def ringed(graph: FabricGraph) -> FabricGraph:
    """The same fabric with its spines joined in a ring: one connected fabric."""
    spines = [n.id for n in graph.nodes.values() if n.attrs.get("tier") == "spine"]
    extra = [
        Edge(f"link:{-1 - i}", -1 - i, spines[i], spines[(i + 1) % len(spines)], 300, 64.0,
             "up", "ok")
        for i in range(len(spines))
    ]  # fmt: skip
    return FabricGraph(
        graph.nodes.values(),
        [*graph.edges.values(), *extra],
        power_feeds=graph.power_feeds,
        managers=graph.managers,
    )


def reach_timing(graph: FabricGraph, hosts: list[str], label: str) -> tuple[Timing, float]:
    reachable_devices(graph, hosts[0])  # builds the graph's routing tables once
    samples, reached = [], []
    for host in hosts:
        start = time.perf_counter()
        paths = reachable_devices(graph, host)
        samples.append((time.perf_counter() - start) * 1000)
        reached.append(len(paths))
    return Timing(label, samples), statistics.mean(reached)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--hosts", type=int, default=200, help="hosts sampled for paths")
    parser.add_argument("--no-write", action="store_true", help="print, do not update the docs")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="No directory at")
    log = sys.stderr.write

    Path(settings.BENCH_DIR).mkdir(parents=True, exist_ok=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        spec = WorldSpec.for_device_count(args.devices)
        _, write_ms = once(lambda: world_write(fabric_name="bench", spec=spec))
        manager = FabricManager.objects.create(
            name="bench", driver="simulated", endpoint="sim://bench", settings={"fabric": "bench"}
        )
        _, sync_ms = once(lambda: inventory_sync(manager=manager))
        log(f"world written in {write_ms:.0f} ms, synchronised in {sync_ms:.0f} ms\n")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        refresh, refresh_ms = once(lambda: domains_refresh(manager=manager))
        domain_rows = FailureDomain.objects.filter(manager=manager).count()

        with CaptureQueriesContext(connection) as captured:
            graph = load_graph()
        load_queries = len(captured)
        counts = graph.counts()
        log(f"graph: {counts}\n")
        timings = [
            Timing("load_graph()", timed(load_graph, args.iterations)),
            Timing("topology_json(graph) (collapsed)", timed(lambda: topology_json(graph),
                                                              args.iterations)),
            Timing("load_graph() + topology_json()",
                   timed(lambda: topology_json(load_graph()), args.iterations)),
        ]  # fmt: skip
        doc = topology_json(graph)
        json_bytes = len(json.dumps(doc))
        api: Timing | None = None
        api_queries = 0
        try:
            api_path = reverse("api:topology")
        except NoReverseMatch:
            api_path = ""
        if api_path:
            admin = get_user_model().objects.create_superuser("bench-admin", "b@example.com", "x")
            client = Client()
            client.force_login(admin)
            response = client.get(api_path, HTTP_ACCEPT="application/json")
            if response.status_code == 200:
                with CaptureQueriesContext(connection) as captured:
                    client.get(api_path, HTTP_ACCEPT="application/json")
                api_queries = len(captured)
                api = Timing(
                    f"API `GET {api_path}`",
                    timed(
                        lambda: client.get(api_path, HTTP_ACCEPT="application/json"),
                        args.iterations,
                    ),
                    note=f"{len(response.content):,} bytes",
                )
            else:
                log(f"{api_path} answered {response.status_code}; not measured\n")

        specs, derive_ms = once(lambda: derive_domains(graph))
        _, index_ms = once(lambda: reach_index(graph))
        by_kind: dict[str, list[float]] = defaultdict(list)
        widest: dict[str, int] = defaultdict(int)
        degraded: dict[str, int] = defaultdict(int)
        for domain in specs:
            start = time.perf_counter()
            impact = blast_radius(graph, [domain], contributors=())
            by_kind[domain.kind].append((time.perf_counter() - start) * 1000)
            widest[domain.kind] = max(widest[domain.kind], len(impact.devices))
            degraded[domain.kind] = max(degraded[domain.kind], len(impact.devices_degraded))
        blast_all = [ms for samples in by_kind.values() for ms in samples]

        rng = random.Random(7)
        hosts = [n.id for n in graph.nodes.values() if n.kind == "host"]
        sample = rng.sample(hosts, min(args.hosts, len(hosts)))
        reach_pod, reached_pod = reach_timing(graph, sample, "as generated (pods)")
        flat = ringed(graph)
        reach_flat, reached_flat = reach_timing(flat, sample, "spines in a ring (flat)")
        gc.collect()
        info = machine()
    finally:
        teardown_databases(old_config, verbosity=0)

    json_ok = timings[2].p(0.95) <= JSON_TARGET_MS
    blast_ok = percentile(blast_all, 0.99) <= BLAST_TARGET_MS
    reach_ok = reach_pod.p(0.99) <= REACH_TARGET_MS
    lines = [
        START,
        f"## Topology: graph, JSON, blast radius and paths at {args.devices:,} devices",
        "",
        f"Measured {info['date']} on {info['arch']}, {info['cpu']}, {info['cores']} cores "
        f"(5-minute load average {info['load']}); Python {info['python']}, "
        f"Django {info['django']}, {info['database']}.",
        "",
        f"`python bench/bench_topology.py`: the simulated builder's world of {args.devices:,} "
        f"devices (`WorldSpec.for_device_count`: {counts['racks']} racks, {counts['hosts']:,} "
        f"hosts, {counts['switches']} switches, {counts['enclosures']:,} enclosures, "
        f"{counts['links']:,} links) discovered by a real inventory sync ({sync_ms / 1000:.1f} s, "
        f"failure domains included) into a throwaway database. A second `domains_refresh` that "
        f"finds nothing to change: {refresh_ms:.0f} ms ({refresh.domains:,} domains, "
        f"{domain_rows:,} rows). `load_graph()` costs {load_queries} queries.",
        "",
        "| what | p50 ms | p95 ms | max ms | notes |",
        "|---|--:|--:|--:|---|",
    ]
    for t in [*timings, *([api] if api else [])]:
        note = t.note
        if t is timings[2]:
            note = f"{json_bytes:,} bytes of JSON, {doc['counts']['nodes']:,} nodes drawn " \
                   f"(collapsed: {doc['collapsed']}); target {JSON_TARGET_MS:.0f} ms " \
                   f"{'met' if json_ok else 'MISSED'}"  # fmt: skip
        if t is api:
            note += f", {api_queries} queries (with session auth)"
        lines.append(f"| {t.label} | {t.p50:.1f} | {t.p(0.95):.1f} | {t.max:.1f} | {note} |")
    if not api:
        lines.append("| API `/api/v1/topology/` | - | - | - | not routed when measured |")
    lines += [
        "",
        f"Blast radius of every single domain, one at a time ({len(specs):,} domains; "
        f"`derive_domains` {derive_ms:.0f} ms, the reachability index built once per graph "
        f"{index_ms:.0f} ms):",
        "",
        "| domain kind | domains | p50 ms | p99 ms | max ms | most devices lost "
        "| most devices degraded |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for kind, samples in by_kind.items():
        lines.append(
            f"| {kind} | {len(samples):,} | {statistics.median(samples):.2f} | "
            f"{percentile(samples, 0.99):.2f} | {max(samples):.2f} | {widest[kind]:,} | "
            f"{degraded[kind]:,} |"
        )
    lines.append(
        f"| **all** | {len(blast_all):,} | {statistics.median(blast_all):.2f} | "
        f"{percentile(blast_all, 0.99):.2f} | {max(blast_all):.2f} | | |"
    )
    lines += [
        "",
        f"All paths from one host (`reachable_devices`, {len(sample)} hosts):",
        "",
        "| fabric | devices reached (mean) | p50 ms | p99 ms | max ms |",
        "|---|--:|--:|--:|--:|",
        f"| {reach_pod.label} | {reached_pod:,.0f} | {reach_pod.p50:.2f} | "
        f"{reach_pod.p(0.99):.2f} | {reach_pod.max:.2f} |",
        f"| {reach_flat.label} | {reached_flat:,.0f} | {reach_flat.p50:.2f} | "
        f"{reach_flat.p(0.99):.2f} | {reach_flat.max:.2f} |",
        "",
        f"Targets: topology JSON (load + render) at most {JSON_TARGET_MS:.0f} ms (p95) — "
        f"{'met' if json_ok else 'MISSED'}; blast radius of any single domain at most "
        f"{BLAST_TARGET_MS:.0f} ms (p99) — {'met' if blast_ok else 'MISSED'}; all paths from "
        f"one host at most {REACH_TARGET_MS:.0f} ms (p99, world as generated) — "
        f"{'met' if reach_ok else 'MISSED'}. The builder's world is made of pods (each leaf "
        "cabled to one pair of spines, the spines not joined), so a host reaches the "
        "devices of its pod; with the spines in a ring every host reaches every device and "
        "one `Path` object per device dominates (about a microsecond each in CPython). "
        "A max far above its p99 is the odd call that met Python's garbage collector. "
        + busy_note(info)
        + "Timings vary with the machine and its load; the query count does not.",
        END,
    ]
    section = "\n".join(lines)
    # Quoted by docs/topology.md, so that it never carries a figure of its own.
    summary = (
        f"Measured by `bench/bench_topology.py` on {info['date']} at {args.devices:,} "
        f"devices ({info['database']}, {info['cores']} cores, load average {info['load']}): "
        f"`load_graph()` reads the graph in {load_queries} queries and "
        f"{timings[0].p50:,.0f} ms (p50); the topology JSON, load and render, takes "
        f"{timings[2].p(0.95):,.0f} ms (p95); the blast radius of one failure domain "
        f"{percentile(blast_all, 0.99):.2f} ms (p99 over {len(specs):,} domains); a "
        f"`domains_refresh` that finds nothing to change {refresh_ms:,.0f} ms. "
        f"[All the figures]({LINK})."
    )
    if args.no_write:
        sys.stdout.write(section + "\n\n" + summary + "\n")
    else:
        written = write_section("topology", section, excerpts={"summary": summary})
        log(f"wrote {', '.join(str(path.relative_to(ROOT)) for path in written)}\n")
    log(section + "\n")
    return 0 if json_ok and blast_ok and reach_ok else 1


if __name__ == "__main__":
    sys.exit(main())
