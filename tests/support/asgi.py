"""The real ASGI application (HTTP and websockets) served for browser tests.

Django's `live_server` speaks WSGI only, so `/ws/events/` needs this: uvicorn serving
`composer.asgi` in a thread of the test process, on the Redis pub/sub channel layer of the
run's Redis (CI's, or the embedded one of the `redis_url` fixture) under a prefix of its own.
Events recorded by the test process (a health poll run eagerly, say) are published after
commit on that layer, and the server's consumers hand them to the browsers.

`asgi_server_running(redis_url, settings)` is the context manager behind the
`asgi_server` fixture of tests/browser/conftest.py. A worker or beat process the test starts
publishes to the server's browsers when given `channel_prefix` as its
COMPOSER_EVENTS_CHANNEL_PREFIX.
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from composer.embedded import free_port


class AsgiServer:
    """uvicorn serving composer.asgi in a thread; stop() and start() keep the port.

    `channel_prefix`: the prefix of the Redis channels its consumers listen on."""

    def __init__(self, channel_prefix: str = "") -> None:
        self.channel_prefix = channel_prefix
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server: Any = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        import uvicorn

        from composer.asgi import application

        config = uvicorn.Config(
            application, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        assert self.thread is not None
        self.thread.join(timeout=10)


@contextmanager
def asgi_server_running(redis_url: str, settings: Any) -> Iterator[AsgiServer]:
    """Serve the app on the pub/sub layer of `redis_url` (pytest-django's `settings`
    restores CHANNEL_LAYERS afterwards)."""
    prefix = f"composer-test-{uuid.uuid4().hex[:10]}"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [redis_url], "prefix": prefix},
        }
    }
    # The server's threads keep database connections between requests (CONN_MAX_AGE);
    # closed after each one here, so that none outlives the test and blocks the teardown.
    database = connections.settings[DEFAULT_DB_ALIAS]
    kept = database["CONN_MAX_AGE"]
    database["CONN_MAX_AGE"] = 0
    server = AsgiServer(channel_prefix=prefix)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        # Django renders the page of a 404 or 403 under ASGI in a thread of the loop's
        # executor (`response_for_exception`, not thread-sensitive), where no request's end
        # closes the connection it opened: it outlives the test and blocks the test
        # database's teardown until the stopped loop's threads are collected.
        gc.collect()
        database["CONN_MAX_AGE"] = kept
