"""Benchmark: the utilisation history's reads over a year of samples of 50 pools.

Run from the repository root with the project's virtual environment:

    .venv/bin/python bench/bench_utilisation.py            # SQLite file under var/bench/
    DATABASE_URL=postgres://... .venv/bin/python bench/bench_utilisation.py

It creates a throwaway database (the test runner's machinery: created, migrated, dropped),
writes a year of history as the product keeps it (minute samples for the last
COMPOSER_UTILISATION_MINUTES_DAYS, hourly and daily rollups for the year, for every pool and
tenant) straight into the tables with bulk_create (the point is the read path, not the
sampling), vacuums and analyses them as autovacuum would have by the time anyone reads
them, and measures, as an operator through Django's test client (the whole middleware,
URL, view and template stack, no network), `GET /api/v1/utilisation/` for each period, for
one pool and for the data centre, and the page for the data centre's last day:

- server time per request over many iterations: p50, p95, max;
- SQL queries per request, and the response size.

The figures replace this benchmark's own section of docs/benchmarks.md (between its HTML
comment markers). Target: p95 at most 200 ms per request.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
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
from django.utils import timezone  # noqa: E402

from bench.common import (  # noqa: E402
    DOCS,
    busy_note,
    machine,
    markers,
    percentile,
    write_section,
)
from composer.models import KindSample, PoolSample, Resolution, Tenant, TenantSample  # noqa: E402
from fabric.choices import DeviceKind  # noqa: E402
from fabric.models import Pool  # noqa: E402

START, END = markers("utilisation")
TARGET_MS = 200.0
BATCH = 5_000
# (kind, how many of the pools, capacity of one, unit)
POOL_MIX = [
    (DeviceKind.GPU, 0.6, 64, "devices"),
    (DeviceKind.CXL_MEMORY, 0.1, 8192, "GiB"),
    (DeviceKind.NVME, 0.2, 96, "devices"),
    (DeviceKind.NIC, 0.1, 64, "devices"),
]


@dataclass(frozen=True)
class Result:
    label: str
    path: str
    p50_ms: float
    p95_ms: float
    max_ms: float
    queries: int
    size_bytes: int

    @property
    def passes(self) -> bool:
        return self.p95_ms <= TARGET_MS


class History:
    """A deterministic year of history for `pools` pools and `tenants` tenants, written with
    bulk_create in batches."""

    def __init__(self, pools: int, tenants: int, now: datetime, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.now = now.replace(second=0, microsecond=0)
        self.pools = self._pools(pools)
        self.tenants = Tenant.objects.bulk_create(
            Tenant(name=f"Tenant {i:02d}", slug=f"tenant-{i:02d}") for i in range(tenants)
        )
        self.rows = 0

    def _pools(self, count: int) -> list[Pool]:
        made = []
        for i in range(count):
            kind, _, _, _ = self._mix(i, count)
            made.append(Pool(name=f"Pool {i:02d}", slug=f"pool-{i:02d}", kind=kind))
        return Pool.objects.bulk_create(made)

    @staticmethod
    def _mix(i: int, count: int) -> tuple[str, float, int, str]:
        edge = 0.0
        for entry in POOL_MIX:
            edge += entry[1]
            if i < round(edge * count):
                return entry
        return POOL_MIX[0]

    def write(self) -> None:
        minutes_back = settings.COMPOSER_UTILISATION_MINUTES_DAYS * 24 * 60
        year_hours = settings.COMPOSER_UTILISATION_ROLLUPS_DAYS * 24
        self._write(Resolution.MINUTE, timedelta(minutes=1), minutes_back, 1)
        self._write(Resolution.HOUR, timedelta(hours=1), year_hours, 60)
        self._write(Resolution.DAY, timedelta(days=1), year_hours // 24, 1440)
        self.settle()

    @staticmethod
    def settle() -> None:
        """The tables as a database that has held them a while has them: planner statistics
        and, on PostgreSQL, vacuumed (the visibility map set). Without it the reads are measured
        on guessed statistics while autovacuum works through the 1.3 million rows just written,
        competing with them for the cores; no reader meets either at steady state."""
        with connection.cursor() as cursor:
            if connection.vendor != "postgresql":
                cursor.execute("ANALYZE")
                return
            for model in (PoolSample, KindSample, TenantSample):
                cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(model._meta.db_table)}")

    def _write(self, resolution: str, step: timedelta, count: int, samples: int) -> None:
        start = self.now - step * count
        pool_rows: list[PoolSample] = []
        tenant_rows: list[TenantSample] = []
        totals: dict[tuple[str, str, int], KindSample] = {}
        for index, pool in enumerate(self.pools):
            _, _, capacity, unit = self._mix(index, len(self.pools))
            allocated = capacity * 0.5
            for n in range(count):
                allocated = min(capacity, max(0.0, allocated + self.rng.uniform(-2, 2)))
                row = PoolSample(
                    pool=pool,
                    resolution=resolution,
                    bucket_start=start + step * n,
                    kind=pool.kind,
                    unit=unit,
                    capacity=capacity,
                    allocated=allocated,
                    allocated_peak=allocated,
                    free=capacity - allocated - 1,
                    unavailable=1,
                    stranded=self.rng.choice((0.0, 0.0, 0.0, 1.0)),
                    samples=samples,
                )
                pool_rows.append(row)
                self._add(totals, row, n)
                if len(pool_rows) >= BATCH:
                    self._flush(pool_rows)
        for tenant in self.tenants:
            live = 5.0
            for n in range(count):
                live = max(0.0, live + self.rng.choice((-1, 0, 0, 1)))
                tenant_rows.append(
                    TenantSample(
                        tenant=tenant,
                        resolution=resolution,
                        bucket_start=start + step * n,
                        compositions=live,
                        samples=samples,
                    )
                )
                if len(tenant_rows) >= BATCH:
                    self._flush(tenant_rows)
        self._flush(pool_rows)
        self._flush(tenant_rows)
        self._flush(list(totals.values()))

    @staticmethod
    def _add(totals: dict[tuple[str, str, int], KindSample], row: PoolSample, n: int) -> None:
        """Add `row` to its kind's data-centre row of the same bucket (as the tick does)."""
        total = totals.get((row.kind, row.unit, n))
        if total is None:
            total = totals[(row.kind, row.unit, n)] = KindSample(
                resolution=row.resolution,
                bucket_start=row.bucket_start,
                kind=row.kind,
                unit=row.unit,
                capacity=0.0,
                allocated=0.0,
                allocated_peak=0.0,
                free=0.0,
                unavailable=0.0,
                stranded=0.0,
                samples=row.samples,
            )
        for name in ("capacity", "allocated", "allocated_peak", "free", "unavailable", "stranded"):
            setattr(total, name, getattr(total, name) + getattr(row, name))

    def _flush(self, rows: list[Any]) -> None:
        if rows:
            type(rows[0]).objects.bulk_create(rows, batch_size=BATCH)
            self.rows += len(rows)
            rows.clear()


