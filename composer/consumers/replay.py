"""What the events consumer reads from the database: the events to replay, one event's
text for a scope, the user's scope now, and the newest event id (shared per process)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, TypeGuard

from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db.models import Max

from composer.events import (
    NOBODY,
    Scope,
    event_ids_recent,
    event_message_text,
    events_for_scope,
    scope_for,
)
from composer.models import Event
from composer.services.api_tokens import api_token_held

NEWEST_TTL_S = 1.0  # the process's look at the newest event id is shared for this long


_newest = {"id": 0, "at": -1e9}
_newest_lock: dict[int, asyncio.Lock] = {}


async def process_newest_event_id() -> int:
    """The newest event id of all, read at most once per NEWEST_TTL_S by this process and
    shared by its connections: their heartbeats replay only when something is newer."""
    if time.monotonic() - _newest["at"] < NEWEST_TTL_S:
        return int(_newest["id"])
    lock = _newest_lock.setdefault(id(asyncio.get_running_loop()), asyncio.Lock())
    async with lock:
        if time.monotonic() - _newest["at"] >= NEWEST_TTL_S:
            _newest["id"] = await database_sync_to_async(_newest_of_all)()
            _newest["at"] = time.monotonic()
    return int(_newest["id"])


class SentIds(OrderedDict[int, float]):
    """The event ids a connection (or stream) sent lately, oldest first, with when: a live
    event and a catch-up may both bring one, and it goes out once."""

    MAX = 20000

    def mark(self, event_id: int) -> None:
        self[event_id] = time.monotonic()
        self.move_to_end(event_id)

    def forget_before(self, horizon: float) -> None:
        """Forget ids sent before `horizon` (monotonic), when no catch-up can return them
        again, and the oldest beyond MAX."""
        while self and (next(iter(self.values())) < horizon or len(self) > self.MAX):
            self.popitem(last=False)


def _newest_of_all() -> int:
    return Event.objects.aggregate(newest=Max("id"))["newest"] or 0


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def events_to_replay(
    heard: Scope, after: int, recent_since: Any, skip: set[int], limit: int
) -> tuple[list[int], list[tuple[int, str]]]:
    """(ids found, [(id, text)] to send) for a catch-up: one or two queries.

    Found: visible ids above `after` (at most limit + 1, to tell an overflow), plus the
    recent ones at or below it. Sent: those not in `skip`, cut for the scope, in id order.
    """
    ahead = list(
        events_for_scope(heard).filter(pk__gt=after).values_list("id", flat=True)[: limit + 1]
    )
    if len(ahead) > limit:
        return ahead, []
    recent = event_ids_recent(heard, since=recent_since, limit=limit)
    found = sorted(set(ahead) | set(recent))
    wanted = [event_id for event_id in found if event_id not in skip]
    texts: list[tuple[int, str]] = []
    if wanted:
        for event in events_for_scope(heard).filter(pk__in=wanted):
            payload = heard.payload(event)
            if payload is not None:
                texts.append((event.pk, event_message_text(event, payload=payload, replay=True)))
    return found, texts


def event_text(heard: Scope, event_id: int) -> str | None:
    event = events_for_scope(heard).filter(pk=event_id).first()
    if event is None:
        return None
    payload = heard.payload(event)
    return None if payload is None else event_message_text(event, payload=payload)


def user_and_scope(user_id: int | None, token: str | None = None) -> tuple[Any, Scope]:
    """The user as the database has it now, and its scope: NOBODY when the user is gone or
    inactive, or when the connection came with an API token that has since been revoked."""
    if user_id is None:
        return None, NOBODY
    user = get_user_model().objects.filter(pk=user_id).first()
    if token is not None and not api_token_held(token, user_id):
        return user, NOBODY
    return user, scope_for(user)
