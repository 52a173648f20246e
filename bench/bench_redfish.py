"""Benchmark: the Redfish driver against the simulated world served as Redfish.

Run from the repository root with the project's virtual environment:

    DATABASE_URL=postgres://... .venv/bin/python bench/bench_redfish.py
    .venv/bin/python bench/bench_redfish.py --devices 1000 --no-write   # quick look
    .venv/bin/python bench/bench_redfish.py --smoke --no-write          # proves it runs

Two parts, each writing its own section of docs/benchmarks.md:

- `sync` (section redfish-sync): a world of `--devices` devices (WorldSpec.for_device_count)
  written into a throwaway database and served as Redfish by `manage.py simulator_redfish`
  in a process of its own, every simulated latency zero; then an inventory sync
  (`inventory_sync`, the service the workers run) of a Redfish manager added as an
  operator adds one, once with `$expand` (the service root advertises it) and once with the
  manager's setting `use_expand` false. Counted in this process, on the driver's own
  session (`Session.request`: every request after signing in): the requests of the
  discovery walk, of the bindings read, and of the whole sync, with the wall time of each.
- `e2e` (section redfish-e2e): bench_e2e's sequential compose run (the same client,
  services, request shape and timeline), once with the simulated driver and once with a
  Redfish manager reading the same demo world served as Redfish, each in its own
  throwaway database: request -> READY side by side, measured in the same run.

The script exits 1 when the two syncs disagree on what they found.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from bench import bench_e2e  # noqa: E402  (sets Django up)
from bench.common import busy_note, machine, markers, write_section  # noqa: E402
from bench.processes import database_url, redfish_service  # noqa: E402
from bench.redfish_manager import redfish_manager  # noqa: E402
from fabric.drivers.redfish.client import Options, Session  # noqa: E402
from fabric.drivers.redfish.driver import RedfishDriver  # noqa: E402
from fabric.drivers.redfish.sessions import session_for  # noqa: E402
from fabric.services.sync import inventory_sync  # noqa: E402
from fabric.simulator import store  # noqa: E402
from fabric.simulator.builder import world_write  # noqa: E402
from fabric.simulator.redfish.auth import credentials  # noqa: E402
from fabric.simulator.spec import WorldSpec  # noqa: E402

SYNC_START, SYNC_END = markers("redfish-sync")
E2E_START, E2E_END = markers("redfish-e2e")
FABRIC = "redfish"
log = sys.stderr.write


# --- counting what the driver does ---------------------------------------------------------


@dataclass
class Tally:
    """Requests made on the driver's session, and the wall time of the driver's calls."""

    requests: int = 0
    expanded: int = 0
    calls: dict[str, tuple[float, int]] = field(default_factory=dict)  # name -> (s, requests)
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextmanager
def counted() -> Iterator[Tally]:
    """Count every request the Redfish driver sends (through `Session.request`, the one
    way it talks to a service once signed in) and time its `discover` and `bindings`, for
    as long as the block lasts. The shipped methods run unchanged; they are only wrapped."""
    tally = Tally()
    request, discover, bindings = Session.request, RedfishDriver.discover, RedfishDriver.bindings

    def counting(self: Session, method: str, path: str, **kwargs: Any) -> Any:
        with tally.lock:
            tally.requests += 1
            tally.expanded += "$expand" in (kwargs.get("args") or {})
        return request(self, method, path, **kwargs)

    def timed(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: RedfishDriver) -> Any:
            start, before = time.perf_counter(), tally.requests
            try:
                return call(self)
            finally:
                tally.calls[name] = (time.perf_counter() - start, tally.requests - before)

        return run

    Session.request = counting  # type: ignore[method-assign]
    RedfishDriver.discover = timed("discover", discover)  # type: ignore[method-assign]
    RedfishDriver.bindings = timed("bindings", bindings)  # type: ignore[method-assign]
    try:
        yield tally
    finally:
        Session.request = request  # type: ignore[method-assign]
        RedfishDriver.discover = discover  # type: ignore[method-assign]
        RedfishDriver.bindings = bindings  # type: ignore[method-assign]


# --- discovery and sync ---------------------------------------------------------------------


@dataclass(frozen=True)
class SyncRun:
    """One inventory sync of the served world."""

    use_expand: bool
    counts: dict[str, int]  # reported per kind
    discover_s: float
    discover_requests: int
    expanded: int
    bindings_s: float
    bindings_requests: int
    total_s: float
    total_requests: int


def zero_latencies(fabric_name: str) -> None:
    fabric = store.fabric_get(fabric_name)
    for operation in (*store.OPERATIONS, "timeout"):
        store.latency_set(fabric=fabric, operation=operation, ms=0)


def sync_once(endpoint: str, use_expand: bool) -> SyncRun:
    name = f"redfish-{'expand' if use_expand else 'one-by-one'}"
    manager = redfish_manager(name, endpoint, use_expand=use_expand)
    log(f"sync with $expand {'on' if use_expand else 'off'}...\n")
    with counted() as tally:
        start = time.perf_counter()
        result = inventory_sync(manager=manager, source="benchmark")
        total_s = time.perf_counter() - start
    (discover_s, discover_requests), (bindings_s, bindings_requests) = (
        tally.calls["discover"],
        tally.calls["bindings"],
    )
    run = SyncRun(
        use_expand=use_expand,
        counts={kind: c.reported for kind, c in result.kinds.items()},
        discover_s=discover_s,
        discover_requests=discover_requests,
        expanded=tally.expanded,
        bindings_s=bindings_s,
        bindings_requests=bindings_requests,
        total_s=total_s,
        total_requests=tally.requests,
    )
    log(f"  {run}\n")
    return run


def measure_sync(devices: int, folder: Path) -> tuple[WorldSpec, float, list[SyncRun]]:
    """Write the world, serve it, sync it twice. Returns the world, the seconds the service
    took to render it for its first reader (not counted in either sync), and the runs."""
    spec = WorldSpec.for_device_count(devices)
    log(f"writing a world of {spec.device_count} devices...\n")
    world_write(fabric_name=FABRIC, spec=spec)
    zero_latencies(FABRIC)
    database = database_url(connection.settings_dict)
    with redfish_service(database=database, fabric=FABRIC, folder=folder) as endpoint:
        # Sign in once as the managers will (one session per process, shared by both) and
        # read the root: the service renders its tree for the first reader after a sign-in.
        session = session_for(endpoint, credentials(), Options.from_settings({"timeout_s": 120}))
        start = time.perf_counter()
        session.check(session.request("GET", "/redfish/v1/"), "read the service root")
        render_s = time.perf_counter() - start
        runs = [sync_once(endpoint, use_expand) for use_expand in (True, False)]
        session.close()
    return spec, render_s, runs


def sync_report(spec: WorldSpec, render_s: float, runs: list[SyncRun], info: dict[str, str]) -> str:
    devices = spec.device_count
    rows = []
    for r in runs:
        writing_s = r.total_s - r.discover_s - r.bindings_s
        rows.append(
            f"| {'yes' if r.use_expand else 'no (`use_expand` false)'} | "
            f"{r.discover_requests:,} ({r.expanded:,} with `$expand`) | "
            f"{r.discover_requests / devices:.2f} | {r.discover_s:.1f} | "
            f"{r.bindings_requests:,} in {r.bindings_s:.1f} s | {writing_s:.1f} | "
            f"**{r.total_s:.1f}** ({r.total_requests:,} requests) |"
        )
    expand, one_by_one = runs
    ratio = one_by_one.discover_requests / max(1, expand.discover_requests)
    slower = one_by_one.total_s / expand.total_s if expand.total_s else float("nan")
    same = expand.counts == one_by_one.counts
    found = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in expand.counts.items() if n)
    return "\n".join(
        [
            SYNC_START,
            "## Redfish discovery and sync",
            "",
            f"Measured {info['date']} on {info['arch']}, {info['cpu']}, {info['cores']} cores "
            f"(5-minute load average {info['load']}); Python {info['python']}, Django "
            f"{info['django']}, {info['database']}.",
            "",
            f"`python bench/bench_redfish.py --devices {devices}`: a world of {devices:,} "
            "devices (`WorldSpec.for_device_count`) written into a throwaway database and "
            "served as Redfish by `manage.py simulator_redfish` in a process of its own, every "
            "simulated latency 0 ms; then a first inventory sync (`inventory_sync`, empty "
            "tables) of a Redfish manager added as an operator adds one, with `$expand` and "
            "again with the manager's setting `use_expand` false. Requests are counted on the "
            "driver's session (every request after signing in); *discovery* is the driver's "
            "walk (`discover`), *bindings* its fresh read of systems and connections, "
            "*writing* the rest of the sync (diff, rows, change records, failure domains). "
            f"The service rendered its tree for the first reader in {render_s:.1f} s before "
            f"the syncs (not counted). Found: {found}.",
            "",
            "| `$expand` | discovery requests | per device | discovery s | bindings | "
            "writing s | sync s |",
            "|---|--:|--:|--:|--:|--:|--:|",
            *rows,
            "",
            f"Without `$expand` discovery makes {ratio:.1f} times the requests and the whole "
            f"sync takes {slower:.1f} times as long. Both syncs found "
            + ("the same inventory." if same else "**different inventories**: a bug.")
            + (f" {busy_note(info).strip()}" if busy_note(info) else ""),
            SYNC_END,
        ]
    )


# --- compose end to end ---------------------------------------------------------------------


def measure_e2e(args: argparse.Namespace, folder: Path) -> dict[str, bench_e2e.Results]:
    """bench_e2e's sequential run with each driver, each in a throwaway database."""
    results = {}
    for driver in ("simulated", "redfish"):
        e2e = bench_e2e.parser().parse_args(
            [
                "--compositions", str(args.compositions), "--concurrent", "0",
                "--warm-up", str(args.warm_up), "--workers", str(args.workers),
            ]
        )  # fmt: skip
        e2e.driver = driver
        log(f"compose end to end through the {driver} driver...\n")
        old_config = setup_databases(verbosity=0, interactive=False)
        try:
            (folder / driver).mkdir(parents=True, exist_ok=True)
            results[driver] = bench_e2e.measure(e2e, folder / driver)
        finally:
            teardown_databases(old_config, verbosity=0)
    return results


