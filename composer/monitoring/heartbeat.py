"""Worker and beat heartbeats: each process says it is alive in Redis every few seconds.

Nothing else tells whether a worker or beat lives: a job's lease (`composer.lease`) beats
only while that job runs, and Celery's own ping is a broadcast every worker must answer
within a timeout (too slow and too costly for a readiness probe hit every few seconds).
So each Celery worker (its main process, which consumes from the broker) and each beat
process runs a small thread that writes one field of one Redis hash,
`<COMPOSER_EVENTS_CHANNEL_PREFIX>:heartbeats`, every COMPOSER_HEARTBEAT_INTERVAL_S: its
role, name, the queues it consumes, and the time. One TIME and one HSET per process per
interval; the readers (/readyz, /metrics) read the whole hash with the time in one round
trip and drop fields older than
COMPOSER_HEARTBEAT_TTL_S (a process that died without a word). A process that stops
cleanly removes its own field at once.

The time, written and read, is Redis's own (TIME), not the processes' clocks: a worker on
a machine whose clock is ahead or behind the web server's would otherwise look younger or
older than it is, dead when alive.

A heartbeat COMPOSER_HEARTBEAT_STALE_S old or more is a dead (or stuck) process. The
prefix is the deployment's own (two deployments may share a Redis server), and the
hash lives in REDIS_URL's database, beside the broker.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

__all__ = [
    "Heartbeat",
    "HeartbeatReading",
    "heartbeat_key",
    "heartbeat_stale_s",
    "heartbeats_read",
    "redis_client",
    "redis_time",
]

ROLES = ("worker", "beat")


def heartbeat_key() -> str:
    """The hash that holds every process's heartbeat (one per deployment)."""
    return f"{settings.COMPOSER_EVENTS_CHANNEL_PREFIX}:heartbeats"


def heartbeat_stale_s() -> float:
    """How old a heartbeat may be before its process counts as dead."""
    return float(settings.COMPOSER_HEARTBEAT_STALE_S)


def redis_client(url: str | None = None) -> redis.Redis:
    """A client of REDIS_URL with short timeouts: a probe must learn at once that Redis is
    away rather than hang."""
    return redis.Redis.from_url(
        url or settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=2
    )


@dataclass(frozen=True)
class HeartbeatReading:
    """One process's last heartbeat: who, what it consumes, how long ago."""

    role: str
    name: str
    queues: tuple[str, ...]
    age_s: float

    @property
    def is_alive(self) -> bool:
        return self.age_s < heartbeat_stale_s()


class Heartbeat:
    """Writes `role`/`name`'s heartbeat every `interval_s` from a daemon thread.

    A write that fails (Redis away) is logged once and tried again at the next beat; the
    heartbeat then simply grows old, which is what the readers should see.
    """

    def __init__(
        self,
        role: str,
        name: str,
        *,
        queues: Iterable[str] = (),
        interval_s: float | None = None,
        url: str | None = None,
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}; got {role!r}")
        self.role = role
        self.name = name
        self.queues = sorted(set(queues))
        self.interval_s = float(interval_s or settings.COMPOSER_HEARTBEAT_INTERVAL_S)
        self.field = f"{role}:{name}"
        self.key = heartbeat_key()
        self.client = redis_client(url)
        self._stop = threading.Event()
        self._failing = False
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{role}", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def beat(self) -> bool:
        """Write the heartbeat now; whether Redis took it."""
        try:
            value = json.dumps({"at": redis_time(self.client), "queues": self.queues})
            self.client.hset(self.key, self.field, value)
        except redis.RedisError as exc:
            if not self._failing:
                logger.warning("%s heartbeat not written (%s); retrying", self.role, exc)
            self._failing = True
            return False
        if self._failing:
            logger.info("%s heartbeat written again", self.role)
        self._failing = False
        return True

    def stop(self) -> None:
        """Stop beating and remove this process's heartbeat (a clean stop is no death).
        Safe to call twice (a worker's shutdown signal, then its exit)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        try:
            self.client.hdel(self.key, self.field)
        except redis.RedisError:
            pass  # it grows old and is dropped by the readers
        finally:
            self.client.close()

    def _run(self) -> None:
        self.beat()
        while not self._stop.wait(self.interval_s):
            self.beat()


def redis_time(client: redis.Redis) -> float:
    """Redis's clock (Unix time): the one clock every process of the deployment shares."""
    seconds, micros = cast(tuple[int, int], client.time())
    return seconds + micros / 1_000_000


def heartbeats_read(client: redis.Redis | None = None) -> list[HeartbeatReading]:
    """Every heartbeat younger than COMPOSER_HEARTBEAT_TTL_S, oldest first; older ones are
    removed. Raises redis.RedisError when Redis cannot be reached."""
    owned = client is None
    client = client or redis_client()
    try:
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(heartbeat_key())
        pipe.time()
        hash_, (seconds, micros) = pipe.execute()
        raw = cast(dict[bytes, bytes], hash_)
        now = seconds + micros / 1_000_000
        ttl = float(settings.COMPOSER_HEARTBEAT_TTL_S)
        readings: list[HeartbeatReading] = []
        expired: list[bytes] = []
        for field, value in raw.items():
            reading = _parse(field, value, now)
            if reading is None or reading.age_s > ttl:
                expired.append(field)
            else:
                readings.append(reading)
        if expired:
            client.hdel(heartbeat_key(), *[f.decode() for f in expired])
    finally:
        if owned:
            client.close()
    return sorted(readings, key=lambda r: (-r.age_s, r.role, r.name))


def _parse(field: bytes, value: bytes, now: float) -> HeartbeatReading | None:
    """A field of the hash as a reading; None for one this code did not write."""
    try:
        role, name = field.decode().split(":", 1)
        data = json.loads(value)
        return HeartbeatReading(
            role=role,
            name=name,
            queues=tuple(str(q) for q in data.get("queues", ())),
            age_s=max(0.0, now - float(data["at"])),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
