"""A real worker and beat: their heartbeats make /readyz 200, their log lines are JSON, and a
request's id follows it into the compose job the worker runs."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from composer.choices import TERMINAL_JOB_STATUSES, JobKind, JobStatus
from composer.models import Job
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

JSON_LOGS = {"COMPOSER_LOG_FORMAT": "json", "COMPOSER_HEARTBEAT_INTERVAL_S": "1"}


def readyz_until(client: Client, status: int, logs: Any, timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        response = client.get("/readyz")
        if response.status_code == status:
            return dict(response.json())
        if time.monotonic() > deadline:
            raise AssertionError(f"/readyz {response.json()}\n{logs()}")
        time.sleep(0.3)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_worker_and_beat_heartbeats_json_logs_and_the_request_id_in_the_job(
    redis_url: str, settings: Any, client: Client, api_as: Any, acme: Any, alice: Any
) -> None:
    settings.REDIS_URL = redis_url
    manager = simulated_manager(name="sim-ops", fabric="sim-ops")
    inventory_sync(manager=manager)
    database = connection.settings_dict
    assert client.get("/readyz").status_code == 503  # nobody beats yet
    with (
        WorkerProcess.start(redis_url=redis_url, database=database, env=JSON_LOGS) as worker,
        WorkerProcess.start(
            redis_url=redis_url, database=database, name="beat", beat=True, env=JSON_LOGS
        ) as beat,
    ):

        def logs() -> str:
            return f"{worker.log()[-4000:]}\n{beat.log()[-2000:]}"

        body = readyz_until(client, 200, logs)
        assert body["failed"] == []

        api = api_as(alice)
        response = api.post(
            "/api/v1/compositions/",
            {"tenant": acme.slug, "name": "traced", "spec": {"items": [{"kind": "gpu"}]}},
            format="json",
            HTTP_X_REQUEST_ID="req-ops-42",
        )
        assert response.status_code == 202, response.content
        assert response["X-Request-ID"] == "req-ops-42"
        job = Job.objects.get(kind=JobKind.COMPOSE)
        deadline = time.monotonic() + 60
        while job.status not in TERMINAL_JOB_STATUSES and time.monotonic() < deadline:
            time.sleep(0.2)
            job.refresh_from_db()
        assert job.status == JobStatus.SUCCEEDED, logs()

        lines = json_lines(worker.log())
        assert lines, logs()
        assert {"time", "level", "logger", "message", "request_id", "process"} <= set(lines[0])
        traced = [line for line in lines if line["request_id"] == "req-ops-42"]
        assert any(
            line["logger"] == "composer.runner" and f"job {job.pk} succeeded" in line["message"]
            for line in traced
        ), logs()
        # Beat's own lines are JSON too, and its periodic tasks carry no request's id.
        assert any("beat" in line["message"].lower() for line in json_lines(beat.log()))
        assert all(line["request_id"] == "-" for line in json_lines(beat.log()))
    # Stopped cleanly: their heartbeats are gone at once.
    body = readyz_until(client, 503, lambda: "", timeout_s=10)
    assert {"workers", "beat"} <= set(body["failed"])


def test_a_web_process_writes_json_lines_with_the_request_id(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from composer.embedded import free_port
    from tests.support.daphne import daphne_running

    monkeypatch.setenv("COMPOSER_LOG_FORMAT", "json")
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")  # nobody: not ready
    log_path = tmp_path / "daphne.log"
    with daphne_running(connection.settings_dict, log_path=log_path) as port:
        url = f"http://127.0.0.1:{port}/readyz"
        request = urllib.request.Request(url, headers={"X-Request-ID": "web-req-7"})
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=10)
        assert answer.value.code == 503
        assert answer.value.headers["X-Request-ID"] == "web-req-7"
        deadline = time.monotonic() + 10
        while '"web-req-7"' not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
    lines = json_lines(log_path.read_text())
    traced = [line for line in lines if line["request_id"] == "web-req-7"]
    assert traced, log_path.read_text()
    assert traced[0]["logger"] == "composer.monitoring.views"
    assert traced[0]["message"].startswith("not ready: ")
