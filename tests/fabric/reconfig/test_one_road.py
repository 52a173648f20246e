"""Only the reconfiguration workflow asks a driver to bind or unbind: compose, decompose,
heal and the reconciler go through `fabric.reconfig`, so a timeout is reconciled, an unbind
retried and a failure told the same way whoever meets it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# The drivers answer the calls, the workflow makes them; the simulated manager answers them
# too (its driver, and its Redfish face, which serves a Redfish client's binds with it).
ALLOWED = (
    ROOT / "fabric" / "drivers",
    ROOT / "fabric" / "reconfig",
    ROOT / "fabric" / "simulator" / "driver.py",
    ROOT / "fabric" / "simulator" / "redfish",
)
KEYWORDS = {"bind": "device_id", "unbind": "binding_id"}


def driver_changes(source: str) -> list[str]:
    """Each call of `<something>.bind(device_id=...)` or `<something>.unbind(binding_id=...)`
    in `source`, one a line (a socket's `bind(address)` is not a driver's)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in KEYWORDS
            and any(k.arg == KEYWORDS[node.func.attr] for k in node.keywords)
        ):
            found.append(f"line {node.lineno}: .{node.func.attr}()")
    return found


def test_only_the_workflow_binds_and_unbinds() -> None:
    offenders = {
        str(path.relative_to(ROOT)): calls
        for package in (ROOT / "composer", ROOT / "fabric")
        for path in sorted(package.rglob("*.py"))
        if not any(path.is_relative_to(home) for home in ALLOWED)
        and (calls := driver_changes(path.read_text()))
    }
    assert offenders == {}, f"bind and unbind through fabric.reconfig: {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "driver.bind(device_id=d, host_id=h, size_gib=None)",
        "get_driver(m).unbind(binding_id=b)",
    ],
)
def test_the_check_catches_a_driver_call(source: str) -> None:
    assert driver_changes(source)


@pytest.mark.parametrize(
    "source",
    ["sock.bind(('127.0.0.1', 0))", "reconfig.bind(driver, target, narrator=n)", "x.bindings()"],
)
def test_the_check_lets_the_rest_be(source: str) -> None:
    assert driver_changes(source) == []
