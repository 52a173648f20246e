"""bench/bench_redfish.py runs, small (`--smoke`): a world of a hundred-odd devices synced
through the Redfish driver with and without `$expand`, and a few composes through each
driver with real workers. The figures are the benchmark's; this proves that it runs and
that both syncs find the same inventory, so that `make bench` does not fail at 10,000."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import urlsplit, urlunsplit

import pytest

from bench.common import ROOT, markers

pytestmark = pytest.mark.worker


def _database_of_its_own(url: str) -> str:
    """The benchmark's throwaway database is its DATABASE_URL's `test_` twin: that of this
    test run's own would be dropped under it. Another name, on the same server."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}_bench_smoke"))


def test_the_redfish_benchmark_runs_small() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "PYTHONUNBUFFERED": "1"}
    if env.get("DATABASE_URL", "").startswith("postgres"):
        env["DATABASE_URL"] = _database_of_its_own(env["DATABASE_URL"])
    else:
        env.pop("DATABASE_URL", None)  # the benchmark's own SQLite file under var/bench/
    run = subprocess.run(
        [sys.executable, "bench/bench_redfish.py", "--smoke", "--no-write"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("redfish-sync", "redfish-e2e"):
        start, end = markers(name)
        assert start in run.stdout and end in run.stdout, name
    assert "Both syncs found the same inventory." in run.stdout
    assert "| redfish |" in run.stdout and "| simulated |" in run.stdout