def measure(client: Client, path: str, iterations: int) -> tuple[list[float], int, int]:
    """Server times in ms (after one warm-up), the query count and the response size."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    queries = len(captured)  # now: the next request's start resets the log
    timings = []
    for _ in range(iterations):
        began = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - began) * 1000)
    return timings, queries, len(response.content)


def cases(pool: str) -> list[tuple[str, str]]:
    found = []
    for period in ("day", "week", "month", "year"):
        found.append((f"API, data centre, {period}", f"/api/v1/utilisation/?period={period}"))
        found.append(
            (f"API, one pool, {period}", f"/api/v1/utilisation/?pool={pool}&period={period}")
        )
    found.append(("page, data centre, day", "/utilisation/?period=day"))
    found.append(("page, one pool, day", f"/utilisation/?pool={pool}&period=day"))
    return found


def render(results: list[Result], info: dict[str, str], history: History, iterations: int) -> str:
    pools, tenants = len(history.pools), len(history.tenants)
    lines = [
        START,
        f"## Utilisation history: a year of samples of {pools} pools",
        "",
        f"Measured {info['date']} on {info['arch']}, {info['cpu']}, {info['cores']} cores "
        f"(5-minute load average {info['load']}); Python {info['python']}, "
        f"Django {info['django']}, {info['database']}.",
        "",
        f"`python bench/bench_utilisation.py`: a year of history of {pools} pools (GPUs, CXL "
        f"memory, NVMe, NICs) and {tenants} tenants as Composer keeps it — minute samples for "
        f"the last {settings.COMPOSER_UTILISATION_MINUTES_DAYS} days, hourly and daily rollups "
        f"for {settings.COMPOSER_UTILISATION_ROLLUPS_DAYS} days, {history.rows:,} rows — "
        "written with bulk_create into a throwaway database, then vacuumed and analysed (as "
        "autovacuum would have them by the time anyone reads them); each request made as an "
        "operator through Django's test client (server time: middleware, view, serializer or "
        f"template; no network), {iterations} times after a warm-up. The data centre reads its "
        "own rows (one per kind and bucket, written beside the pools'); a day reads minutes, a "
        "week hours, a month or a year days.",
        "",
        "| request | p50 ms | p95 ms | max ms | queries | bytes | within target |",
        "|---|--:|--:|--:|--:|--:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.label} `{r.path}` | {r.p50_ms:.1f} | {r.p95_ms:.1f} | {r.max_ms:.1f} | "
            f"{r.queries} | {r.size_bytes:,} | {'yes' if r.passes else 'NO'} |"
        )
    missed = sum(not r.passes for r in results)
    verdict = f"MISSED by {missed} of {len(results)} requests" if missed else "met by every request"
    lines += [
        "",
        f"Target: p95 at most {TARGET_MS:.0f} ms per request — {verdict}. "
        f"{busy_note(info)}Timings vary with the machine and its load; the query counts do "
        "not (the API's include the session and user lookups of session authentication).",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--no-write", action="store_true", help="print, do not update the docs")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="No directory at")

    Path(settings.BENCH_DIR).mkdir(parents=True, exist_ok=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        admin = get_user_model().objects.create_superuser("bench-admin", "bench@example.com", "x")
        client = Client()
        client.force_login(admin)
        began = time.perf_counter()
        history = History(args.pools, args.tenants, timezone.now())
        history.write()
        sys.stderr.write(f"wrote {history.rows:,} rows in {time.perf_counter() - began:.0f} s\n")
        results = []
        for label, path in cases(history.pools[0].slug):
            timings, queries, size = measure(client, path, args.iterations)
            result = Result(
                label=label,
                path=path,
                p50_ms=statistics.median(timings),
                p95_ms=percentile(timings, 0.95),
                max_ms=max(timings),
                queries=queries,
                size_bytes=size,
            )
            results.append(result)
            sys.stderr.write(
                f"{label:28} p50 {result.p50_ms:7.1f} ms  p95 {result.p95_ms:7.1f}  "
                f"max {result.max_ms:7.1f}  queries {queries}  bytes {size:,}\n"
            )
        info = machine()
    finally:
        teardown_databases(old_config, verbosity=0)
    section = render(results, info, history, args.iterations)
    if args.no_write:
        sys.stdout.write(section + "\n")
    else:
        write_section("utilisation", section)
        sys.stderr.write(f"wrote {DOCS.relative_to(ROOT)}\n")
    return 0 if all(r.passes for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
