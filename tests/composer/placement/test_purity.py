"""The engine decides without I/O: only load.py may touch Django."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLACEMENT = Path(__file__).resolve().parents[3] / "composer" / "placement"
PURE = [
    "__init__.py",
    "engine.py",
    "constraints.py",
    "scoring.py",
    "snapshot.py",
    "request.py",
    "nearest.py",
    "incremental.py",
    "fragmentation.py",
    "workload.py",
]


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


# Fabric's one declaration of the device kinds and of the latency estimated for a hop whose
# manager gives none: plain values, nothing imported beyond the standard library (below).
SHARED = {"fabric.kinds", "fabric.latency"}
STANDARD = {"__future__", "collections.abc", "dataclasses", "functools", "typing"}


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_imports_nothing_from_django_the_models_or_the_loader(module: str) -> None:
    found = imports(PLACEMENT / module) - SHARED
    assert not {n for n in found if n.split(".")[0] in ("django", "rest_framework", "fabric")}
    composer = {n for n in found if n.startswith("composer")}
    assert all(n.startswith("composer.placement.") for n in composer)
    assert "composer.placement.load" not in composer


def test_what_the_engine_shares_with_fabric_imports_nothing() -> None:
    fabric = Path(__file__).resolve().parents[3] / "fabric"
    for module in SHARED:
        assert imports(fabric / f"{module.removeprefix('fabric.')}.py") <= STANDARD
