"""What every benchmark shares: the machine it ran on, percentiles, and its own section of
docs/benchmarks.md (between `<!-- bench:<name>:start -->` and `<!-- bench:<name>:end -->`).

Import it after `django.setup()`: `machine()` reads the database connection's vendor.
"""

from __future__ import annotations

import math
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

import django
from django.db import connection

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def markers(name: str) -> tuple[str, str]:
    """The start and end comments that delimit benchmark `name`'s section."""
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    vendor = connection.vendor
    if vendor == "sqlite":
        import sqlite3

        database = f"SQLite {sqlite3.sqlite_version}"
    elif vendor == "postgresql":
        major, rest = divmod(connection.pg_version, 10000)
        database = f"PostgreSQL {major}.{rest % 100}"
    else:
        database = vendor
    return {
        "arch": platform.machine(),
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "django": django.get_version(),
        "database": database,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def write_section(name: str, section: str) -> None:
    """Replace benchmark `name`'s section of docs/benchmarks.md, leaving the rest alone.

    `section` must start and end with the benchmark's markers.
    """
    start, end = markers(name)
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(text)
