"""`make run`'s launcher: the console comes up, answers, and Ctrl-C leaves nothing running."""

from __future__ import annotations

import base64
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.http.request import validate_host

from composer.demo_users import DEMO_USERS
from composer.embedded import free_port
from composer.launcher import banner, console_environment, console_url, main
from composer.redfish_lab import FABRIC, RedfishLab, lab_plan
from tests.support.worker import spawn_logged

ROOT = Path(__file__).resolve().parents[2]

# Run under the settings `make run` gives its processes: what they are, and what an
# unknown address and a stylesheet get from the console at the address the banner prints.
SETTINGS_PROBE = """
import json, sys
import django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST=sys.argv[1])
page = client.get("/fabric/no-such-page/")
css = client.get("/static/css/console.css")
print(json.dumps({
    "module": settings.SETTINGS_MODULE,
    "debug": settings.DEBUG,
    "allowed_hosts": settings.ALLOWED_HOSTS,
    "status": page.status_code,
    "page": page.content.decode(),
    "css": css.status_code,
}))
"""


def probe_settings(tmp_path: Path, **extra: str) -> dict[str, Any]:
    """The settings the launcher's children run under, from a user's plain environment."""
    plain = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DJANGO_SETTINGS_MODULE", "COMPOSER_DEBUG", "ALLOWED_HOSTS", "REDIS_URL"}
    }
    env = console_environment(
        {
            **plain,
            "COMPOSER_VAR_DIR": str(tmp_path / "var"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'console.sqlite3'}",
            **extra,
        }
    )
    host = urllib.parse.urlsplit(console_url("8000")).netloc
    done = subprocess.run(
        [sys.executable, "-c", SETTINGS_PROBE, host],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_make_run_serves_the_console_with_debug_off(tmp_path: Path) -> None:
    """Django's debug 404 lists the whole URL map to whoever mistypes an address."""
    seen = probe_settings(tmp_path)

    assert seen["module"] == "composer.settings.dev"
    assert seen["debug"] is False
    assert validate_host(urllib.parse.urlsplit(console_url("8000")).hostname, seen["allowed_hosts"])
    assert seen["status"] == 404
    assert 'class="error-code">404' in seen["page"] and "Back to the dashboard" in seen["page"]
    assert "URLconf" not in seen["page"] and "fabric/switches/" not in seen["page"]
    assert seen["css"] == 200  # static files are served with DEBUG off, with no collectstatic


def test_composer_debug_turns_debug_on_for_development(tmp_path: Path) -> None:
    seen = probe_settings(tmp_path, COMPOSER_DEBUG="1")

    assert seen["debug"] is True
    assert seen["css"] == 200


def test_the_banner_names_every_demo_login() -> None:
    text = banner("8123", "s3cret")

    assert "http://127.0.0.1:8123/" in text and "'s3cret'" in text
    for user in DEMO_USERS:
        assert user.description in text
    assert "bob (Acme, read-only)" in text
    assert "Redfish lab" not in text  # no lab, no line about it
    assert "Redfish: http://127.0.0.1:8123/redfish/v1/" in text  # Composer's own service


def test_the_banner_gives_the_redfish_labs_address_and_account_and_says_it_is_not_added() -> None:
    text = banner("8123", "s3cret", RedfishLab("127.0.0.1", 8124, "operator", "simulator"))

    lab = text.split("Redfish lab", 1)[1]
    assert "http://127.0.0.1:8124" in lab and "'operator' / 'simulator'" in lab
    assert "not added yet" in lab and "driver redfish" in lab


def test_a_lab_password_the_operator_chose_is_not_printed() -> None:
    text = banner("8123", "s3cret", RedfishLab("127.0.0.1", 8124, "lab-ops", "lab-pass"))

    assert "lab-pass" not in text and "'lab-ops' / (yours)" in text


def test_the_redfish_lab_takes_8001_or_the_next_free_port_and_can_be_left_out() -> None:
    def free(port: int) -> bool:
        return port not in {8001, 8002}

    lab = lab_plan({}, host="127.0.0.1", avoid=8000, is_free=free)
    assert lab is not None and (lab.port, lab.username, lab.password) == (
        8003,
        "operator",
        "simulator",
    )
    beside = lab_plan({}, host="127.0.0.1", avoid=8003, is_free=free)  # the console on 8003
    assert beside is not None and beside.port == 8004
    assert (
        lab_plan({"COMPOSER_REDFISH_LAB": "0"}, host="127.0.0.1", avoid=8000, is_free=free) is None
    )
    account = {
        "COMPOSER_SIMULATOR_REDFISH_USERNAME": "ops",
        "COMPOSER_SIMULATOR_REDFISH_PASSWORD": "pw",
        "COMPOSER_REDFISH_LAB_PORT": "9100",
    }
    chosen = lab_plan(account, host="127.0.0.1", avoid=8000, is_free=free)
    assert chosen is not None and (chosen.port, chosen.username, chosen.password) == (
        9100,
        "ops",
        "pw",
    )
    assert chosen.environment({})["COMPOSER_SIMULATOR_REDFISH_PASSWORD"] == "pw"
    assert "pw" not in chosen.argv("python")  # never on the command line, where ps shows it
    for bad in ("8001", "80x", "8000"):
        with pytest.raises(ValueError, match="COMPOSER_REDFISH_LAB_PORT"):
            lab_plan({"COMPOSER_REDFISH_LAB_PORT": bad}, host="127.0.0.1", avoid=8000, is_free=free)
    with pytest.raises(ValueError, match="no free port for the Redfish lab"):
        lab_plan({}, host="127.0.0.1", avoid=8000, is_free=lambda port: False)


def test_without_the_simulator_there_is_no_demo_and_the_launcher_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The demo data centre is the simulator's (`seed_demo`): with COMPOSER_SIMULATOR off
    the launcher stops before it starts anything, naming the variable."""
    monkeypatch.setenv("COMPOSER_SIMULATOR", "0")
    monkeypatch.setenv("COMPOSER_VAR_DIR", str(tmp_path / "var"))

    assert main() == 1
    assert "COMPOSER_SIMULATOR" in caplog.text
    assert not (tmp_path / "var").exists()  # nothing started, nothing written


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("COMPOSER_DEMO_HISTORY_DAYS", "a week", "a number of days"),
        ("COMPOSER_DEMO_HISTORY_DAYS", "-1", "a number of days"),
        ("COMPOSER_DEMO_HISTORY_DAYS", "61", "a number of days"),
        ("COMPOSER_DEMO_HISTORY_MINUTE_HOURS", "25", "a number of hours"),
    ],
)
def test_a_history_that_is_not_a_number_of_days_stops_the_launcher_before_it_starts(
    variable: str,
    value: str,
    words: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("COMPOSER_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("PORT", str(free_port()))

    assert main() == 1
    assert f"{variable} must be {words}" in caplog.text


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def launcher_env(tmp_path: Path, port: int) -> dict[str, str]:
    """The launcher's environment: its own SQLite file, var folder and embedded Redis."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        PORT=str(port),
        COMPOSER_VAR_DIR=str(tmp_path / "var"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'console.sqlite3'}",
        COMPOSER_SIMULATOR_LATENCY_SCALE="0",
        COMPOSER_DEMO_PASSWORD="launcher-test",
        # Its own port: 8001 may be another console's lab on this machine.
        COMPOSER_REDFISH_LAB_PORT=str(free_port()),
        COMPOSER_SIMULATOR_REDFISH_PASSWORD="lab-launcher-test",
        # A day of the demo's past, its last hour minute by minute (a week, and a day of
        # minutes, by default): the wiring, in seconds.
        COMPOSER_DEMO_HISTORY_DAYS="1",
        COMPOSER_DEMO_HISTORY_MINUTE_HOURS="1",
    )
    return env


