"""The websocket consumer of `/ws/events/` (the protocol is in the package docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone

from composer.consumers import replay
from composer.consumers.frames import Refusal, read_message
from composer.consumers.replay import is_int
from composer.events import (
    NOBODY,
    OPERATORS_GROUP,
    Scope,
    composition_group,
    job_group,
    newest_event_id,
    scope_for,
    tenant_group,
)
from composer.fanout import get_hub
from composer.models import Composition, Job
from composer.monitoring.metrics import EVENT_REPLAYS, WEBSOCKETS_CONNECTED
from composer.wsauth import token_from_scope

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
FULL_CATCH_UP_EVERY = 5  # heartbeats; a replay query at least this often whatever happens
REPLAY_LIMIT = 1000  # more missed than this: "resync" (reload the page), not a flood
MAX_SUBSCRIPTIONS = 200
MAX_SEEN = 1000
SCOPE_REFRESH_S = 60.0
TARGETS: dict[str, tuple[type[Composition] | type[Job], Callable[[int], str]]] = {
    "composition": (Composition, composition_group),
    "job": (Job, job_group),
}


# An alias no settings name: Channels then gives the consumer no channel layer at all.
NO_LAYER = "composer.replay-only"


class EventsConsumer(AsyncJsonWebsocketConsumer):
    """One connection: joins `operators` or its tenants' groups, and what it subscribes to."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels opens a channel of the connection's own on the layer (a Redis
        subscription) before anything else; with Redis away that raised, and the handshake
        failed. The connection is then served without one: accepted, it hears what it missed
        from the database at each heartbeat (and joins its groups once Redis is back)."""
        try:
            await super().__call__(scope, receive, send)
        except Exception as exc:
            if self.channel_layer is None or getattr(self, "channel_name", None):
                raise
            logger.warning(
                "events: channel layer unreachable (%s: %s); serving the connection from "
                "the database",
                type(exc).__name__,
                exc,
            )
            self.channel_layer_alias = NO_LAYER
            await super().__call__(scope, receive, send)

    async def connect(self) -> None:
        self.heard: Scope = NOBODY
        self.groups_joined: set[str] = set()
        self.subscriptions: set[tuple[str, int]] = set()
        self.sent = replay.SentIds()  # event id -> monotonic time sent
        self.cursor = 0  # every event up to here (and not recent) was sent or predates us
        self.lock = asyncio.Lock()  # the heartbeat task and the handlers share the state
        self.heartbeat_task: asyncio.Task[None] | None = None
        self.resync_tasks: set[asyncio.Task[None]] = set()
        self.heartbeat_s = float(settings.COMPOSER_EVENTS_HEARTBEAT_S)
        self.settle_s = float(settings.COMPOSER_EVENTS_SETTLE_S)
        self.scope_checked = time.monotonic()
        await self.accept()
        user = self.user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self._refuse("Sign in (session cookie) or send an API token.")
            return
        self.heard = await database_sync_to_async(scope_for)(user)
        if self.heard is NOBODY:
            await self._refuse("This account is not active.")
            return
        # Under the lock: an event heard between the join and the hello waits for the hello
        # (`deliver` defers while the lock is held), which is the first frame a client gets.
        async with self.lock:
            for group in self._scope_groups(self.heard):
                await self._join(group)
            # After joining: an event newer than this is heard live or found by a replay.
            self.cursor = await database_sync_to_async(newest_event_id)(self.heard)
            await self.send_json(
                {
                    "type": "hello",
                    "user": {"id": user.pk, "username": user.get_username()},
                    "operator": self.heard.operator,
                    "tenant_ids": sorted(self.heard.tenant_ids),
                    "newest_event_id": self.cursor,
                    "heartbeat_s": self.heartbeat_s,
                }
            )
        self.heartbeat_task = asyncio.ensure_future(self._heartbeats())
        self.counted = True  # in composer_websockets_connected until it disconnects
        WEBSOCKETS_CONNECTED.inc()

    async def disconnect(self, code: int) -> None:
        task = getattr(self, "heartbeat_task", None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for group in list(getattr(self, "groups_joined", ())):
            await self._leave(group)
        if getattr(self, "counted", False):
            self.counted = False
            WEBSOCKETS_CONNECTED.dec()

    # --- client messages ----------------------------------------------------------------------

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """Parse a frame; anything malformed gets an error message, never a crash (one too
        big to read also a 1009 close: composer.consumers.frames)."""
        if self.heard is NOBODY:
            return
        content = read_message(text_data)
        if isinstance(content, Refusal):
            await self._error(content.field, content.message)
            if content.close_code is not None:
                await self.close(code=content.close_code)
            return
        try:
            await self.receive_json(content)
        except Exception:  # a bug in one handler must not end the connection
            logger.exception("events consumer failed on a message user_id=%s", self.heard.user_id)
            await self._error(None, "The message could not be handled.")

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict):
            await self._error(None, 'Send a JSON object such as {"action": "resume", ...}.')
            return
        action = content.get("action")
        if action == "resume":
            await self._resume(content)
        elif action == "subscribe":
            await self._subscribe(content)
        elif action == "unsubscribe":
            await self._unsubscribe(content)
        else:
            await self._error(
                "action", 'Unknown action; use "resume", "subscribe" or "unsubscribe".'
            )

    async def _resume(self, content: dict[str, Any]) -> None:
        EVENT_REPLAYS.inc()
        last = content.get("last_event_id")
        if not is_int(last) or last < 0:
            await self._error("last_event_id", "Send the id of the last event you saw (0 or more).")
            return
        seen = content.get("seen", [])
        if not isinstance(seen, list) or len(seen) > MAX_SEEN or not all(map(is_int, seen)):
            await self._error("seen", f"Send a list of at most {MAX_SEEN} event ids, or nothing.")
            return
        async with self.lock:
            if last > self.cursor:
                # Ahead of the database (restored from a backup, or a bogus id): from the
                # newest there is, or later events would never be replayed here.
                newest = await database_sync_to_async(newest_event_id)(self.heard)
                last = min(last, max(newest, self.cursor))
            for event_id in seen:  # the client has them: later catch-ups skip them too
                self._mark_sent(event_id)
            replayed = await self._catch_up(after=last, skip=set())
            if replayed is None:
                return
            await self.send_json(
                {
                    "type": "resumed",
                    "last_event_id": last,
                    "replayed": replayed,
                    "newest_event_id": self.cursor,
                }
            )

    async def _subscribe(self, content: dict[str, Any]) -> None:
        target = await self._target(content)
        if target is None:
            return
        kind, target_id = target
        model, group_of = TARGETS[kind]
        user = self.user
        visible = await database_sync_to_async(
            lambda: model.objects.for_user(user).filter(pk=target_id).exists()
        )()
        if not visible:
            # The same answer for "no such" and "not yours": nothing leaks.
            await self._error(kind, f"There is no {kind} {target_id} that you may see.")
            return
        if target not in self.subscriptions and len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
            await self._error(kind, f"At most {MAX_SUBSCRIPTIONS} subscriptions per connection.")
            return
        self.subscriptions.add(target)
        await self._join(group_of(target_id))
        await self.send_json({"type": "subscribed", kind: target_id})

    async def _unsubscribe(self, content: dict[str, Any]) -> None:
        target = await self._target(content)
        if target is None:
            return
        kind, target_id = target
        if target in self.subscriptions:
            self.subscriptions.discard(target)
            await self._leave(TARGETS[kind][1](target_id))
        await self.send_json({"type": "unsubscribed", kind: target_id})

    async def _target(self, content: dict[str, Any]) -> tuple[str, int] | None:
        """("composition" | "job", id) named by a (un)subscribe message, or None (answered)."""
        named = [kind for kind in TARGETS if kind in content]
        if len(named) != 1:
            await self._error(None, 'Name one target: {"composition": <id>} or {"job": <id>}.')
            return None
        kind = named[0]
        target_id = content[kind]
        if not is_int(target_id) or target_id < 1:
            await self._error(kind, f"{kind.capitalize()} must be a positive integer id.")
            return None
        return kind, target_id

    # --- events from the channel layer --------------------------------------------------------

    async def event_message(self, message: dict[str, Any]) -> None:
        """A live event from the channel layer (`composer.events.LayerMessage`)."""
        event_id, tenant_id, text = message.get("id"), message.get("tenant_id"), message.get("text")
        if is_int(event_id) and (tenant_id is None or is_int(tenant_id)) and isinstance(text, str):
            await self.deliver(event_id, tenant_id, text)

    async def deliver(self, event_id: int, tenant_id: int | None, text: str) -> None:
        """Send one live event: re-check who it was cut for, de-duplicate, send.

        Independent of the transport: the channel layer calls it through `event_message`
        (it is also the `deliver` of composer.fanout's `Member`). The hub calls its
        connections one after the other, so this must not wait: while a catch-up holds the
        lock (it queries the database), the event is sent from a task once it is done.
        """
        if self.lock.locked() or (not self.heard.operator and len(self.heard.tenant_ids) > 1):
            # Busy with a catch-up, or a member of several tenants (whose cut is read from
            # the database): from a task, so that the hub's other connections do not wait.
            task = asyncio.ensure_future(self._deliver(event_id, tenant_id, text))
            self.resync_tasks.add(task)
            task.add_done_callback(self.resync_tasks.discard)
            return
        await self._deliver(event_id, tenant_id, text)

    async def _deliver(self, event_id: int, tenant_id: int | None, text: str) -> None:
        async with self.lock:
            if event_id in self.sent:
                return
            if not self.heard.hears(tenant_id):
                # Defence in depth: the groups should make this impossible.
                if not self.heard.operator:
                    logger.warning(
                        "event %s cut for tenant %s reached user %s; not sent",
                        event_id,
                        tenant_id,
                        self.heard.user_id,
                    )
                return
            if not self.heard.operator and len(self.heard.tenant_ids) > 1:
                # A member of several tenants: the cut for all of them, from the database.
                fetched = await database_sync_to_async(replay.event_text)(self.heard, event_id)
                if fetched is None:
                    return
                text = fetched
            await self.send(text_data=text)
            self._mark_sent(event_id)

    # --- heartbeat and catch-up ---------------------------------------------------------------

    async def _heartbeats(self) -> None:
        """Every heartbeat_s (jittered, so connections spread out): check, replay, beat.

        The replay query runs only when the process has seen an event newer than this
        connection's cursor, and in any case every FULL_CATCH_UP_EVERY heartbeats (the
        safety net): a thousand idle browsers must not cost the database fifty queries a
        second for nothing.
        """
        beats = 0
        while True:
            await asyncio.sleep(self.heartbeat_s * random.uniform(0.8, 1.2))
            beats += 1
            try:
                async with self.lock:
                    if not await self._refresh_scope():
                        await self.close(code=CLOSE_UNAUTHENTICATED)
                        return
                    due = beats % FULL_CATCH_UP_EVERY == 0
                    if (
                        due or await replay.process_newest_event_id() > self.cursor
                    ) and await self._catch_up(after=self.cursor, skip=set()) is None:
                        continue
                    await self.send_json(
                        {
                            "type": "heartbeat",
                            "newest_event_id": self.cursor,
                            "at": timezone.now().isoformat(),
                        }
                    )
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be away for a moment; try next time
                logger.exception("events heartbeat failed user_id=%s", self.heard.user_id)

    async def _catch_up(self, *, after: int, skip: set[int]) -> int | None:
        """Send, from the database, the events after `after` (and recent ones) not yet sent.

        Returns how many were sent, or None when there were too many and a `resync` went
        instead. Advances the cursor past everything it looked at. Call under the lock.
        """
        self._forget_old()
        skip = skip | set(self.sent)
        recent_since = timezone.now() - timedelta(seconds=self.settle_s)
        found, texts = await database_sync_to_async(replay.events_to_replay)(
            self.heard, after, recent_since, skip, REPLAY_LIMIT
        )
        if len(found) > REPLAY_LIMIT:
            newest = await database_sync_to_async(newest_event_id)(self.heard)
            self.cursor = max(self.cursor, newest)
            await self.send_json(
                {
                    "type": "resync",
                    "newest_event_id": self.cursor,
                    "message": "More events were missed than are replayed; reload the state.",
                }
            )
            return None
        for event_id, text in texts:
            await self.send(text_data=text)
            self._mark_sent(event_id)
        self.cursor = max([self.cursor, after, *found])
        return len(texts)

    async def _refresh_scope(self) -> bool:
        """Re-read the user's scope once a minute; False when the user may no longer listen."""
        if time.monotonic() - self.scope_checked < SCOPE_REFRESH_S:
            return True
        self.scope_checked = time.monotonic()
        token = token_from_scope(self.scope) if self.scope.get("auth") == "token" else None
        user, heard = await database_sync_to_async(replay.user_and_scope)(self.heard.user_id, token)
        if heard is NOBODY:
            return False
        self.user = user
        if heard != self.heard:
            old, new = self._scope_groups(self.heard), self._scope_groups(heard)
            self.heard = heard
            for group in old - new:
                await self._leave(group)
            for group in new - old:
                await self._join(group)
            await self._recheck_subscriptions()
        return True

    async def _recheck_subscriptions(self) -> None:
        user = self.user
        for kind, target_id in list(self.subscriptions):
            model, group_of = TARGETS[kind]
            visible = await database_sync_to_async(
                lambda m=model, t=target_id: m.objects.for_user(user).filter(pk=t).exists()
            )()
            if not visible:
                self.subscriptions.discard((kind, target_id))
                await self._leave(group_of(target_id))
                await self._error(kind, f"You may no longer see {kind} {target_id}.")

    # --- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _scope_groups(heard: Scope) -> set[str]:
        if heard.operator:
            return {OPERATORS_GROUP}
        return {tenant_group(tenant) for tenant in heard.tenant_ids}

    async def _join(self, group: str) -> None:
        """Hear `group`: through this process's event hub on Redis (composer.fanout), or
        the channel layer's groups when there is no Redis (the in-memory layer of tests)."""
        self.groups_joined.add(group)
        try:
            hub = get_hub()
            if hub is not None:
                await hub.join(group, self)
            else:
                await self.channel_layer.group_add(group, self.channel_name)
        except Exception as exc:  # Redis away: the heartbeat replays until it is back
            logger.warning("could not join %s (%s); relying on replay", group, exc)

    async def _leave(self, group: str) -> None:
        self.groups_joined.discard(group)
        with contextlib.suppress(Exception):
            hub = get_hub()
            if hub is not None:
                await hub.leave(group, self)
            else:
                await self.channel_layer.group_discard(group, self.channel_name)

    async def resync(self) -> None:
        """The hub lost its subscription for a moment (composer.fanout.Member): replay from
        the database now rather than at the next heartbeat. In a task of its own, so that
        one slow connection does not hold up the hub's others."""
        if self.heard is NOBODY:
            return
        task = asyncio.ensure_future(self._resync())
        self.resync_tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self.resync_tasks.discard)

    async def _resync(self) -> None:
        try:
            async with self.lock:
                await self._catch_up(after=self.cursor, skip=set())
        except Exception:  # the heartbeat tries again
            logger.warning("events resync failed user_id=%s", self.heard.user_id, exc_info=True)

    def _mark_sent(self, event_id: int) -> None:
        self.sent.mark(event_id)

    def _forget_old(self) -> None:
        """Forget ids sent long enough ago that no replay can return them again."""
        self.sent.forget_before(time.monotonic() - 2 * self.settle_s - self.heartbeat_s)

    async def _error(self, field: str | None, message: str) -> None:
        await self.send_json({"type": "error", "field": field, "message": message})

    async def _refuse(self, message: str) -> None:
        await self._error(None, message)
        await self.close(code=CLOSE_UNAUTHENTICATED)
