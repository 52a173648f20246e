"""Driving `/ws/events/` in tests: the real ASGI application through WebsocketCommunicator.

Tests are plain (transactional) functions that `run()` an async scenario; inside it,
database work goes through `db(...)` (the ORM is synchronous). The channel layer is
whatever settings say: the websocket tests point it at a real Redis
(tests/composer/test_consumers.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

PATH = "/ws/events/"
ORIGIN = b"http://testserver"


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async scenario from a synchronous test, in a thread of its own.

    Its own thread, because the main thread may already have an event loop running
    (Playwright's sync API keeps one once a browser test has run), and `async_to_sync`
    refuses to start a second one there. The scenario's ORM calls run in that thread too,
    on their own connection: the websocket tests are transactional, so they see the
    fixtures' rows. The connection is closed at the end, so none is left open.
    """

    def in_thread() -> None:
        try:
            async_to_sync(scenario)()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(in_thread).result()


def db(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """`await db(fn)(*args)`: run a synchronous (ORM) function from the scenario."""
    return database_sync_to_async(fn)


def session_cookie(user: Any) -> bytes:
    """The `Cookie` header of a logged-in browser session of `user` (a real session row)."""
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


def communicator(
    *,
    cookie: bytes | None = None,
    origin: bytes | None = ORIGIN,
    headers: Iterable[tuple[bytes, bytes]] = (),
    path: str = PATH,
) -> WebsocketCommunicator:
    from composer.asgi import application

    all_headers = list(headers)
    if cookie is not None:
        all_headers.append((b"cookie", cookie))
    if origin is not None:
        all_headers.append((b"origin", origin))
    return WebsocketCommunicator(application, path, headers=all_headers)


async def receive(ws: WebsocketCommunicator, timeout: float = 3.0) -> dict[str, Any]:
    """The next message that is not a heartbeat."""
    while True:
        message = await ws.receive_json_from(timeout=timeout)
        if message.get("type") != "heartbeat":
            return message


async def receive_events(ws: WebsocketCommunicator, count: int, timeout: float = 3.0) -> list[Any]:
    """The next `count` event messages (anything else in between fails the test)."""
    got = []
    for _ in range(count):
        message = await receive(ws, timeout)
        assert message["type"] == "event", message
        got.append(message)
    return got


async def quiet(ws: WebsocketCommunicator, timeout: float = 0.5) -> bool:
    """True when nothing but heartbeats arrives for `timeout` seconds (else it fails).

    Not `receive_json_from` with a timeout: on a timeout the communicator cancels the
    application, and the socket would be dead for the rest of the test.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if await ws.receive_nothing(timeout=min(0.05, max(deadline - loop.time(), 0.01))):
            continue
        message = await ws.receive_json_from()
        if message.get("type") != "heartbeat":
            raise AssertionError(f"expected nothing, got {message}")
    return True


async def open_as(cookie: bytes, **kwargs: Any) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    """A connected socket with a session cookie, and its hello."""
    ws = communicator(cookie=cookie, **kwargs)
    connected, _ = await ws.connect(timeout=5)
    assert connected
    hello = await receive(ws)
    assert hello["type"] == "hello", hello
    return ws, hello


async def send(ws: WebsocketCommunicator, message: Any) -> dict[str, Any]:
    """Send a client message and return the answer."""
    await ws.send_json_to(message)
    return await receive(ws)


def use_layer(settings: Any, url: str) -> str:
    """Point the channel layer (and with it the event hub and the published ledger) at the
    Redis at `url`, under a prefix of its own so that tests never hear each other; returns
    the prefix."""
    prefix = f"composer-test-{uuid.uuid4().hex[:10]}"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [url], "prefix": prefix},
        }
    }
    return prefix
