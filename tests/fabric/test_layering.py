"""Imports point one way: composer may import fabric, never the reverse. And the simulator
stays optional: no product module reaches for it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FABRIC = ROOT / "fabric"
COMPOSER = ROOT / "composer"
# Where the simulator lives: the simulated driver, its Redfish service and the console's
# optional app.
SIMULATOR_HOMES = (FABRIC / "drivers" / "simulated", FABRIC / "simulator", COMPOSER / "simulator")
# Finds every driver by its dotted path, the simulated one too.
REGISTRY = FABRIC / "drivers" / "registry.py"
# Installs the simulator's apps by their dotted paths when COMPOSER_SIMULATOR is on, as a
# deployment switches on any optional app; nothing there imports them.
SETTINGS = COMPOSER / "settings" / "base.py"
SIMULATED_DRIVER = "fabric.drivers.simulated"
SIMULATOR_APP = "composer.simulator"


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
    """What in `source` reaches for the simulator, one line each: an import of the simulated
    driver or of the simulator's app; a dotted path to the simulated driver in a string (to
    import at run time), unless `dotted_paths` is false (the registry); a driver compared
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
                if _within(name, SIMULATED_DRIVER) or _within(name, SIMULATOR_APP):
                    found.append(f"line {line}: imports {name}")
                    break
        elif (
            dotted_paths
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _within(node.value.strip(), SIMULATED_DRIVER)
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
    """Every module of the product outside the simulator's homes."""
    return [
        path
        for package in (COMPOSER, FABRIC)
        for path in sorted(package.rglob("*.py"))
        if not any(path.is_relative_to(home) for home in SIMULATOR_HOMES)
    ]


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


def test_no_product_module_reaches_for_the_simulator() -> None:
    """The simulator is optional: outside `fabric/drivers/simulated/`, `fabric/simulator/`
    and `composer/simulator/` nothing imports it or asks whether a manager is simulated; the
    registry finds the simulated driver by its dotted path, as it finds every driver."""
    offenders = {
        str(path.relative_to(ROOT)): uses
        for path in product_modules()
        if (uses := simulator_uses(path.read_text(), dotted_paths=path not in (REGISTRY, SETTINGS)))
    }
    assert offenders == {}, (
        f"Only fabric/drivers/simulated/, fabric/simulator/ and composer/simulator/ may use the "
        f"simulator: {offenders}"
    )


def test_the_simulator_check_sees_the_product_and_skips_the_simulator() -> None:
    modules = product_modules()
    assert REGISTRY in modules and COMPOSER / "views" / "urls.py" in modules
    assert not [m for m in modules if "simulator" in m.relative_to(ROOT).parts]
    assert not [m for m in modules if m.is_relative_to(SIMULATOR_HOMES[0])]


@pytest.mark.parametrize(
    "source",
    [
        "from fabric.drivers.simulated import store",
        "from fabric.drivers.simulated.faults import fault_inject",
        "from fabric.drivers import simulated",
        "import fabric.drivers.simulated.builder",
        "from composer.simulator.demo import demo_seed",
        "from composer import simulator",
        "import_module('fabric.drivers.simulated.store')",
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
        '"""Faults go through `fabric.drivers.simulated.faults` (a docstring)."""',
        "path('', include('composer.simulator.urls'))",
        "apps.is_installed('composer.simulator')",
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
