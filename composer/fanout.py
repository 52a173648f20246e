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
tenant (every handler re-checks) and de-duplicate without parsing JSON.

Nothing is lost when Redis drops: a publish that fails leaves the event unpublished in the
database for the outbox sweep (`composer.events`), and when the hub's subscription comes
back after a disconnect it asks every member to `resync()` — to replay from the database
what it may have missed. Members de-duplicate by event id.

The Redis and the channel-name prefix are those of the default channel layer
(CHANNEL_LAYERS; the prefix is `COMPOSER_EVENTS_CHANNEL_PREFIX`): Redis pub/sub channels
are shared by every database number of a server, so two deployments (or two test runs) on
one Redis must not hear each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
import weakref
from collections.abc import Sequence
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis
from django.conf import settings

logger = logging.getLogger(__name__)

__all__ = ["Hub", "Member", "events_redis", "frame_parse", "get_hub", "publish", "publish_many"]

_RECONNECT_MAX_S = 5.0


class Member(Protocol):
    """A local connection that hears the groups it joined."""

    async def deliver(self, event_id: int, tenant_id: int | None, text: str) -> None:
        """Send one event frame to the connection (de-duplicating by `event_id`).

        Called for each member in turn: it must not wait on anything slow (hand off to a
        task instead), or it holds up every other connection of the process.
        """
        ...

    async def resync(self) -> None:
        """The subscription was lost for a moment: replay what may have been missed."""
        ...


def events_redis() -> tuple[str, str] | None:
    """(Redis URL, channel prefix) the events travel on, or None without a Redis layer.

    Read from the default channel layer's settings (CHANNEL_LAYERS: its first host and its
    prefix), so one setting names the Redis of all live traffic, and a test that points the
    layer at its own Redis moves the events with it. The in-memory layer (a test run with
    no Redis at all) has no pub/sub: events then go through the layer's `group_send`.
    """
    if not getattr(settings, "COMPOSER_EVENTS_HUB", True):
        return None  # switched off: events take the channel layer's group_send
    layer = settings.CHANNEL_LAYERS.get("default") or {}
    if "redis" not in str(layer.get("BACKEND", "")).lower():
        return None
    config = layer.get("CONFIG") or {}
    hosts = config.get("hosts") or [settings.REDIS_URL]
    host = hosts[0]
    if isinstance(host, dict):
        host = host.get("address")
    if isinstance(host, list | tuple) and len(host) == 2:
        host = f"redis://{host[0]}:{host[1]}/0"
    if not isinstance(host, str):
        return None
    return host, str(config.get("prefix") or "asgi")


def channel_name(prefix: str, group: str) -> str:
    return f"{prefix}:{group}"


def frame_build(event_id: int, tenant_id: int | None, text: str) -> str:
    return f"{event_id} {tenant_id if tenant_id is not None else '-'}\n{text}"


def frame_parse(raw: bytes | str) -> tuple[int, int | None, str]:
    """(event id, tenant id or None, text) of a published frame; ValueError when malformed."""
    data = raw.decode() if isinstance(raw, bytes) else raw
    header, text = data.split("\n", 1)
    event_part, tenant_part = header.split(" ", 1)
    return int(event_part), (None if tenant_part == "-" else int(tenant_part)), text


# --- publishing (sync: called after commit by web processes and workers) -----------------

_clients: dict[str, redis.Redis] = {}


def _sync_client(url: str) -> redis.Redis:
    """One client (with its connection pool) per process and URL."""
    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(
            url, socket_connect_timeout=1, socket_timeout=2
        )
    return client


def ledger_key(prefix: str) -> str:
    """The sorted set of events published but not yet marked so in the database."""
    return f"{prefix}:published"


