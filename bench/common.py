"""What every benchmark shares: the machine it ran on, percentiles, and what it writes.

A benchmark writes its own section of docs/benchmarks.md (between
`<!-- bench:<name>:start -->` and `<!-- bench:<name>:end -->`) and, where another document
quotes its figures, the excerpt it makes for that document (between
`<!-- bench:<name>.<key>:start -->` and `<!-- bench:<name>.<key>:end -->`): no figure in the
docs is copied by hand (tests/test_docs.py checks that none sits outside such a section).

Import it after `django.setup()`: `machine()` reads the database connection's vendor.
"""

from __future__ import annotations

import math
import os
import platform
import re
import textwrap
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import django
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "benchmarks.md"
LINK = "{benchmarks}"  # in an excerpt: the quoting document's link to the full section
WIDTH = 92  # an excerpt is wrapped like the prose around it


def documents() -> list[Path]:
    """The documents that may quote benchmark figures, each only in a generated excerpt."""
    return [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted(DOCS.parent.glob("*.md"))]


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
        major, rest = divmod(cast(Any, connection).pg_version, 10000)
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
        # What else kept the cores busy: timings on a loaded machine are slower.
        "load": f"{os.getloadavg()[1]:.1f}",
    }


def busy_note(info: Mapping[str, str]) -> str:
    """A sentence for a section measured while other work kept the machine busy (a 5-minute
    load average above its cores), else nothing: its timings are slower than the code's."""
    if float(info["load"]) <= int(info["cores"]):
        return ""
    return (
        f"Other work kept the machine busy while this ran (5-minute load average "
        f"{info['load']} on {info['cores']} cores): a call that waits for a core is slower by "
        "that wait, which the tail (p95, p99, max) shows first; the counts are unaffected. "
    )


def anchor(section: str) -> str:
    """The link anchor of a section's `## ` heading, as GitHub makes it."""
    heading = next(line for line in section.splitlines() if line.startswith("## "))
    slug = re.sub(r"[^\w\- ]", "", heading[3:].strip().lower())
    return slug.replace(" ", "-")


def _replace(text: str, name: str, body: str) -> str | None:
    """`text` with `name`'s markers and what lies between them replaced by `body` (which
    carries the markers again); None when `text` has none."""
    start, end = markers(name)
    if start not in text or end not in text:
        return None
    before, rest = text.split(start, 1)
    return before + body + rest.split(end, 1)[1]


def _wrap(text: str) -> str:
    """`text` wrapped like the prose around it, never inside a link's text."""
    glued = re.sub(r"\[[^\]]*\]", lambda m: m.group(0).replace(" ", "\0"), text)
    lines = textwrap.fill(glued, width=WIDTH, break_long_words=False, break_on_hyphens=False)
    return lines.replace("\0", " ")


def write_section(
    name: str,
    section: str,
    *,
    excerpts: Mapping[str, str] | None = None,
    document: Path | None = None,
) -> list[Path]:
    """Replace benchmark `name`'s section of docs/benchmarks.md, leaving the rest alone, and
    its excerpts wherever a document quotes them; return the files written.

    `section` must start and end with the benchmark's markers. `excerpts` maps a key to the
    text that goes between the `<name>.<key>` markers of every document that holds them
    (see `documents()`); `{benchmarks}` in it becomes that document's link to the section.
    `document` names another file of docs/ that holds the section instead (a report of its
    own, as docs/reliability.md); it takes no excerpts.
    """
    if document is not None:
        original = document.read_text()
        replaced = _replace(original, name, section)
        text = replaced if replaced is not None else original.rstrip("\n") + "\n\n" + section
        document.write_text(text.rstrip("\n") + "\n")
        return [document]
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    replaced = _replace(text, name, section)
    text = replaced if replaced is not None else text.rstrip("\n") + "\n\n" + section + "\n"
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(text)
    written = [DOCS]
    for path in documents():
        original = quoting = path.read_text()
        link = f"{os.path.relpath(DOCS, path.parent)}#{anchor(section)}"
        for key, excerpt in (excerpts or {}).items():
            start, end = markers(f"{name}.{key}")
            body = f"{start}\n{_wrap(excerpt.replace(LINK, link))}\n{end}"
            quoting = _replace(quoting, f"{name}.{key}", body) or quoting
        if quoting != original:
            path.write_text(quoting)
            written.append(path)
    return written
