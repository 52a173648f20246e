"""Fan-out of live events to websocket connections: one Redis subscription per web process.

Why not Channels' `group_send` for events: with 1,000 connected browsers, the default
`RedisChannelLayer` sends one Redis message per member of a group (and ran out of
connections), and the pub/sub layer, though it publishes once, still wakes every
consumer's own receive loop to decode and dispatch its copy. Events are the one message
that goes to many connections at once, so they take a shorter road:

* the publisher (a web process or a Celery worker, after commit) PUBLISHes one Redis
  message per group (`operators`, `tenant-7`, `job-12`...), already encoded as the exact
  text frame the browsers receive;
* each web process holds one `Hub` per event loop with one Redis pub/sub connection,
  subscribed to the groups that have at least one local connection, and hands each frame
  to the local members of that group — no decoding, no per-connection queue.

A frame travels as `"<event id> <tenant id or ->\\n<text>"`, so a member can re-check the
tenant (STYLE §7: every handler re-checks) and de-duplicate without parsing JSON.

Nothing is lost when Redis drops: a publish that fails leaves the event unpublished in the
database for the outbox sweep (`composer.events`), and when the hub's subscription comes
back after a disconnect it asks every member to `resync()` — to replay from the database
what it may have missed. Members de-duplicate by event id.

Channel names carry `COMPOSER_EVENTS_CHANNEL_PREFIX`: Redis pub/sub channels are shared by
every database number of a server, so two deployments (or two test runs) on one Redis must
not hear each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis
from django.conf import settings

logger = logging.getLogger(__name__)

__all__ = ["Hub", "Member", "frame_parse", "get_hub", "publish"]

_RECONNECT_MAX_S = 5.0


class Member(Protocol):
    """A local connection that hears the groups it joined."""

    async def deliver(self, event_id: int, tenant_id: int | None, text: str) -> None:
        """Send one event frame to the connection (de-duplicating by `event_id`)."""
        ...

    async def resync(self) -> None:
        """The subscription was lost for a moment: replay what may have been missed."""
        ...


def channel_name(group: str) -> str:
    return f"{settings.COMPOSER_EVENTS_CHANNEL_PREFIX}:{group}"


def frame_build(event_id: int, tenant_id: int | None, text: str) -> str:
    return f"{event_id} {tenant_id if tenant_id is not None else '-'}\n{text}"


def frame_parse(raw: bytes | str) -> tuple[int, int | None, str]:
    """(event id, tenant id or None, text) of a published frame; ValueError when malformed."""
    data = raw.decode() if isinstance(raw, bytes) else raw
    header, text = data.split("\n", 1)
    event_part, tenant_part = header.split(" ", 1)
    return int(event_part), (None if tenant_part == "-" else int(tenant_part)), text


# --- publishing (sync: called after commit by web processes and workers) -----------------

_client: redis.Redis | None = None
_client_url: str | None = None


def _sync_client() -> redis.Redis:
    """One client (with its connection pool) per process, rebuilt if the URL changes."""
    global _client, _client_url
    url = settings.REDIS_URL
    if _client is None or _client_url != url:
        _client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        _client_url = url
    return _client


def publish(group: str, event_id: int, tenant_id: int | None, text: str) -> int:
    """PUBLISH one frame to `group`; returns how many web processes heard it.

    Raises redis.RedisError when Redis is unreachable: the caller leaves the event
    unpublished so that the outbox sweep sends it later.
    """
    return int(_sync_client().publish(channel_name(group), frame_build(event_id, tenant_id, text)))


# --- receiving (async: one hub per event loop of a web process) --------------------------


class Hub:
    """Local members by group, one Redis subscription for all of them."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.groups: dict[str, set[Member]] = {}
        self._redis: aioredis.Redis | None = None
        self._pubsub: Any = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._lost = False
        self._watched: Any = None
        self.reconnects = 0
        # Named, so that `CLIENT LIST` shows which web process holds which subscription.
        self.client_name = f"composer-events-{os.getpid()}-{id(self):x}"

    def _channel(self, group: str) -> str:
        return f"{self.prefix}:{group}"

    async def join(self, group: str, member: Member) -> None:
        """Add `member` to `group`, subscribing this process when it is the first one."""
        members = self.groups.setdefault(group, set())
        first = not members
        members.add(member)
        if first:
            async with self._lock:
                await self._ensure_pubsub()
                with contextlib.suppress(redis.RedisError, OSError):
                    # When Redis is down the reader re-subscribes every group on reconnect.
                    await self._pubsub.subscribe(self._channel(group))
        self._ensure_reader()

    async def leave(self, group: str, member: Member) -> None:
        members = self.groups.get(group)
        if not members:
            return
        members.discard(member)
        if not members:
            del self.groups[group]
            async with self._lock:
                if self._pubsub is not None:
                    with contextlib.suppress(redis.RedisError, OSError):
                        await self._pubsub.unsubscribe(self._channel(group))

    async def leave_all(self, member: Member) -> None:
        for group in [g for g, members in self.groups.items() if member in members]:
            await self.leave(group, member)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.aclose()
        self._pubsub = self._redis = None

    async def _ensure_pubsub(self) -> None:
        if self._pubsub is None:
            self._redis = aioredis.Redis.from_url(
                self.url, socket_connect_timeout=2, client_name=self.client_name
            )
            self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            self._watched = None

    def _watch_connection(self) -> None:
        """Hear every later (re)connect of the subscription's connection.

        redis-py reconnects a pub/sub connection inside `get_message` and re-subscribes by
        itself, so a reconnect need not surface as an exception here; the callback marks
        the subscription as having been lost, and the reader then asks members to resync.
        """
        connection = getattr(self._pubsub, "connection", None)
        if connection is not None and connection is not self._watched:
            connection.register_connect_callback(self._on_connect)
            self._watched = connection

    async def _on_connect(self, connection: Any) -> None:
        self._lost = True

    def _ensure_reader(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        """Read frames forever; on a lost connection, back off, re-subscribe and resync."""
        delay = 0.2
        while True:
            try:
                if self._pubsub is None or not self._pubsub.subscribed:
                    await self._resubscribe()
                self._watch_connection()
                message = await self._pubsub.get_message(timeout=1.0)
                if self._lost:
                    # get_message reconnected (redis-py re-subscribes by itself): whatever
                    # was published meanwhile went to nobody here.
                    self._lost = False
                    self.reconnects += 1
                    await self._resync_all()
                delay = 0.2
                if message is None or message.get("type") != "message":
                    continue
                await self._dispatch(message["channel"], message["data"])
            except asyncio.CancelledError:
                raise
            except (redis.RedisError, OSError) as exc:
                self._lost = True
                logger.warning("event hub lost Redis (%s); retrying in %.1f s", exc, delay)
                await asyncio.sleep(delay * (0.5 + random.random()))
                delay = min(_RECONNECT_MAX_S, delay * 2)
                with contextlib.suppress(Exception):
                    await self._reset()
            except Exception:  # a member's bug must not stop delivery to everyone else
                logger.exception("event hub dispatch failed")

    async def _reset(self) -> None:
        async with self._lock:
            if self._pubsub is not None:
                with contextlib.suppress(Exception):
                    await self._pubsub.aclose()
            if self._redis is not None:
                with contextlib.suppress(Exception):
                    await self._redis.aclose()
            self._pubsub = self._redis = None

    async def _resubscribe(self) -> None:
        async with self._lock:
            await self._ensure_pubsub()
            channels = [self._channel(group) for group in self.groups]
            if channels:
                await self._pubsub.subscribe(*channels)
        if not channels:
            await asyncio.sleep(0.1)
            return
        if self._lost:
            self._lost = False
            self.reconnects += 1
            await self._resync_all()

    async def _resync_all(self) -> None:
        members = {member for group in self.groups.values() for member in group}
        logger.info("event hub reconnected; %d connections replay what they missed", len(members))
        for member in members:
            with contextlib.suppress(Exception):
                await member.resync()

    async def _dispatch(self, channel: bytes | str, data: bytes | str) -> None:
        name = channel.decode() if isinstance(channel, bytes) else channel
        group = name[len(self.prefix) + 1 :]
        members = self.groups.get(group)
        if not members:
            return
        try:
            event_id, tenant_id, text = frame_parse(data)
        except ValueError:
            logger.warning("event hub dropped a malformed frame on %s", name)
            return
        results = await asyncio.gather(
            *(member.deliver(event_id, tenant_id, text) for member in list(members)),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, asyncio.CancelledError):
                logger.warning("event delivery to one connection failed: %r", result)


_hubs: dict[int, Hub] = {}


def get_hub() -> Hub:
    """This event loop's hub (a web process has one loop; tests may run several)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(id(loop))
    if hub is None or hub.url != settings.REDIS_URL:
        hub = Hub(settings.REDIS_URL, settings.COMPOSER_EVENTS_CHANNEL_PREFIX)
        _hubs[id(loop)] = hub
    return hub
