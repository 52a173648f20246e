"""The packing runs kept between invocations of bench/bench_packing.py, by code version.

A run of the product's engine over the trace takes minutes and the whole table (every pod
list, mode and seed) hours on a small machine, longer than one sitting. A run's result is a
pure function of the trace, the seed and the code that decides, so each finished run is kept
in `var/bench/packing-runs.json` under a digest of that code, the moment it finishes: a run
cut short loses only the runs still under way, the next invocation does only what is
missing, and the section is written from every kept run of the current code. A change to
the code a run depends on changes the digest, so results of older code are never mixed in
(they stay in the file until `--fresh` or the file is removed). Times (s/run) are kept with
the run too, with the date and machine they were measured on.

What a run depends on:

* every run and ceiling: the trace replay, sampling and workload (bench/bench_packing.py,
  bench/packing_data.py);
* the re-implemented policies: bench/packing_fixed.py, bench/packing_pool.py;
* the ceilings: bench/packing_bound.py;
* the product's engine (`composer*` policies): bench/packing_product.py and the engine
  itself (composer/placement/, fabric/kinds.py, fabric/latency.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.packing_data import Run

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "var" / "bench" / "packing-runs.json"

_COMMON = ("bench/bench_packing.py", "bench/packing_data.py")
_DEPENDS = {
    "bound": (*_COMMON, "bench/packing_bound.py"),
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


def job_key(job: Job, digests: dict[str, str]) -> str:
    """A job's key in the store: what it ran and the digest of the code it ran."""
    kind, trace, mode, policy, seed, _ = job
    return f"{digests[family(kind, policy)]}|{kind}|{trace}|{mode}|{policy}|{seed}"


class Store:
    """The kept runs (`STORE`): read once, written whole (atomically) after each result."""

    def __init__(self, path: Path | None = None, *, fresh: bool = False):
        self.path = path or STORE
        path = self.path
        self.entries: dict[str, dict[str, Any]] = {}
        if path.exists() and not fresh:
            self.entries = json.loads(path.read_text())
        self.digests = {name: digest(name) for name in _DEPENDS}

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
        self.entries[job_key(job, self.digests)] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(self.entries, indent=0, sort_keys=True))
        os.replace(partial, self.path)

    def measured(self, jobs: list[Job]) -> list[str]:
        """When and where the kept results of `jobs` were measured, each once."""
        seen = {
            str(self.entries[k]["measured"])
            for k in (job_key(j, self.digests) for j in jobs)
            if k in self.entries
        }
        return sorted(seen)


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
