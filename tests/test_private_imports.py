"""A module's underscore helpers are its own: no other module imports them. What two modules
share is public (named, documented, in `__all__`), so it can be found, and changed with
its callers in view; heal once borrowed compose's private helpers, and their callers could
not be seen from the module that defined them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The composer, and the fabric's reconfiguration workflow that compose and heal share.
CHECKED = (ROOT / "composer", ROOT / "fabric" / "reconfig")


def private_imports(source: str) -> list[str]:
    """Each `from <module> import _name` in `source` (also inside functions), one a line;
    dunder names (`__version__`) are not private."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    module = "." * node.level + (node.module or "")
                    found.append(f"line {node.lineno}: {module} import {alias.name}")
    return found


def test_no_module_imports_another_modules_private_helpers() -> None:
    offenders = {
        str(path.relative_to(ROOT)): uses
        for package in CHECKED
        for path in sorted(package.rglob("*.py"))
        if (uses := private_imports(path.read_text()))
    }
    assert offenders == {}, f"make these public, or keep them in their module: {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "from composer.services.heal.undo import _rollback",
        "def f():\n    from composer.services.heal.undo import _rollback",
        "from composer.services.placement import (\n    PLACEMENT_LOCK_KEY,\n    _snapshot,\n)",
        "from .claims import _source",
    ],
)
def test_the_check_catches_a_private_import(source: str) -> None:
    assert private_imports(source)


@pytest.mark.parametrize(
    "source",
    [
        "from composer.services.heal.undo import heal_rollback",
        "from composer import __version__",
        "import composer.services._internal",  # a whole module, named as such
    ],
)
def test_the_check_lets_public_names_be(source: str) -> None:
    assert private_imports(source) == []
