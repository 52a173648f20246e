"""Imports point one way: composer may import fabric, never the reverse. And the simulator
stays optional: no product module reaches for it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FABRIC = ROOT / "fabric"
COMPOSER = ROOT / "composer"
# Where the simulator lives: one optional app, the simulated driver and its console.
SIMULATOR_HOME = FABRIC / "simulator"
# Finds every driver by its dotted path, the simulated one too.
REGISTRY = FABRIC / "drivers" / "registry.py"
# Installs the simulator's app by its dotted path when COMPOSER_SIMULATOR is on, as a
# deployment switches on any optional app; nothing there imports them.
SETTINGS = COMPOSER / "settings" / "base.py"
SIMULATOR = "fabric.simulator"
# Named in strings as any optional app is wired in: asked whether it is installed, its URL
# maps included by name. Naming anything else inside it is reaching for it.
SIMULATOR_WIRING = {SIMULATOR, f"{SIMULATOR}.console.urls", f"{SIMULATOR}.console.api_urls"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from fabric.drivers import simulated` names the package in the alias.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of `tree` (they may name the simulator)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _is_simulated(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == "simulated" for n in ast.walk(node))


def _is_driver(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "driver") or (
        isinstance(node, ast.Name) and node.id == "driver"
    )


def simulator_uses(source: str, *, dotted_paths: bool = True) -> list[str]:
    """What in `source` reaches for the simulator, one line each: an import of anything in
    the simulator's app; a dotted path into it in a string (to import at run time), unless
    `dotted_paths` is false (the registry, the settings) or it only wires the optional app
    in (`apps.is_installed`, its URL maps); a driver compared
    with "simulated" (`manager.driver == "simulated"`, `!=`, `in`) or asked for in a query
    (`filter(driver="simulated")`, `driver__in=[...]`)."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
                continue
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            )
            for name in names:
                if _within(name, SIMULATOR):
                    found.append(f"line {line}: imports {name}")
                    break
        elif (
            dotted_paths
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _within(node.value.strip(), SIMULATOR)
            and node.value.strip() not in SIMULATOR_WIRING
        ):
            found.append(f"line {line}: names {node.value.strip()!r}")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_driver(o) for o in operands) and any(
                isinstance(o, ast.Constant | ast.Tuple | ast.List | ast.Set) and _is_simulated(o)
                for o in operands
            ):
                found.append(f"line {line}: compares a driver with 'simulated'")
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                arg = keyword.arg or ""
                if "driver" in arg.split("__") and _is_simulated(keyword.value):
                    found.append(f"line {line}: asks for {arg}='simulated'")
    return found


def product_modules() -> list[Path]:
    """Every module of the product outside the simulator's own package."""
    return [
        path
        for package in (COMPOSER, FABRIC)
        for path in sorted(package.rglob("*.py"))
        if not path.is_relative_to(SIMULATOR_HOME)
    ]


# The simulator's console sits above both layers (its demo seeds tenants and templates, its
# API answers in the composer API's errors); the simulated manager itself (its tables,
# driver, Redfish face), which fabric's registry loads in every worker, is fabric like any
# driver and imports no composer.
SIMULATOR_CONSOLE = (SIMULATOR_HOME / "console", SIMULATOR_HOME / "management")


def test_fabric_never_imports_composer() -> None:
    offenders = {
        str(path.relative_to(FABRIC.parent)): sorted(
            name for name in imported_modules(path) if name.split(".")[0] == "composer"
        )
        for path in FABRIC.rglob("*.py")
        if not any(path.is_relative_to(console) for console in SIMULATOR_CONSOLE)
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert offenders == {}, f"fabric must not import composer: {offenders}"


def test_the_layering_check_sees_fabric_modules() -> None:
    assert len(list(FABRIC.rglob("*.py"))) > 10


def test_no_product_module_reaches_for_the_simulator() -> None:
    """The simulator is optional: outside `fabric/simulator/` nothing imports it or asks
    whether a manager is simulated; the registry finds the simulated driver by its dotted
    path, as it finds every driver."""
    offenders = {
        str(path.relative_to(ROOT)): uses
        for path in product_modules()
        if (uses := simulator_uses(path.read_text(), dotted_paths=path not in (REGISTRY, SETTINGS)))
    }
    assert offenders == {}, f"Only fabric/simulator/ may use the simulator: {offenders}"


def test_the_simulator_check_sees_the_product_and_skips_the_simulator() -> None:
    modules = product_modules()
    assert REGISTRY in modules and COMPOSER / "views" / "urls.py" in modules
    assert not [m for m in modules if "simulator" in m.relative_to(ROOT).parts]
    assert not [m for m in modules if m.is_relative_to(SIMULATOR_HOME)]
    assert SIMULATOR_HOME / "driver.py" not in modules


@pytest.mark.parametrize(
    "source",
    [
        "from fabric.simulator import store",
        "from fabric.simulator.faults import fault_inject",
        "from fabric import simulator",
        "import fabric.simulator.builder",
        "from fabric.simulator.console.demo import demo_seed",
        "import fabric.simulator",
        "get_driver_class('fabric.simulator.driver.SimulatedDriver')",
        "import_module('fabric.simulator.store')",
        "if manager.driver == 'simulated':\n    pass",
        "ok = 'simulated' != self.manager.driver",
        "ok = manager.driver in ('simulated', 'redfish')",
        "FabricManager.objects.filter(driver='simulated')",
        "FabricManager.objects.exclude(manager__driver__in=['simulated'])",
    ],
)
def test_the_simulator_check_catches_each_way_in(source: str) -> None:
    assert simulator_uses(source)


@pytest.mark.parametrize(
    "source",
    [
        '"""Faults go through `fabric.simulator.faults` (a docstring)."""',
        "path('', include('fabric.simulator.console.urls'))",
        "apps.is_installed('fabric.simulator')",
        "if manager.driver == wanted:\n    pass",
        "FabricManager.objects.filter(name='simulated')",
        "from fabric.drivers.registry import driver_for",
    ],
)
def test_the_simulator_check_lets_the_product_be(source: str) -> None:
    assert simulator_uses(source) == []


def test_the_registry_may_name_the_simulated_driver_by_its_path() -> None:
    source = REGISTRY.read_text()
    assert simulator_uses(source) and not simulator_uses(source, dotted_paths=False)
