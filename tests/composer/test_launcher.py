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

from composer.embedded import free_port

ROOT = Path(__file__).resolve().parents[2]


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
        deadline = time.monotonic() + 180
        status = None
        while time.monotonic() < deadline and launcher.poll() is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/accounts/login/", timeout=2
                ) as r:
                    status = r.status
                    body = r.read().decode()
                break
            except OSError:
                time.sleep(0.5)
        output = log_path.read_text()
        assert status == 200, output
        assert 'name="username"' in body
        assert f"http://127.0.0.1:{port}/" in output
        assert "launcher-test" in output and "alice" in output and "carol" in output
        pids = {name: int(pid) for name, pid in re.findall(r"started (\w+) \(pid (\d+)\)", output)}
        redis_pid = re.search(r"embedded Redis at \S+ \(pid (\d+)\)", output)
        assert set(pids) == {"worker", "beat", "web"}, output
        assert redis_pid, output
    finally:
        launcher.send_signal(signal.SIGINT)
        code = launcher.wait(timeout=60)
    output = log_path.read_text()
    assert code == 0, output
    for name, pid in pids.items():
        assert not group_alive(pid), f"{name} (pgid {pid}) still running after Ctrl-C"
    assert not group_alive(int(redis_pid.group(1)))


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
