"""Third-party conformance data read in place: DMTF's Redfish mockups and CSDL live in
`shared/data/` beside the repository (or beside a folder above it, as a worktree's is),
never copied into it. Tests that need a folder skip, naming it, where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def shared_data(name: str, *, env: str = "") -> Path | None:
    """`shared/data/<name>`: from the environment variable `env` when set, else the first
    found in the repository or beside it or a folder above it; None when nowhere."""
    if env and os.environ.get(env):
        return Path(os.environ[env])
    for parent in (REPO, *REPO.parents):
        candidate = parent / "shared" / "data" / name
        if candidate.is_dir():
            return candidate
    return None
