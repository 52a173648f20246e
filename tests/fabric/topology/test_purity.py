"""The topology package decides without I/O: only load.py may touch Django."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TOPOLOGY = Path(__file__).resolve().parents[3] / "fabric" / "topology"
PURE = [
    "elements.py",
    "graph.py",
    "domains.py",
    "reach.py",
    "impact.py",
    "render.py",
    "maintenance.py",
]


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_imports_nothing_from_django_or_the_models(module: str) -> None:
    found = imports(TOPOLOGY / module)
    assert not {n for n in found if n.split(".")[0] in ("django", "rest_framework", "composer")}
    # fabric.latency: plain values shared with placement (it imports nothing).
    fabric = {n for n in found if n.startswith("fabric.")} - {"fabric.latency"}
    assert all(n.startswith("fabric.topology.") and n != "fabric.topology.load" for n in fabric)
