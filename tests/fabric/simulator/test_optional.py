"""The simulator (`fabric.simulator`) is optional: without it the product runs.

Production settings leave it out unless COMPOSER_SIMULATOR=1; elsewhere
COMPOSER_SIMULATOR=0 does. Then `manage.py check` passes, the URL maps load without its
routes, the navbar has no *Fault injection*, its page answers 404 and its API route the
API's JSON 404, its commands are gone and the admin offers no fault actions. Checked
twice: in a process started that way (settings, URL maps and admin as production builds
them), and in this one with the app taken out of INSTALLED_APPS and the URL maps loaded
afresh (pages rendered against the test database).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.urls import clear_url_caches, reverse

from fabric.models import FabricManager
from tests.support.api import assert_error

ROOT = Path(__file__).resolve().parents[3]
APP = "fabric.simulator"
# The URL maps that include the simulator's routes when it is installed.
URL_MODULES = ("composer.urls", "composer.views.urls", "composer.api.urls")
FAULT_PAGE = "/simulator/faults/"
FAULT_API = "/api/v1/simulator/faults/"

PROBE = """
import json
import django
django.setup()
from django.apps import apps
from django.contrib import admin
from django.core.management import get_commands
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from fabric.models import Device

def reverses(name):
    try:
        reverse(name)
    except NoReverseMatch:
        return False
    return True

def resolves(path):
    try:
        view = resolve(path).func
        return getattr(view, "cls", view).__name__
    except Resolver404:
        return None

actions = admin.site.get_model_admin(Device).actions or ()
from fabric.drivers.base import DriverError
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager
try:
    get_driver(FabricManager(name="sim", driver="simulated", settings={"fabric": "sim"}))
    driver = "built"
except DriverError as exc:
    driver = ("permanent " if exc.permanent else "") + exc.message.split(":")[0]
print(json.dumps({
    "installed": apps.is_installed("fabric.simulator"),
    "simulated_driver": driver,
    "dashboard": reverses("composer:dashboard"),
    "fault_page": reverses("composer:fault_injection"),
    "fault_api": reverses("api:simulator_faults"),
    "page_view": resolves("/simulator/faults/"),
    "api_view": resolves("/api/v1/simulator/faults/"),
    "commands": sorted({"seed_demo", "sim_fault", "sim_operation_fault"} & set(get_commands())),
    "device_actions": [getattr(a, "__name__", a) for a in actions],
}))
"""


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "COMPOSER_SIMULATOR": "0",
        **env,
    }
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )


def test_manage_py_check_passes_without_the_simulator() -> None:
    done = _run(["manage.py", "check"])
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def _probe(**env: str) -> dict[str, Any]:
    done = _run(["-c", PROBE], **env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_console_started_without_the_simulator_has_none_of_it() -> None:
    seen = _probe()
    assert seen == {
        "installed": False,
        # The simulated manager's own tables go with it; a manager naming its driver is
        # told so, permanently, never a crash.
        "simulated_driver": "permanent Driver 'simulated' is not installed here",
        "dashboard": True,
        "fault_page": False,
        "fault_api": False,
        "page_view": None,
        "api_view": "NotFoundView",  # the API's JSON 404 for unknown paths
        "commands": [],
        "device_actions": [],
    }


def test_a_console_started_as_by_default_has_the_simulator() -> None:
    """The probe's control: the same process with COMPOSER_SIMULATOR on (the default)."""
    seen = _probe(COMPOSER_SIMULATOR="1")
    assert seen["installed"] and seen["fault_page"] and seen["fault_api"]
    assert seen["simulated_driver"] == "built"
    assert (seen["page_view"], seen["api_view"]) == ("fault_injection", "SimulatorFaultView")
    assert seen["commands"] == ["seed_demo", "sim_fault", "sim_operation_fault"]
    assert seen["device_actions"] == ["inject_fail", "inject_degrade", "inject_recover"]


PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "composer.settings.prod",
    "SECRET_KEY": "a-production-key-for-this-test-only",
}


def test_production_settings_leave_the_simulator_out_unless_asked() -> None:
    environ = {k: v for k, v in os.environ.items() if k != "COMPOSER_SIMULATOR"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**environ, **PRODUCTION},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert (seen["installed"], seen["fault_api"], seen["commands"]) == (False, False, [])
    asked = _probe(COMPOSER_SIMULATOR="1", **PRODUCTION)
    assert asked["installed"] and asked["fault_api"] and asked["simulated_driver"] == "built"


def _unload_url_modules() -> dict[str, Any]:
    return {name: sys.modules.pop(name) for name in URL_MODULES if name in sys.modules}


def _restore_url_modules(saved: dict[str, Any]) -> None:
    for name in URL_MODULES:
        sys.modules.pop(name, None)
    for name, module in saved.items():
        sys.modules[name] = module
        package, _, attribute = name.rpartition(".")
        setattr(sys.modules[package], attribute, module)
    clear_url_caches()


@pytest.fixture
def without_simulator(settings: Any) -> Iterator[None]:
    """This process as COMPOSER_SIMULATOR=0 builds it: the app out of INSTALLED_APPS and
    the URL maps imported again (they look at the installed apps when they load)."""
    assert APP in {name.rsplit(".apps.", 1)[0] for name in django_settings.INSTALLED_APPS}
    saved = _unload_url_modules()
    settings.INSTALLED_APPS = [
        name for name in settings.INSTALLED_APPS if not name.startswith(f"{APP}.")
    ]
    clear_url_caches()
    try:
        yield
    finally:
        _restore_url_modules(saved)


@pytest.mark.django_db
def test_the_dashboard_renders_without_the_fault_injection_link(
    without_simulator: None, client_as: Any, admin_user: Any
) -> None:
    page = client_as(admin_user).get(reverse("composer:dashboard"))
    assert page.status_code == 200
    assert b"Fault injection" not in page.content
    assert FAULT_PAGE.encode() not in page.content
    assert b"Topology" in page.content  # the operator's navbar is there


@pytest.mark.django_db
def test_the_fault_page_and_its_api_route_answer_404(
    without_simulator: None,
    client_as: Any,
    api_as: Any,
    admin_user: Any,
    sim_manager: FabricManager,
) -> None:
    assert client_as(admin_user).get(FAULT_PAGE).status_code == 404
    response = api_as(admin_user).post(
        FAULT_API,
        {"target_type": "switch", "target_id": "cxl-spine-1", "action": "fail"},
        format="json",
    )
    assert_error(response, 404, "not_found")


@pytest.mark.django_db
def test_with_the_simulator_the_navbar_links_its_page(client_as: Any, admin_user: Any) -> None:
    """The control of the two above: installed (the default), the link and routes are
    there."""
    page = client_as(admin_user).get(reverse("composer:dashboard"))
    assert b"Fault injection" in page.content
    assert reverse("composer:fault_injection").encode() in page.content
    assert reverse("api:simulator_faults") == FAULT_API
