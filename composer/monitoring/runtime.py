"""The processes' series read from Redis at scrape time: task queue depth and heartbeats.

Celery's Redis transport keeps each queue as a list named after it (and, with task
priorities, one list per priority step, named `<queue>\\x06\\x16<n>`): its length is the
number of tasks waiting. Heartbeats are those of `composer.monitoring.heartbeat`.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client.core import GaugeMetricFamily, Metric

from composer.monitoring.heartbeat import heartbeats_read, redis_client
from composer.monitoring.readiness import job_queues

__all__ = ["queue_depths", "runtime_families"]

# Kombu's separator between a queue's name and its priority step (kombu.transport.redis).
PRIORITY_SEP = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)


def _broker_url() -> str:
    from composer import celery_app

    return str(celery_app.conf.broker_url or "")


def queue_depths(client: redis.Redis) -> dict[str, int]:
    """Tasks waiting per queue (every priority step added up), in one round trip."""
    queues = job_queues()
    pipe = client.pipeline(transaction=False)
    for queue in queues:
        pipe.llen(queue)
        for step in PRIORITY_STEPS:
            pipe.llen(f"{queue}{PRIORITY_SEP}{step}")
    lengths = pipe.execute()
    per = 1 + len(PRIORITY_STEPS)
    return {q: sum(lengths[i * per : (i + 1) * per]) for i, q in enumerate(queues)}


def runtime_families() -> Iterator[Metric]:
    """Queue depth per queue (when the broker is Redis) and each process's heartbeat age."""
    up = GaugeMetricFamily("composer_redis_up", "1 when Redis answered this scrape.")
    broker = _broker_url()
    try:
        beats = heartbeats_read()
        depths: dict[str, int] | None = None
        if broker.startswith(("redis://", "rediss://", "unix://")):
            client = redis_client(broker)
            try:
                depths = queue_depths(client)
            finally:
                client.close()
    except redis.RedisError:
        up.add_metric([], 0)
        yield up
        return
    up.add_metric([], 1)
    yield up
    if depths is not None:
        depth = GaugeMetricFamily(
            "composer_celery_queue_length", "Tasks waiting in a Celery queue.", labels=["queue"]
        )
        for queue, n in depths.items():
            depth.add_metric([queue], n)
        yield depth
    age = GaugeMetricFamily(
        "composer_heartbeat_age_seconds",
        "Seconds since a worker or beat process last said it was alive (dropped after "
        "COMPOSER_HEARTBEAT_TTL_S).",
        labels=["role", "process"],
    )
    alive = GaugeMetricFamily(
        "composer_processes_alive",
        "Workers and beats whose heartbeat is younger than COMPOSER_HEARTBEAT_STALE_S.",
        labels=["role"],
    )
    counts = {"worker": 0, "beat": 0}
    for beat in beats:
        age.add_metric([beat.role, beat.name], beat.age_s)
        if beat.is_alive and beat.role in counts:
            counts[beat.role] += 1
    for role, n in counts.items():
        alive.add_metric([role], n)
    yield age
    yield alive
