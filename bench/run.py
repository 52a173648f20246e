"""`make bench`: run every benchmark in bench/ (bench_*.py), one after the other.

Each benchmark writes its own section of docs/benchmarks.md with the machine and the date.
Pass names to run only some: `python bench/run.py inventory`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    wanted = set(argv)
    scripts = sorted(HERE.glob("bench_*.py"))
    failed = 0
    for script in scripts:
        name = script.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        sys.stderr.write(f"== {name}\n")
        failed += subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
