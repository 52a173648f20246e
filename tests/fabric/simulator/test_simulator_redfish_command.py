"""`manage.py simulator_redfish` serves a simulated fabric as Redfish until stopped, with
the account it is given, and never prints the password."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.core.management import CommandError, call_command
from django.db import connection

from fabric.drivers.redfish.driver import RedfishDriver
from fabric.simulator.models import SimulatedElement, SimulatedFabric
from tests.fabric.simulated_world import simulated_manager
from tests.support.worker import database_url

ROOT = Path(__file__).resolve().parents[3]
PASSWORD = "not-the-default-0xc0ffee"
EXPOSED = ("--fabric", "exposed-cmd", "--bind", "0.0.0.0", "--port", "0")


def _serve(
    *args: str, env: dict[str, str] | None = None, sigint_ignored: bool = False
) -> subprocess.Popen[str]:
    """`manage.py simulator_redfish ARGS --port 0` on the test database, its output piped;
    with `sigint_ignored`, started as a shell's background job is (SIGINT ignored)."""
    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("sqlite3") and "memory" in str(settings_dict["NAME"]):
        pytest.skip("an in-memory SQLite test database cannot be shared with another process")
    return subprocess.Popen(
        [sys.executable, "manage.py", "simulator_redfish", *args, "--port", "0"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "composer.settings.test",
            "DATABASE_URL": database_url(settings_dict),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        if sigint_ignored
        else None,
    )


def _served_at(server: subprocess.Popen[str]) -> tuple[str, str]:
    """The base URL the command prints, and every line it printed up to it."""
    assert server.stdout is not None
    printed = ""
    while "served as Redfish at http://" not in printed:
        line = server.stdout.readline()
        assert line, printed
        printed += line
    return printed.split(" at ", 1)[1].split("/redfish/v1/", 1)[0], printed


def _stop(server: subprocess.Popen[str]) -> str:
    server.send_signal(signal.SIGINT)
    output, _ = server.communicate(timeout=30)
    assert server.returncode == 0, output
    return output


@pytest.mark.django_db(transaction=True)
def test_the_command_serves_the_world_with_its_account_until_interrupted() -> None:
    simulated_manager(name="served-cmd", fabric="served-cmd")
    server = _serve(
        "--fabric",
        "served-cmd",
        "--username",
        "ops",
        env={"COMPOSER_SIMULATOR_REDFISH_PASSWORD": PASSWORD},
        sigint_ignored=True,  # Ctrl-C stops it all the same
    )
    try:
        url, first = _served_at(server)
        hosts = requests.get(f"{url}/redfish/v1/Systems", auth=("ops", PASSWORD), timeout=10)
        assert hosts.status_code == 200 and hosts.json()["Members@odata.count"] == 3
        assert requests.get(f"{url}/redfish/v1/Systems", timeout=10).status_code == 401
    finally:
        output = _stop(server)
    assert PASSWORD not in first + output
    assert "Stopped." in output


@pytest.mark.django_db(transaction=True)
def test_create_writes_the_lab_world_once_and_serves_it_with_the_settings_account() -> None:
    """`make run`'s Redfish lab: the world written on the first start only (a second start
    serves what the first left, bindings and faults included), the account from the
    settings' environment variables, as the launcher passes it."""
    account = {
        "COMPOSER_SIMULATOR_REDFISH_USERNAME": "lab-ops",
        "COMPOSER_SIMULATOR_REDFISH_PASSWORD": PASSWORD,
    }
    assert not SimulatedFabric.objects.filter(name="lab-cmd").exists()
    for start in ("first", "second"):
        server = _serve("--fabric", "lab-cmd", "--create", env=account)
        try:
            url, printed = _served_at(server)
            assert ("Wrote the lab world" in printed) == (start == "first"), printed
            hosts = requests.get(
                f"{url}/redfish/v1/Systems", auth=("lab-ops", PASSWORD), timeout=10
            )
            assert hosts.status_code == 200 and hosts.json()["Members@odata.count"] == 4
            # What an operator's Test connection of the lab reads.
            found = RedfishDriver(
                endpoint=url, settings={}, credentials={"username": "lab-ops", "password": PASSWORD}
            ).probe()
            assert (found.counts["hosts"], found.counts["devices"]) == (4, 16)
            assert found.composition_methods and found.service.startswith("Redfish 1.")
        finally:
            assert PASSWORD not in printed + _stop(server)
    assert SimulatedElement.objects.filter(fabric__name="lab-cmd", kind="device").count() == 16


@pytest.mark.django_db
def test_the_command_names_a_missing_fabric() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "simulator_redfish", "--fabric", "no-such-fabric"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "composer.settings.test",
            "DATABASE_URL": database_url(connection.settings_dict),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "No simulated fabric named 'no-such-fabric'" in done.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("password", ["", "simulator"])
def test_the_demo_password_is_refused_beyond_the_loopback(password: str) -> None:
    simulated_manager(name="exposed-cmd", fabric="exposed-cmd")
    done = subprocess.run(
        [sys.executable, "manage.py", "simulator_redfish", *EXPOSED],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "composer.settings.test",
            "DATABASE_URL": database_url(connection.settings_dict),
            "COMPOSER_SIMULATOR_REDFISH_PASSWORD": password,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "COMPOSER_SIMULATOR_REDFISH_PASSWORD" in done.stderr


def test_the_password_is_taken_from_the_environment_only() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "simulator_redfish", "--help"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "composer.settings.test"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--username" in done.stdout and "--password" not in done.stdout


def test_the_launchers_demo_account_is_the_simulators() -> None:
    """`make run` prints composer's copy and passes it on; the service falls back to its
    own: both must name one account."""
    from composer import demo_users
    from fabric.simulator.redfish import auth

    assert (demo_users.DEMO_REDFISH_USERNAME, demo_users.DEMO_REDFISH_PASSWORD) == (
        auth.DEFAULT_USERNAME,
        auth.DEFAULT_PASSWORD,
    )


@pytest.mark.django_db
def test_the_command_refuses_a_negative_task_threshold() -> None:
    simulated_manager(name="served-cmd", fabric="served-cmd")
    with pytest.raises(CommandError, match="--task-after must be 0 or more seconds"):
        call_command("simulator_redfish", "--fabric", "served-cmd", "--task-after", "-1")
