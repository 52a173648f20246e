"""A Redis of a test's own that the test stops and starts again on the same port: the
broker, cache and channel layer of a Redis outage (issue 11)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from composer import celery_app
from composer.embedded import free_port, start_redis
from tests.support.worker import _reset_connections


@dataclass
class OwnRedis:
    """A redis-server on a fixed port; `stop()` kills it (SIGKILL, as an outage does; it
    persists nothing, like CI's), `start()` brings a fresh, empty one back on that port."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    url: str = ""

    def start(self) -> str:
        self.process, self.url = start_redis(self.folder, port=self.port)
        return self.url

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    @classmethod
    @contextmanager
    def running(cls, folder: Path) -> Iterator[OwnRedis]:
        redis = cls(folder=folder)
        redis.start()
        try:
            yield redis
        finally:
            redis.stop()


def use_redis(settings: Any, url: str) -> None:
    """Point the cache (the token throttle's counters) and the channel layer (and the event
    hub) of this process at `url`; `settings` is pytest-django's fixture, which undoes it.
    Celery's broker: `celery_on`."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [url], "prefix": settings.COMPOSER_EVENTS_CHANNEL_PREFIX},
        }
    }


@contextmanager
def celery_on(url: str) -> Iterator[None]:
    """Celery's broker at `url` with eager mode off, restored afterwards."""
    old = {
        "task_always_eager": celery_app.conf.task_always_eager,
        "broker_url": celery_app.conf.broker_url,
    }
    _reset_connections()
    celery_app.conf.update(task_always_eager=False, broker_url=url)
    try:
        yield
    finally:
        celery_app.conf.update(**old)
        _reset_connections()
