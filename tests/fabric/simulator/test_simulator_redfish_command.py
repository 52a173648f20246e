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

from tests.fabric.simulated_world import simulated_manager
from tests.support.worker import database_url

ROOT = Path(__file__).resolve().parents[3]
PASSWORD = "not-the-default-0xc0ffee"


@pytest.mark.django_db(transaction=True)
def test_the_command_serves_the_world_with_its_account_until_interrupted() -> None:
    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("sqlite3") and "memory" in str(settings_dict["NAME"]):
        pytest.skip("an in-memory SQLite test database cannot be shared with another process")
    simulated_manager(name="served-cmd", fabric="served-cmd")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "DATABASE_URL": database_url(settings_dict),
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "manage.py", "simulator_redfish", "--fabric", "served-cmd"]
    server = subprocess.Popen(
        [*command, "--port", "0", "--username", "ops", "--password", PASSWORD],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert "served as Redfish at http://" in first, first
        url = first.split(" at ", 1)[1].split("/redfish/v1/", 1)[0]
        hosts = requests.get(f"{url}/redfish/v1/Systems", auth=("ops", PASSWORD), timeout=10)
        assert hosts.status_code == 200 and hosts.json()["Members@odata.count"] == 3
        assert requests.get(f"{url}/redfish/v1/Systems", timeout=10).status_code == 401
    finally:
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=30)
    assert server.returncode == 0
    assert PASSWORD not in first + output
    assert "Stopped." in output


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
def test_the_command_refuses_a_negative_task_threshold() -> None:
    simulated_manager(name="served-cmd", fabric="served-cmd")
    with pytest.raises(CommandError, match="--task-after must be 0 or more seconds"):
        call_command("simulator_redfish", "--fabric", "served-cmd", "--task-after", "-1")
