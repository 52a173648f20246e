"""The event hub against a real Redis: one subscription per process, frames to the right
members only, and a resync after the subscription was lost."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from django.test import override_settings

from composer import fanout


class Recorder:
    """A member that records what it is sent."""

    def __init__(self, *, fail: bool = False) -> None:
        self.frames: list[tuple[int, int | None, str]] = []
        self.resyncs = 0
        self.fail = fail

    async def deliver(self, event_id: int, tenant_id: int | None, text: str) -> None:
        if self.fail:
            raise RuntimeError("this connection is broken")
        self.frames.append((event_id, tenant_id, text))

    async def resync(self) -> None:
        self.resyncs += 1


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def publish(group: str, event_id: int, tenant_id: int | None, text: str) -> None:
    assert await asyncio.to_thread(fanout.publish, group, event_id, tenant_id, text)


def in_thread(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """asyncio.run in a thread of its own: the main thread may already run a loop (the
    browser tests' Playwright keeps one)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, main()).result()


PREFIX = f"composer-test-fanout-{uuid.uuid4().hex[:8]}"


def run(redis_url: str, scenario: Callable[[fanout.Hub], Awaitable[None]]) -> None:
    """Run `scenario` with a hub on `redis_url` (named by the channel layer's settings)."""

    async def main() -> None:
        hub = fanout.get_hub()
        assert hub is not None
        try:
            await scenario(hub)
        finally:
            await hub.close()

    layers = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [redis_url], "prefix": PREFIX},
        }
    }
    with override_settings(CHANNEL_LAYERS=layers):
        in_thread(main)


def test_without_a_redis_layer_there_is_no_hub_and_publishing_declines() -> None:
    layers = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with override_settings(CHANNEL_LAYERS=layers):
        assert fanout.events_redis() is None
        assert fanout.publish("operators", 1, None, "{}") is False

        async def main() -> None:
            assert fanout.get_hub() is None

        in_thread(main)


def test_frames_round_trip() -> None:
    text = '{"a": "x\\ny"}'
    assert fanout.frame_parse(fanout.frame_build(12, 3, text)) == (12, 3, text)
    assert fanout.frame_parse(fanout.frame_build(13, None, "{}")) == (13, None, "{}")
    with pytest.raises(ValueError):
        fanout.frame_parse(b"no header")


def test_members_hear_only_the_groups_they_joined(redis_url: str) -> None:
    ops, acme, globex = Recorder(), Recorder(), Recorder()

    async def scenario(hub: fanout.Hub) -> None:
        await hub.join("operators", ops)
        await hub.join("tenant-1", acme)
        await hub.join("tenant-2", globex)
        await eventually(lambda: hub._pubsub is not None and hub._pubsub.subscribed)
        await asyncio.sleep(0.1)
        await publish("tenant-1", 5, 1, '{"id": 5}')
        await publish("operators", 6, None, '{"id": 6}')
        await eventually(lambda: len(acme.frames) == 1 and len(ops.frames) == 1)
        await asyncio.sleep(0.1)

    run(redis_url, scenario)
    assert acme.frames == [(5, 1, '{"id": 5}')]
    assert ops.frames == [(6, None, '{"id": 6}')]
    assert globex.frames == []


def test_a_broken_member_does_not_stop_the_others(redis_url: str) -> None:
    broken, fine = Recorder(fail=True), Recorder()

    async def scenario(hub: fanout.Hub) -> None:
        await hub.join("operators", broken)
        await hub.join("operators", fine)
        await asyncio.sleep(0.2)
        await publish("operators", 7, None, "{}")
        await eventually(lambda: len(fine.frames) == 1)

    run(redis_url, scenario)


def test_leaving_the_last_member_unsubscribes(redis_url: str) -> None:
    member = Recorder()

    async def scenario(hub: fanout.Hub) -> None:
        await hub.join("job-9", member)
        await asyncio.sleep(0.2)
        await hub.leave_all(member)
        assert "job-9" not in hub.groups
        await asyncio.sleep(0.2)
        client = redis.Redis.from_url(redis_url)
        # redis-py types a reply as `Awaitable | Any`, for its sync and async clients alike.
        assert client.pubsub_numsub(f"{PREFIX}:job-9")[0][1] == 0  # type: ignore[index]
        await publish("job-9", 8, None, "{}")

    run(redis_url, scenario)
    assert member.frames == []


def test_a_lost_subscription_comes_back_and_asks_members_to_resync(redis_url: str) -> None:
    member = Recorder()

    async def scenario(hub: fanout.Hub) -> None:
        await hub.join("operators", member)
        await asyncio.sleep(0.3)
        # Drop the hub's connection, as a Redis restart would (only ours: the Redis may be
        # shared with other runs).
        client = redis.Redis.from_url(redis_url)
        clients = client.client_list()  # a list: redis-py types it `Awaitable | Any`, as above
        ours = [c for c in clients if c.get("name") == hub.client_name]  # type: ignore[union-attr]
        assert ours
        for connection in ours:
            client.client_kill_filter(_id=connection["id"])
        await eventually(lambda: member.resyncs >= 1, timeout=10)
        await asyncio.sleep(0.3)
        await publish("operators", 9, None, '{"id": 9}')
        await eventually(lambda: member.frames == [(9, None, '{"id": 9}')], timeout=10)

    run(redis_url, scenario)
    assert member.resyncs >= 1
