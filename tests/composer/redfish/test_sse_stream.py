"""The event stream in process (composer.redfish.sse.EventStream) on the real Redis fan-out:
a client too slow for the live events loses none of them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import transaction

from composer.choices import EventType
from composer.events import event_record, scope_for
from composer.redfish import sse
from tests.support.websocket import run, use_layer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def layer(redis_url: str, settings: Any) -> str:
    settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.2
    return use_layer(settings, redis_url)


def _record(count: int) -> list[int]:
    with transaction.atomic():
        return [
            event_record(EventType.JOB_PROGRESS, {"job_id": n, "tenant_id": None}).pk
            for n in range(count)
        ]


def test_a_slow_client_loses_no_event(admin_user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "QUEUE_MAX", 2)
    stream = sse.EventStream(scope_for(admin_user), after=None)

    async def scenario() -> None:
        chunks = stream.__aiter__()
        assert (await anext(chunks)).startswith(b"retry:")
        first = asyncio.ensure_future(anext(chunks))  # the stream now follows, and waits
        await asyncio.sleep(0.3)
        ids = await sync_to_async(_record)(6)  # published after commit: 6 > the queue's 2
        await asyncio.sleep(0.3)
        assert stream.overflowed
        got = [await first]
        while len([c for c in got if c.startswith(b"id:")]) < len(ids):
            got.append(await asyncio.wait_for(anext(chunks), 5))
        sent = [int(c.split(b"\n", 1)[0][3:]) for c in got if c.startswith(b"id:")]
        assert sent == ids  # each once, in order
        await chunks.aclose()

    run(scenario)


def test_a_burst_of_recent_events_is_read_a_page_at_a_time_and_then_followed(
    admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse, "REPLAY_PAGE", 3)
    ids = _record(5)  # all recent: every catch-up looks back at them too
    stream = sse.EventStream(scope_for(admin_user), after=ids[0] - 1)

    async def scenario() -> None:
        chunks = stream.__aiter__()
        got = [await asyncio.wait_for(anext(chunks), 5) for _ in range(len(ids) + 2)]
        assert got[0].startswith(b"retry:")
        assert [int(c.split(b"\n", 1)[0][3:]) for c in got[1:-1]] == ids
        assert got[-1] == b": keep-alive\n\n"  # caught up, and following
        await chunks.aclose()

    run(scenario)