def e2e_report(args: argparse.Namespace, results: dict[str, bench_e2e.Results]) -> str:
    first = results["simulated"]
    info = first.info
    rows = []
    for driver, r in results.items():
        p50, p95, p99, top = bench_e2e.stats(r.rows["ready"])
        in_job = bench_e2e.stats(
            ready - started
            for ready, started in zip(r.rows["ready"], r.rows["started"], strict=True)
        )[0]
        rows.append(
            f"| {driver} | {len(r.rows['ready'])} | **{p50:.1f}** | {p95:.1f} | **{p99:.1f}** | "
            f"{top:.1f} | {in_job:.1f} | {bench_e2e.stats(r.decompose)[0]:.1f} |"
        )
    sim, rf = (bench_e2e.stats(results[d].rows["ready"])[0] for d in ("simulated", "redfish"))
    return "\n".join(
        [
            E2E_START,
            "## Redfish: compose end to end, beside the simulated driver",
            "",
            f"Measured {info['date']} on {info['arch']}, {info['cpu']}, {info['cores']} cores; "
            f"Python {info['python']}, Django {info['django']}, {info['database']}; "
            f"{args.workers} Celery worker processes and one daphne process (5-minute load "
            f"average {max(r.load for r in results.values()):.1f} when the runs ended).",
            "",
            "`python bench/bench_redfish.py`: the sequential run of "
            "[the end-to-end benchmark](#end-to-end-api-request-to-ready-simulated-driver-at-"
            f"zero-latency) (demo data centre, {first.world.device_count} devices; "
            f"{bench_e2e.SHAPE}; request to the READY StateChange row, {args.warm_up} warm-up "
            "rounds not counted), run twice in the same invocation, each in its own throwaway "
            "database with every simulated latency 0 ms: with the simulated driver, then with "
            "a Redfish manager reading the same world served as Redfish by `manage.py "
            "simulator_redfish` in a process of its own (HTTP on the loopback, a session per "
            "worker process).",
            "",
            "| driver | composes | p50 ms | p95 ms | p99 ms | max ms | job RUNNING to READY, "
            "p50 ms | decompose, p50 ms |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
            *rows,
            "",
            f"Through Redfish the median compose takes {rf / sim:.1f} times as long as through "
            "the simulated driver. Timings vary with the machine and its load.",
            E2E_END,
        ]
    )


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=10_000, help="world size of the sync")
    parser.add_argument("--compositions", type=int, default=100, help="composes per driver")
    parser.add_argument("--warm-up", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--only", choices=("sync", "e2e"), help="run one part")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: proves it runs")
    parser.add_argument("--logs", type=Path, default=None, help="keep the processes' logs here")
    parser.add_argument("--no-write", action="store_true", help="print, do not update the docs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.devices, args.compositions, args.warm_up = 120, 3, 1
    warnings.filterwarnings("ignore", message="No directory at")
    Path(settings.BENCH_DIR).mkdir(parents=True, exist_ok=True)
    folder = args.logs or Path(tempfile.mkdtemp(prefix="bench-redfish-"))
    folder.mkdir(parents=True, exist_ok=True)
    sections: list[tuple[str, str]] = []
    agree = True
    try:
        if args.only in (None, "sync"):
            old_config = setup_databases(verbosity=0, interactive=False)
            try:
                spec, render_s, runs = measure_sync(args.devices, folder)
                info = machine()
            finally:
                teardown_databases(old_config, verbosity=0)
            agree = runs[0].counts == runs[1].counts
            sections.append(("redfish-sync", sync_report(spec, render_s, runs, info)))
        if args.only in (None, "e2e"):
            sections.append(("redfish-e2e", e2e_report(args, measure_e2e(args, folder))))
    finally:
        if not args.logs:
            shutil.rmtree(folder, ignore_errors=True)
    for name, section in sections:
        if args.no_write:
            sys.stdout.write(section + "\n\n")
        else:
            write_section(name, section)
            log(f"wrote the {name} section of docs/benchmarks.md\n")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
