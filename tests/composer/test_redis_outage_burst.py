"""Issue 11's outage, end to end: a real worker and a real beat on a Redis of the test's own;
a burst of compositions with slow binds; Redis killed mid-burst and started again, empty, on
the same port. Every compose accepted, before or during the outage, ends READY."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from composer.choices import CompositionState
from composer.models import Composition
from fabric.services.sync import inventory_sync
from fabric.simulator.models import SimulatedFabric
from fabric.simulator.store import latency_set
from tests.fabric.simulated_world import simulated_manager
from tests.factories.composer import PASSWORD
from tests.support.outage import OwnRedis, celery_on, use_redis
from tests.support.worker import ROOT, WorkerProcess, database_url

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Slow enough that Redis dies while binds run and others wait in its queue.
OUTAGE_ENV = {
    "COMPOSER_TEST_LATENCY_SCALE": "1",
    "COMPOSER_JOB_DISPATCH_S": "1",
    "COMPOSER_JOB_REDISPATCH_S": "5",
}
BIND_MS = 1500
BEFORE = [("gpu", 1), ("gpu", 2), ("gpu", 3), ("nvme", 1)]
DURING = [("gpu", 4), ("nvme", 2), ("nic", 1)]


@contextmanager
def beat(redis_url: str, folder: Path) -> Iterator[Path]:
    """A real `celery beat` on `redis_url`, with the outage's short dispatch intervals."""
    log_path = folder / "beat.log"
    env = {
        **os.environ,
        **OUTAGE_ENV,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "COMPOSER_TEST_EAGER": "0",
        "DATABASE_URL": database_url(connection.settings_dict),
        "REDIS_URL": redis_url,
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "composer", "beat", "--loglevel", "INFO",
             "--schedule", str(folder / "celerybeat-schedule")],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield log_path
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def compose(api: APIClient, tenant: Any, kind: str, n: int) -> int:
    answer = api.post(
        "/api/v1/compositions/",
        {"tenant": tenant.slug, "name": f"{kind}-{n}", "spec": {"items": [{"kind": kind}]}},
        format="json",
    )
    assert answer.status_code == 202, answer.content
    return int(answer.json()["id"])


def test_every_compose_accepted_around_a_redis_restart_ends_ready(
    tmp_path: Path, settings: Any, acme: Any, alice: Any
) -> None:
    manager = simulated_manager(name="sim-outage", fabric="sim-outage")
    inventory_sync(manager=manager)
    latency_set(fabric=SimulatedFabric.objects.get(name="sim-outage"), operation="bind", ms=BIND_MS)
    api = APIClient()
    api.force_authenticate(alice)

    with (
        OwnRedis.running(tmp_path / "redis") as redis,
        celery_on(redis.url),
        WorkerProcess.start(redis_url=redis.url, database=connection.settings_dict, env=OUTAGE_ENV)
        as worker,
        beat(redis.url, tmp_path) as beat_log,
    ):  # fmt: skip
        use_redis(settings, redis.url)
        accepted = [compose(api, acme, kind, n) for kind, n in BEFORE]
        time.sleep(1.0)  # two binds running, the rest waiting in Redis's queue

        redis.stop()
        accepted += [compose(api, acme, kind, n) for kind, n in DURING]
        token = APIClient().post(
            "/api/v1/auth/token/", {"username": "alice", "password": PASSWORD}, format="json"
        )
        assert token.status_code == 200, token.content
        time.sleep(3.0)
        redis.start()  # empty: what it held before is gone

        deadline = time.monotonic() + 120
        states: dict[int, str] = {}
        while time.monotonic() < deadline:
            states = dict(Composition.objects.filter(pk__in=accepted).values_list("pk", "state"))
            if set(states.values()) == {CompositionState.READY}:
                break
            time.sleep(0.5)
        logs = f"--- worker\n{worker.log()[-6000:]}\n--- beat\n{beat_log.read_text()[-3000:]}"
        assert set(states.values()) == {CompositionState.READY}, f"{states}\n{logs}"
        # The outbox did it: the composes refused during the outage, and those Redis lost.
        assert "dispatched" in worker.log() and "sent again" in worker.log(), logs
    assert len(accepted) == len(BEFORE) + len(DURING)
