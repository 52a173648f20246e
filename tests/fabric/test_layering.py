"""Imports point one way: composer may import fabric, never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

FABRIC = Path(__file__).resolve().parents[2] / "fabric"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_fabric_never_imports_composer() -> None:
    offenders = {
        str(path.relative_to(FABRIC.parent)): sorted(
            name for name in imported_modules(path) if name.split(".")[0] == "composer"
        )
        for path in FABRIC.rglob("*.py")
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert offenders == {}, f"fabric must not import composer: {offenders}"


def test_the_layering_check_sees_fabric_modules() -> None:
    assert len(list(FABRIC.rglob("*.py"))) > 10
