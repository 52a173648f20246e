"""The EventService's server-sent event stream: Composer's events, as the caller may hear
them, as Redfish Events.

It learns of events the way the websocket does (composer.consumers): it joins the
process's event hub (composer.fanout) in the groups of the caller's scope (`operators`, or
`tenant-<id>` per membership), so a live event arrives already cut for that audience;
and it catches up from the database (`composer.consumers.replay`, the same scoped read
path) when it opens after a `Last-Event-ID`, when the hub lost Redis for a moment, and at
keep-alives when the process has seen a newer event than it sent (and every few
keep-alives whatever happens). Every SSE message's `id:` is the Composer event's id, so a
client that reconnects with `Last-Event-ID` gets everything it missed.

While idle the stream holds no database connection (each look at the database takes one
and gives it back: `database_sync_to_async`), writes a comment line every keep-alive (so
proxies keep the connection and a dead client is noticed), and re-reads the caller's scope
and session once a minute: a session logged out, a user deactivated or a membership
removed ends or narrows the stream. It ends cleanly when the client leaves: the server
cancels it and it leaves its groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from composer.consumers import replay
from composer.events import (
    NOBODY,
    OPERATORS_GROUP,
    Scope,
    event_message_text,
    events_for_scope,
    newest_event_id,
    tenant_group,
)
from composer.fanout import get_hub
from composer.models import Allocation, Composition
from composer.redfish import event_records, sessions
from composer.redfish.paths import resource_block

logger = logging.getLogger(__name__)

CATCH_UP_EVERY = 5  # keep-alives; a replay query at least this often whatever happens
REPLAY_PAGE = 1000  # events read from the database at a time
QUEUE_MAX = 10_000  # live events waiting to be written; beyond, the next catch-up finds them
SCOPE_REFRESH_S = 60.0
RETRY_MS = 3000  # how long a client waits before it reconnects (the SSE `retry:` field)


def sse_message(event_id: int, body: dict[str, Any]) -> bytes:
    """One SSE message: its id line and the Event as one data line."""
    data = json.dumps(body, separators=(",", ":"))
    return f"id: {event_id}\ndata: {data}\n\n".encode()


class EventStream:
    """One client's stream (a `composer.fanout.Member` of the hub's groups)."""

    def __init__(self, heard: Scope, *, after: int | None, session_id: str = "") -> None:
        self.heard = heard
        self.after = after  # the client's Last-Event-ID; None: from now on
        # Resumed: what the client had. Events up to its last id are not sent again, even
        # one that committed late (a catch-up looks back a few seconds for those): the
        # client would see it twice, which is worse than the rare event that committed
        # after a higher id and after the client left.
        self.floor = after or 0
        self.session_id = session_id
        self.keepalive_s = float(settings.COMPOSER_EVENTS_HEARTBEAT_S)
        self.settle_s = float(settings.COMPOSER_EVENTS_SETTLE_S)
        self.queue: asyncio.Queue[tuple[int, int | None, str] | None] = asyncio.Queue(QUEUE_MAX)
        self.sent = replay.SentIds()
        self.cursor = 0
        self.groups: set[str] = set()
        self.overflowed = False  # live events were dropped: catch up before the next one
        self.caught_up = time.monotonic()

    # --- composer.fanout.Member -----------------------------------------------------------

    async def deliver(self, event_id: int, tenant_id: int | None, text: str) -> None:
        """A live event from the hub: queued (never waits), written by the stream."""
        if not self.heard.hears(tenant_id):
            return
        try:
            self.queue.put_nowait((event_id, tenant_id, text))
        except asyncio.QueueFull:  # a slow client: a catch-up finds what is dropped
            self.overflowed = True

    async def resync(self) -> None:
        """The hub lost Redis for a moment: catch up from the database."""
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)

    # --- the stream -----------------------------------------------------------------------

    async def __aiter__(self) -> AsyncGenerator[bytes, None]:
        hub = get_hub()
        try:
            self.groups = (
                {OPERATORS_GROUP}
                if self.heard.operator
                else set(map(tenant_group, self.heard.tenant_ids))
            )
            for group in self.groups:
                if hub is not None:
                    await hub.join(group, self)
            # After joining: anything newer is heard live or found by a catch-up.
            yield f"retry: {RETRY_MS}\n: Composer events\n\n".encode()
            if self.after is None:
                self.cursor = await database_sync_to_async(newest_event_id)(self.heard)
            else:
                self.cursor = self.after
                async for chunk in self._catch_up():
                    yield chunk
            async for chunk in self._follow():
                yield chunk
        finally:
            if hub is not None:
                for group in self.groups:
                    await hub.leave(group, self)

    async def _follow(self) -> AsyncIterator[bytes]:
        checked = time.monotonic()
        while True:
            if time.monotonic() - checked >= SCOPE_REFRESH_S:
                checked = time.monotonic()
                if not await self._refresh():
                    return
            # The safety net, busy or idle: a catch-up at least every CATCH_UP_EVERY
            # keep-alives, and at once when live events were dropped.
            if self.overflowed or time.monotonic() - self.caught_up >= (
                CATCH_UP_EVERY * self.keepalive_s
            ):
                self.overflowed = False
                async for chunk in self._catch_up():
                    yield chunk
            try:
                item = await asyncio.wait_for(
                    self.queue.get(), self.keepalive_s * random.uniform(0.8, 1.2)
                )
            except TimeoutError:
                if await replay.process_newest_event_id() > self.cursor:
                    async for chunk in self._catch_up():
                        yield chunk
                yield b": keep-alive\n\n"
                continue
            if item is None:
                async for chunk in self._catch_up():
                    yield chunk
                continue
            event_id, tenant, text = item
            if event_id in self.sent or not self.heard.hears(tenant):
                continue  # written already; or cut for a tenant the caller has since left
            if not self.heard.operator and len(self.heard.tenant_ids) > 1:
                # A member of several tenants: the cut for all of them, from the database.
                fetched = await database_sync_to_async(replay.event_text)(self.heard, event_id)
                if fetched is None:
                    continue
                text = fetched
            rendered = await self._render(event_id, text)
            if rendered:
                yield rendered

    async def _catch_up(self) -> AsyncIterator[bytes]:
        """Write, from the database, the events after the cursor (and recent ones) not yet
        written, a page at a time, oldest first; the cursor moves past what was read."""
        while True:
            self.sent.forget_before(time.monotonic() - 2 * self.settle_s - self.keepalive_s)
            recent_since = timezone.now() - timedelta(seconds=self.settle_s)
            found, texts, more = await database_sync_to_async(_missed)(
                self.heard, self.cursor, recent_since, set(self.sent)
            )
            for event_id, text in texts:
                rendered = await self._render(event_id, text)
                if rendered:
                    yield rendered
            self.cursor = max([self.cursor, *found])
            self.caught_up = time.monotonic()
            if not more:
                return

    async def _render(self, event_id: int, text: str) -> bytes | None:
        """The SSE message of one websocket frame (None: nothing a Redfish client reads)."""
        self.sent.mark(event_id)
        if event_id <= self.floor:
            return None
        message = json.loads(text)
        composition = event_records.blocks_change(message)
        blocks = await database_sync_to_async(blocks_of)(composition) if composition else []
        body = event_records.redfish_event(message, blocks=blocks)
        return None if body is None else sse_message(event_id, body)

    async def _refresh(self) -> bool:
        """Re-read the caller: False when it may no longer listen (the stream ends)."""
        heard = await database_sync_to_async(scope_now)(self.heard, self.session_id)
        if heard is NOBODY:
            return False
        if heard != self.heard:
            hub = get_hub()
            groups = (
                {OPERATORS_GROUP} if heard.operator else set(map(tenant_group, heard.tenant_ids))
            )
            self.heard = heard
            if hub is not None:
                for group in self.groups - groups:
                    await hub.leave(group, self)
                for group in groups - self.groups:
                    await hub.join(group, self)
            self.groups = groups
        return True


def _missed(
    heard: Scope, after: int, recent_since: Any, skip: set[int]
) -> tuple[list[int], list[tuple[int, str]], bool]:
    """(ids read, [(id, frame)] to write, whether more lie beyond): the scope's events
    after `after` and the recent ones; more than REPLAY_PAGE after `after`: the oldest page
    of those (the caller reads on)."""
    found, texts = replay.events_to_replay(heard, after, recent_since, skip, REPLAY_PAGE)
    ahead = [event_id for event_id in found if event_id > after]
    if len(ahead) <= REPLAY_PAGE:
        return found, texts, False
    page = ahead[:REPLAY_PAGE]
    wanted = [event_id for event_id in page if event_id not in skip]
    texts = []
    for event in events_for_scope(heard).filter(pk__in=wanted):
        payload = heard.payload(event)
        if payload is not None:
            texts.append((event.pk, event_message_text(event, payload=payload, replay=True)))
    return page, texts, True


def blocks_of(composition_id: int) -> list[str]:
    """The resource blocks a composition holds or held: its host's and its devices'."""
    host = Composition.objects.filter(pk=composition_id).values_list("host_id", flat=True).first()
    devices = (
        Allocation.objects.filter(composition_id=composition_id)
        .order_by("device_id")
        .values_list("device__kind", "device_id")
        .distinct()
    )
    found = [resource_block("host", host)] if host else []
    return found + [resource_block(kind, device) for kind, device in devices]


def scope_now(heard: Scope, session_id: str) -> Scope:
    """The caller's scope as the database has it now; NOBODY when its session ended."""
    if session_id and not sessions.session_alive(session_id):
        return NOBODY
    return replay.user_and_scope(heard.user_id)[1]
