"""Several processes add up: each counts into PROMETHEUS_MULTIPROC_DIR, and /metrics (or
`manage.py metrics_serve` on a machine without a web process) serves the sum."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from prometheus_client import multiprocess

from composer.management.commands.metrics_serve import metrics_app
from tests.support.metrics import Scrape, scrape

ROOT = Path(__file__).resolve().parents[3]
COUNT = """
from composer.monitoring import metrics
metrics.JOB_RUNS.labels(kind="compose", outcome="succeeded").inc()
metrics.WEBSOCKETS_CONNECTED.inc()
print(__import__("os").getpid())
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two processes (a web process and a worker's pool process, say) that each counted one
    compose and one live websocket, then exited."""
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    pids = [
        int(
            subprocess.run(
                [sys.executable, "-c", COUNT], cwd=ROOT, env=env, capture_output=True, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    multiprocess.mark_process_dead(pids[0], str(folder))  # the first one's websocket closed
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    return folder


def sums(result: Scrape) -> tuple[float, float]:
    return (
        result.value("composer_job_runs_total", kind="compose", outcome="succeeded"),
        result.value("composer_websockets_connected"),
    )


@pytest.mark.django_db
def test_metrics_add_up_every_process_of_the_machine(client: Client, folder: Path) -> None:
    assert sums(scrape(client, "/metrics?scope=process")) == (2, 1)


def test_metrics_serve_answers_the_same_sum_to_the_allowed_only(
    folder: Path, settings: Any
) -> None:
    answers: list[str] = []

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answers.append(status)

    body = b"".join(
        metrics_app(
            {"PATH_INFO": "/metrics", "REQUEST_METHOD": "GET", "REMOTE_ADDR": "127.0.0.1"},
            start_response,
        )
    )
    assert answers == ["200 OK"]
    assert sums(Scrape(body.decode())) == (2, 1)

    settings.COMPOSER_METRICS_TOKEN = "worker-machine-token"
    b"".join(
        metrics_app(
            {"PATH_INFO": "/metrics", "REQUEST_METHOD": "GET", "REMOTE_ADDR": "127.0.0.1"},
            start_response,
        )
    )
    b"".join(
        metrics_app(
            {"PATH_INFO": "/metrics", "REQUEST_METHOD": "GET", "REMOTE_ADDR": "10.9.9.9"},
            start_response,
        )
    )
    assert answers[1:] == ["401 Unauthorized", "403 Forbidden"]


def test_metrics_serve_needs_the_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    with pytest.raises(CommandError, match="PROMETHEUS_MULTIPROC_DIR"):
        call_command("metrics_serve")


WEB = """
import composer.asgi  # a web process, as Daphne starts it
from composer.monitoring import metrics
metrics.WEBSOCKETS_CONNECTED.inc()
metrics.JOB_RUNS.labels(kind="compose", outcome="succeeded").inc()
"""


@pytest.mark.django_db
def test_a_web_process_that_exits_leaves_the_websocket_count(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    subprocess.run([sys.executable, "-c", WEB], cwd=ROOT, env=env, check=True)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    # Its counters stay in the machine's sum; its open websockets do not.
    result = scrape(client, "/metrics?scope=process")
    assert result.value("composer_job_runs_total", kind="compose", outcome="succeeded") == 1
    assert result.get("composer_websockets_connected") == 0
