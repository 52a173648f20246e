"""The packing runs kept between invocations of bench/bench_packing.py, by code version.

A run of the product's engine over the trace takes minutes and the whole table (every pod
list, mode and seed) hours on a small machine, longer than one sitting. A run's result is a
pure function of the trace, the seed and the code that decides, so each finished run is kept
in `bench/results/packing-runs.json` under a digest of that code, the moment it finishes: a run
cut short loses only the runs still under way, the next invocation does only what is
missing, and the section is written from every kept run of the current code. A change to
the code a run depends on changes the digest, so results of older code are never mixed in
(they stay in the file until `--prune`, `--fresh` or the file is removed). Times (s/run)
are kept with the run too, with the date and machine they were measured on. The file is
committed: the section in docs/benchmarks.md can be checked against the runs it was written
from, and a new checkout keeps every run its code still matches instead of hours of
running them again.

What a run depends on:

* every run and ceiling: the trace replay, sampling and workload (bench/packing_replay.py,
  bench/packing_data.py), not the command line (bench/bench_packing.py);
* the re-implemented policies: bench/packing_fixed.py, bench/packing_pool.py;
* the ceilings: bench/packing_bound.py, bench/packing_configs.py;
* the product's engine (`composer*` policies): bench/packing_product.py and the engine
  itself (composer/placement/, fabric/kinds.py, fabric/latency.py);
* every run and ceiling: the cluster and the pod list it read, and numpy's version.

Several invocations may run at once: each adds its runs to the file under a lock, re-read
before each write, so none writes over another's.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.packing_data import Run

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "bench" / "results" / "packing-runs.json"

_COMMON = ("bench/packing_replay.py", "bench/packing_data.py")
_DEPENDS = {
    "bound": (*_COMMON, "bench/packing_bound.py", "bench/packing_configs.py"),
    "reimplemented": (*_COMMON, "bench/packing_fixed.py", "bench/packing_pool.py"),
    "product": (
        *_COMMON,
        "bench/packing_product.py",
        "composer/placement",
        "fabric/kinds.py",
        "fabric/latency.py",
    ),
}

Job = tuple[str, str, str, str, int, float | None]  # kind, trace, mode, policy, seed, strand


def family(kind: str, policy: str) -> str:
    """Which code a job's result depends on (a key of `_DEPENDS`)."""
    if kind == "bound":
        return "bound"
    return "product" if policy.startswith("composer") else "reimplemented"


def digest(name: str, root: Path = ROOT) -> str:
    """A digest of the code family `name` depends on: every Python file, by path and
    content, in a stable order."""
    sha = hashlib.sha256()
    for entry in _DEPENDS[name]:
        path = root / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            sha.update(str(file.relative_to(root)).encode())
            sha.update(file.read_bytes())
    return sha.hexdigest()[:16]


def data_digest(trace_dir: Path, trace: str) -> str:
    """A digest of what a run reads besides code: the cluster, the trace's pod list, and
    the numpy that computes on them."""
    import numpy

    sha = hashlib.sha256(numpy.__version__.encode())
    for name in ("openb_node_list_gpu_node.csv", f"openb_pod_list_{trace}.csv"):
        path = trace_dir / name
        sha.update(name.encode())
        sha.update(path.read_bytes() if path.exists() else b"")
    return sha.hexdigest()[:16]


def job_key(job: Job, digests: dict[str, str]) -> str:
    """A job's key in the store: what it ran and the digests of the code and the data it
    ran on (`digests[trace]` the data's)."""
    kind, trace, mode, policy, seed, _ = job
    code = digests[family(kind, policy)]
    return f"{code}|{digests[trace]}|{kind}|{trace}|{mode}|{policy}|{seed}"


class Store:
    """The kept runs (`STORE`): read once, written whole (atomically) after each result."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        fresh: bool = False,
        trace_dir: Path | None = None,
        traces: tuple[str, ...] = (),
    ):
        self.path = path or STORE
        self.entries: dict[str, dict[str, Any]] = {}
        if fresh:
            with self._locked():
                self._write({})
        else:
            self.entries = self._read()
        self.digests = {name: digest(name) for name in _DEPENDS}
        for trace in traces:
            self.digests[trace] = data_digest(trace_dir or Path("."), trace)

    def _read(self) -> dict[str, dict[str, Any]]:
        """The kept runs on disk; none when there is no file or it cannot be read (a run is
        only ever lost by running it again)."""
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Held while the file is read and rewritten: two invocations at once each add
        their runs, and neither writes over the other's."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        handle, name = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            json.dump(entries, out, indent=0, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(name, self.path)

    def get(self, job: Job) -> Run | float | None:
        """The kept result of `job` by the current code: a Run, a ceiling, or None."""
        entry: dict[str, Any] | None = self.entries.get(job_key(job, self.digests))
        if entry is None:
            return None
        if job[0] == "bound":
            return float(entry["ceiling"])
        return Run(
            samples={int(k): float(v) for k, v in entry["samples"].items()},
            dropped=int(entry["dropped"]),
            seconds=float(entry["seconds"]),
            skipped=int(entry["skipped"]),
        )

    def put(self, job: Job, result: Run | float, measured: str) -> None:
        """Keep `job`'s result (with when and where it was measured) and write the store."""
        if isinstance(result, Run):
            entry: dict[str, Any] = {**asdict(result), "measured": measured}
        else:
            entry = {"ceiling": result, "measured": measured}
        with self._locked():
            self.entries = {**self._read(), job_key(job, self.digests): entry}
            self._write(self.entries)

    def prune(self, trace_dir: Path) -> int:
        """Forget the kept runs of code or data other than the current (a changed engine
        leaves every earlier product run behind, and the committed file would keep them
        all); how many were forgotten. A run of a pod list not in `trace_dir` is kept: what
        it read cannot be checked here."""
        with self._locked():
            entries = self._read()
            if not entries and self.path.exists() and self.path.stat().st_size:
                # Unreadable (a merge left conflict markers, say): writing would lose it all.
                raise ValueError(f"{self.path} cannot be read; nothing pruned.")
            data: dict[str, str | None] = {}
            kept = {}
            for key, entry in entries.items():
                parts = key.split("|")
                if len(parts) != 7:
                    continue  # not a key this code writes or reads: forgotten
                code, read, kind, trace, _, policy, _ = parts
                if trace not in data:
                    present = (trace_dir / f"openb_pod_list_{trace}.csv").exists()
                    data[trace] = data_digest(trace_dir, trace) if present else None
                current = self.digests[family(kind, policy)] == code
                if current and data[trace] in (None, read):
                    kept[key] = entry
            self._write(kept)
            self.entries = kept
        return len(entries) - len(kept)

    def measured(self, jobs: list[Job]) -> list[str]:
        """When and where the kept results of `jobs` were measured, each once."""
        seen = {
            str(self.entries[k]["measured"])
            for k in (job_key(j, self.digests) for j in jobs)
            if k in self.entries
        }
        return sorted(seen)


def trace_missing(trace_dir: Path) -> bool:
    """Whether the trace is absent from `trace_dir`; if so, says on stderr where it goes."""
    if trace_dir.is_dir():
        return False
    print(
        f"No trace in {trace_dir}: put Alibaba's cluster-trace-gpu-v2023 there, or point "
        "COMPOSER_BENCH_DATA at the folder that holds alibaba-gpu-v2023/.",
        file=sys.stderr,
    )
    return True


def stamp() -> str:
    """When and where a run is measured: the day, the processor and its cores."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{datetime.now(UTC):%Y-%m-%d} on {cpu}, {os.cpu_count()} cores"
