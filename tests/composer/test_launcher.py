"""`make run`'s launcher: the console comes up, answers, and Ctrl-C leaves nothing running."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from composer.demo_users import DEMO_USERS
from composer.embedded import free_port
from composer.launcher import banner

ROOT = Path(__file__).resolve().parents[2]


def test_the_banner_names_every_demo_login() -> None:
    text = banner("8123", "s3cret")

    assert "http://127.0.0.1:8123/" in text and "'s3cret'" in text
    for user in DEMO_USERS:
        assert user.description in text
    assert "bob (Acme, read-only)" in text


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
    )
    return env


@pytest.mark.worker
def test_the_console_starts_serves_and_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    env = launcher_env(tmp_path, port)
    log_path = tmp_path / "launcher.log"
    with log_path.open("wb") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "composer.launcher"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
        assert set(pids) == {"worker", "beat", "web"}, output
        assert redis, output
        redis_pid = int(redis.group(2))

        # The banner is printed once the console answers: at once, no retries.
        assert url == f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(f"{url}accounts/login/", timeout=5) as r:
            assert r.status == 200 and 'name="username"' in r.read().decode()
        from celery import Celery

        pongs = Celery("launcher-test", broker=redis.group(1)).control.ping(timeout=1.0)
        assert any(name.startswith("composer-") for pong in pongs for name in pong), pongs
        assert "launcher-test" in output
        assert all(user.description in output for user in DEMO_USERS), output

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
    with log_path.open("wb") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "composer.launcher"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