def signed_in(url: str, username: str, password: str) -> urllib.request.OpenerDirector:
    """A cookie-keeping client logged in through the console's login form."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    with opener.open(f"{url}accounts/login/", timeout=10) as r:
        form = r.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, form
    body = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    with opener.open(f"{url}accounts/login/", data=body, timeout=10) as r:
        assert urllib.parse.urlsplit(r.url).path == "/", r.url  # on to the dashboard
    return opener


@pytest.mark.worker
def test_the_console_starts_serves_and_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    env = launcher_env(tmp_path, port)
    log_path = tmp_path / "launcher.log"
    launcher = spawn_logged([sys.executable, "-m", "composer.launcher"], env=env, log_path=log_path)
    try:
        deadline = time.monotonic() + 240
        while "Composer is running at" not in (output := log_path.read_text()):
            assert launcher.poll() is None and time.monotonic() < deadline, output
            time.sleep(0.2)
        running = re.search(r"Composer is running at (\S+)", output)
        assert running, output
        url = running.group(1)
        pids = {name: int(pid) for name, pid in re.findall(r"started (\w+) \(pid (\d+)\)", output)}
        redis = re.search(r"embedded Redis at (\S+) \(pid (\d+)\)", output)
        assert set(pids) == {"worker", "housekeeping", "beat", "events", "redfish_lab", "web"}
        assert redis, output
        redis_pid = int(redis.group(2))

        # The banner is printed once the console answers: at once, no retries.
        assert url == f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(f"{url}accounts/login/", timeout=5) as r:
            assert r.status == 200 and 'name="username"' in r.read().decode()
        # ...once it is ready: /readyz says so at once, no retries.
        with urllib.request.urlopen(f"{url}readyz", timeout=5) as r:
            assert r.status == 200 and json.load(r)["status"] == "ready"
        # The web server's /metrics adds up the workers' series (one multiprocess folder):
        # the housekeeping worker's health polls of the demo's manager.
        polled = r'composer_driver_call_duration_seconds_count\{manager="demo",operation="health"\}'
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(f"{url}metrics", timeout=10) as r:
                exposition = r.read().decode()
            if re.search(polled + r" [1-9]", exposition) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert re.search(polled + r" [1-9]", exposition), exposition[-3000:]
        assert (tmp_path / "var" / "prometheus").is_dir()
        from celery import Celery

        pongs = Celery("launcher-test", broker=redis.group(1)).control.ping(timeout=1.0)
        names = {name for pong in pongs for name in pong}
        assert any(name.startswith("composer-housekeeping-") for name in names), pongs
        assert any(not name.startswith("composer-housekeeping-") for name in names), pongs
        assert "launcher-test" in output
        assert all(user.description in output for user in DEMO_USERS), output
        # The demo's past was lived before the workers started.
        assert "Demo history: " in output and "booked day-training, night-inference" in output

        # The Redfish lab answers at the address and with the account the banner gives, with
        # a world of its own, and is not a fabric manager until the operator adds it.
        # The password set for it is the operator's own: not printed.
        lab = re.search(r"Redfish lab \(.*\): (http://\S+)\n\s+account '(\S+)' / \(yours\)", output)
        assert lab, output
        assert lab.group(1) == f"http://127.0.0.1:{env['COMPOSER_REDFISH_LAB_PORT']}"
        assert lab.group(2) == "operator" and "lab-launcher-test" not in output
        systems = urllib.request.Request(
            f"{lab.group(1)}/redfish/v1/Systems",
            headers={
                "Authorization": "Basic "
                + base64.b64encode(f"{lab.group(2)}:lab-launcher-test".encode()).decode()
            },
        )
        with urllib.request.urlopen(systems, timeout=10) as r:
            assert json.load(r)["Members@odata.count"] == 4
        operator = signed_in(url, "admin", "launcher-test")
        with operator.open(f"{url}fabric/managers/", timeout=10) as r:
            managers = r.read().decode()
        assert "demo" in managers and lab.group(1) not in managers and FABRIC not in managers

        # A tenant who opens an operator's address (or any unknown one) gets the console's
        # own 404 page, with its styles, and never the URL map.
        browser = signed_in(url, "alice", "launcher-test")
        for path in ("fabric/switches/", "fabric/no-such-page/"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                browser.open(f"{url}{path}", timeout=10)
            page = caught.value.read().decode()
            assert caught.value.code == 404, page
            assert 'class="error-code">404' in page and "alice" in page
            assert "URLconf" not in page and "composer.urls" not in page
        for css in re.findall(r'href="/(static/[^"]+\.css)"', page):
            with browser.open(f"{url}{css}", timeout=10) as r:
                assert r.status == 200, css
    finally:
        launcher.send_signal(signal.SIGINT)
        code = launcher.wait(timeout=60)
    output = log_path.read_text()
    assert code == 0, output
    for name, pid in pids.items():
        assert not group_alive(pid), f"{name} (pgid {pid}) still running after Ctrl-C"
    assert not group_alive(redis_pid)


@pytest.mark.worker
def test_ctrl_c_while_starting_leaves_nothing_running(tmp_path: Path) -> None:
    env = launcher_env(tmp_path, free_port())
    log_path = tmp_path / "launcher.log"
    launcher = spawn_logged([sys.executable, "-m", "composer.launcher"], env=env, log_path=log_path)
    try:
        deadline = time.monotonic() + 60
        while "embedded Redis at" not in log_path.read_text():
            assert launcher.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        launcher.send_signal(signal.SIGINT)
        code = launcher.wait(timeout=120)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    output = log_path.read_text()

    assert code == 0, output
    assert "Composer is running" not in output
    redis_pid = re.search(r"embedded Redis at \S+ \(pid (\d+)\)", output)
    assert redis_pid and not group_alive(int(redis_pid.group(1))), output
    for name, pid in re.findall(r"started (\w+) \(pid (\d+)\)", output):
        assert not group_alive(int(pid)), f"{name} still running after Ctrl-C during start-up"


def test_the_readme_names_every_demo_login() -> None:
    readme = (ROOT / "README.md").read_text()
    logins = readme.split("and the demo logins:", 1)[1].split("password", 1)[0]

    for user in DEMO_USERS:
        assert f"**{user.username}**" in logins, user.username


def test_the_demo_gets_a_credentials_key_kept_in_var(tmp_path: Path) -> None:
    from cryptography.fernet import Fernet

    from composer.launcher import demo_credentials_keys

    env: dict[str, str] = {}
    demo_credentials_keys(env, tmp_path)
    key = env["COMPOSER_CREDENTIALS_KEYS"]
    Fernet(key.encode())  # a usable key
    assert (tmp_path / "credentials.key").stat().st_mode & 0o777 == 0o600
    again: dict[str, str] = {}
    demo_credentials_keys(again, tmp_path)
    assert again["COMPOSER_CREDENTIALS_KEYS"] == key  # the next run opens what this one saved
    chosen = {"COMPOSER_CREDENTIALS_KEYS": "set-by-the-operator"}
    demo_credentials_keys(chosen, tmp_path / "other")
    assert chosen["COMPOSER_CREDENTIALS_KEYS"] == "set-by-the-operator"
    assert not (tmp_path / "other").exists()