def publish_many(
    items: Sequence[tuple[str, int, int | None, str]], *, ledger: Sequence[str] = ()
) -> bool:
    """PUBLISH each (group, event id, tenant id, text) frame, in one round trip.

    The event tokens in `ledger` are added to the published ledger in the same round trip: the
    outbox sweep marks them published in the database later, in one UPDATE for many,
    instead of one UPDATE (and one commit) per event on the path of the change that made
    it. False when no Redis layer is configured (the caller uses the layer instead).
    Raises redis.RedisError when Redis is unreachable: the caller leaves the event
    unpublished, and the outbox sweep sends it later.
    """
    where = events_redis()
    if where is None:
        return False
    url, prefix = where
    pipe = _sync_client(url).pipeline(transaction=False)
    for group, event_id, tenant_id, text in items:
        pipe.publish(channel_name(prefix, group), frame_build(event_id, tenant_id, text))
    if ledger:
        now = time.time()
        pipe.zadd(ledger_key(prefix), dict.fromkeys(ledger, now))
    pipe.execute()
    return True


LEDGER_KEEP_S = 24 * 3600  # an entry no sweep claimed by then is dropped (its event is old)


def ledger_published(tokens: Sequence[str]) -> set[str]:
    """Which event `tokens` the ledger says went out; empty without Redis or when it cannot
    be read (the sweep then sends them again: clients de-duplicate by id)."""
    where = events_redis()
    if where is None or not tokens:
        return set()
    url, prefix = where
    try:
        # ZSCORE in one pipeline rather than ZMSCORE, which needs Redis 6.2.
        pipe = _sync_client(url).pipeline(transaction=False)
        for token in tokens:
            pipe.zscore(ledger_key(prefix), token)
        scores = pipe.execute()
    except redis.RedisError as exc:
        logger.warning("published ledger unreadable (%s); unmarked events go out again", exc)
        return set()
    return {token for token, score in zip(tokens, scores, strict=True) if score is not None}


def ledger_forget(tokens: Sequence[str]) -> None:
    """Drop `tokens` (their events now marked in the database) and entries over a day old."""
    where = events_redis()
    if where is None:
        return
    url, prefix = where
    try:
        pipe = _sync_client(url).pipeline(transaction=False)
        if tokens:
            pipe.zrem(ledger_key(prefix), *tokens)
        pipe.zremrangebyscore(ledger_key(prefix), "-inf", time.time() - LEDGER_KEEP_S)
        pipe.execute()
    except redis.RedisError as exc:  # harmless: the entries only cost a little memory
        logger.warning("published ledger not trimmed: %s", exc)


def publish(group: str, event_id: int, tenant_id: int | None, text: str) -> bool:
    """`publish_many` of one frame."""
    return publish_many([(group, event_id, tenant_id, text)])


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
        return channel_name(self.prefix, group)

    async def join(self, group: str, member: Member) -> None:
        """Add `member` to `group`, subscribing this process when it is the first one."""
        members = self.groups.setdefault(group, set())
        first = not members
        members.add(member)
        if first:
            failed = False
            async with self._lock:
                await self._ensure_pubsub()
                try:
                    await self._pubsub.subscribe(self._channel(group))
                except (redis.RedisError, OSError):
                    failed = True
            if failed:
                # Start the subscription over: the reader re-subscribes every group (this one
                # included) once Redis answers, and has every member replay what it missed.
                self._lost = True
                await self._reset()
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
        await self._reset()

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
        """Drop the subscription and its connection (the reader starts them over)."""
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
        # One after the other, not gathered: a member's deliver() does not wait (it hands
        # off to a task when it must), and a thousand tasks per event cost more than the
        # sends themselves (measured: 60 ms gathered, 35 ms in turn, for 1,000 members).
        for member in list(members):
            try:
                await member.deliver(event_id, tenant_id, text)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one broken connection must not stop the others
                logger.warning("event delivery to one connection failed: %r", exc)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def get_hub() -> Hub | None:
    """This event loop's hub, or None without a Redis layer (see `events_redis`).

    One per loop (a web process has one; tests run several), kept weakly so a finished
    loop's hub goes with it, and replaced when the settings name another Redis.
    """
    where = events_redis()
    if where is None:
        return None
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None or (hub.url, hub.prefix) != where:
        hub = Hub(*where)
        _hubs[loop] = hub
    return hub
