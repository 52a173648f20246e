"""The live events' series: websockets connected (up on connect, down on disconnect), replay
requests, and events published after commit."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from tests.support.websocket import communicator, open_as, run, send, session_cookie, use_layer

pytestmark = pytest.mark.django_db(transaction=True)


def value(name: str, **labels: str) -> float:
    """This process's sample `name` (0 before its first increment)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_socket_counts_while_open_and_a_resume_counts_a_replay(
    redis_url: str, settings: Any, alice: Any
) -> None:
    use_layer(settings, redis_url)
    cookie = session_cookie(alice)
    before = value("composer_websockets_connected")
    replays = value("composer_event_replay_requests_total")
    seen: list[float] = []

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        seen.append(value("composer_websockets_connected"))
        resumed = await send(ws, {"action": "resume", "last_event_id": 0})
        assert resumed["type"] == "resumed", resumed
        await ws.disconnect()
        refused = communicator()  # anonymous: refused, never counted
        await refused.connect(timeout=5)
        seen.append(value("composer_websockets_connected"))
        await refused.disconnect()

    run(scenario)
    assert seen == [before + 1, before]
    assert value("composer_websockets_connected") == before
    assert value("composer_event_replay_requests_total") == replays + 1


def test_an_event_published_after_commit_is_counted(
    redis_url: str, settings: Any, acme: Any
) -> None:
    from composer.choices import CompositionState
    from composer.models import Composition
    from composer.states import composition_transition

    use_layer(settings, redis_url)
    before = value("composer_events_published_total", path="after_commit")
    box = Composition.objects.create(tenant=acme, name="counted", spec={})
    composition_transition(box, CompositionState.PLACING, reason="Placing")
    assert value("composer_events_published_total", path="after_commit") == before + 1
