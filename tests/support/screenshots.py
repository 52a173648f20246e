"""The README's screenshots: taken by the browser tests that show the pages they picture, and
copied to docs/img/ only when COMPOSER_SCREENSHOTS=1 (a run on purpose, never every run)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def publish_screenshot(taken: Path, name: str) -> None:
    """Copy `taken` to docs/img/`name` when this run is meant to refresh the README's images."""
    if os.environ.get("COMPOSER_SCREENSHOTS") != "1":
        return
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(taken, DOCS_IMG / name)
