"""/healthz and /readyz, and the worker and beat heartbeats they read, on a real Redis."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from composer.choices import EventType
from composer.models import Event
from composer.monitoring.heartbeat import Heartbeat, heartbeat_key, heartbeats_read, redis_client
from composer.monitoring.readiness import job_queues
from tests.support.outage import OwnRedis

pytestmark = pytest.mark.django_db


def ready(client: Client, path: str = "/readyz") -> tuple[int, dict[str, Any]]:
    response = client.get(path)
    return response.status_code, response.json()


@pytest.fixture
def own_redis(tmp_path: Path, settings: Any) -> Iterator[OwnRedis]:
    """A Redis of this test's own, named by REDIS_URL, which the test stops and restarts."""
    with OwnRedis.running(tmp_path / "redis") as server:
        settings.REDIS_URL = server.url
        yield server


@pytest.fixture
def alive(own_redis: OwnRedis, settings: Any) -> Iterator[list[Heartbeat]]:
    """A worker of every queue and a beat beating every 0.2 s into `own_redis`."""
    settings.COMPOSER_HEARTBEAT_STALE_S = 3
    beats = [
        Heartbeat("worker", "w1@test", queues=job_queues(), interval_s=0.2).start(),
        Heartbeat("beat", "beat@test", interval_s=0.2).start(),
    ]
    yield beats
    for beat in beats:
        beat.stop()


def wait_for(client: Client, status: int, timeout_s: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        code, body = ready(client)
        if code == status or time.monotonic() > deadline:
            assert code == status, body
            return body
        time.sleep(0.2)


def test_healthz_answers_while_the_process_lives(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_503_naming_redis_while_it_is_down_and_200_once_it_is_back(
    client: Client, own_redis: OwnRedis, alive: list[Heartbeat]
) -> None:
    body = wait_for(client, 200)
    assert body["status"] == "ready" and body["failed"] == []

    own_redis.stop()
    code, body = ready(client)
    assert code == 503
    assert "redis" in body["failed"]
    assert "Redis" in body["checks"]["redis"]["detail"]
    assert body["checks"]["database"] == {"ok": True}
    # No address, port or password of Redis in an answer anyone may read.
    assert str(own_redis.port) not in str(body)

    own_redis.start()  # empty: the heartbeats come back with the next beat
    body = wait_for(client, 200)
    assert body["checks"]["redis"] == {"ok": True}


def test_readyz_names_the_workers_and_beat_without_a_heartbeat(
    client: Client, own_redis: OwnRedis
) -> None:
    code, body = ready(client)
    assert code == 503
    assert set(body["failed"]) == {"workers", "beat"}
    assert "no worker" in body["checks"]["workers"]["detail"]
    assert "no beat" in body["checks"]["beat"]["detail"]


def test_a_worker_whose_heartbeat_went_stale_is_dead(
    client: Client, own_redis: OwnRedis, settings: Any
) -> None:
    settings.COMPOSER_HEARTBEAT_STALE_S = 2
    ready(client)  # the first answer reads the migrations: not timed below
    Heartbeat("beat", "beat@test").beat()
    assert Heartbeat("worker", "w1@test", queues=job_queues()).beat()
    assert ready(client)[0] == 200
    time.sleep(2.2)
    code, body = ready(client)
    assert code == 503
    assert re.search(r"the last heartbeat is \d+ s old", body["checks"]["workers"]["detail"])


def test_a_queue_nobody_consumes_fails_the_workers_check(
    client: Client, own_redis: OwnRedis
) -> None:
    Heartbeat("beat", "beat@test").beat()
    Heartbeat("worker", "jobs@test", queues=["celery"]).beat()
    code, body = ready(client)
    assert code == 503 and body["failed"] == ["workers"]
    assert "housekeeping" in body["checks"]["workers"]["detail"]


def test_an_event_left_unpublished_fails_the_outbox_check(
    client: Client, own_redis: OwnRedis, alive: list[Heartbeat], settings: Any
) -> None:
    wait_for(client, 200)
    Event.objects.create(
        type=EventType.COMPOSITION_STATE, at=timezone.now() - timedelta(minutes=5), payload={}
    )
    code, body = ready(client)
    assert code == 503 and body["failed"] == ["outbox"]
    assert "1 live event(s) unpublished" in body["checks"]["outbox"]["detail"]


def test_only_runs_the_checks_named(client: Client, own_redis: OwnRedis) -> None:
    code, body = ready(client, "/readyz?only=database,redis")
    assert code == 200 and set(body["checks"]) == {"database", "redis"}
    response = client.get("/readyz?only=database,nonsense")
    assert response.status_code == 400
    assert "nonsense" in response.json()["only"]


def test_heartbeats_are_read_back_and_a_clean_stop_removes_its_own(
    own_redis: OwnRedis, settings: Any
) -> None:
    beat = Heartbeat("worker", "w1@test", queues=["celery"], interval_s=0.1).start()
    time.sleep(0.3)
    readings = heartbeats_read()
    assert [(r.role, r.name, r.queues) for r in readings] == [("worker", "w1@test", ("celery",))]
    assert readings[0].age_s < 1 and readings[0].is_alive
    beat.stop()
    assert heartbeats_read() == []


def test_heartbeats_older_than_the_ttl_are_forgotten(own_redis: OwnRedis, settings: Any) -> None:
    settings.COMPOSER_HEARTBEAT_TTL_S = 60
    client = redis_client()
    client.hset(heartbeat_key(), "worker:gone@test", f'{{"at": {time.time() - 120}}}')
    client.hset(heartbeat_key(), "worker:junk", "not json")
    Heartbeat("worker", "w2@test").beat()
    assert [r.name for r in heartbeats_read()] == ["w2@test"]
    assert client.hkeys(heartbeat_key()) == [b"worker:w2@test"]


def test_heartbeat_ages_use_redis_clock_not_the_processes(
    own_redis: OwnRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # the writer's clock: an hour behind
    assert Heartbeat("worker", "behind@test", queues=job_queues()).beat()
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # the reader's: an hour ahead
    (reading,) = heartbeats_read()
    assert reading.name == "behind@test" and reading.age_s < 5 and reading.is_alive
