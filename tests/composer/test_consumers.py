"""`/ws/events/` end to end: the real ASGI app, the Redis pub/sub layer, the database.

The layer is Redis pub/sub on REDIS_URL (CI) or on an embedded redis-server, with a
prefix of the test's own, so that parallel runs on one Redis never hear each other.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import redis

from composer import events
from composer.choices import CompositionState, EventType, JobKind
from composer.consumers import replay, stream
from composer.consumers.frames import MAX_MESSAGE_CHARS
from composer.events import event_record, outbox
from composer.models import Composition, Event, Job
from composer.services.api_tokens import api_token_issue
from composer.states import composition_transition
from tests.factories.composer import MembershipFactory, UserFactory
from tests.support.websocket import (
    communicator,
    db,
    open_as,
    quiet,
    receive,
    receive_events,
    run,
    send,
    session_cookie,
    use_layer,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def layer(redis_url: str, settings: Any) -> str:
    """The Redis pub/sub layer for this test; returns its prefix."""
    return use_layer(settings, redis_url)


@pytest.fixture
def acme_box(acme: Any) -> Composition:
    return Composition.objects.create(tenant=acme, name="acme-train", spec={})


@pytest.fixture
def globex_box(globex: Any) -> Composition:
    return Composition.objects.create(tenant=globex, name="globex-infer", spec={})


def place(composition: Composition) -> None:
    composition_transition(composition, CompositionState.PLACING, reason="Placing")


def alert(*boxes: Composition) -> Event:
    """An alert whose blast radius is `boxes`, heard by their tenants."""
    payload = {
        "alert": {"id": 1, "severity": "critical", "state": "open", "message": "leaf-a down"},
        "blast_radius": {
            "devices": 4,
            "hosts": 1,
            "compositions": [
                {"id": b.pk, "name": b.name, "tenant_id": b.tenant_id, "state": b.state}
                for b in boxes
            ],
            "tenants": sorted({b.tenant_id for b in boxes}),
        },
    }
    return event_record(
        EventType.FABRIC_ALERT, payload, tenant_ids={box.tenant_id for box in boxes}
    )


# --- who may connect ----------------------------------------------------------------------------


def test_anonymous_is_refused_with_4401() -> None:
    async def scenario() -> None:
        ws = communicator()
        connected, _ = await ws.connect(timeout=5)
        assert connected  # accepted so that the client can read why, then closed
        error = await ws.receive_json_from(timeout=3)
        assert error["type"] == "error" and error["field"] is None
        assert await ws.receive_output(timeout=3) == {"type": "websocket.close", "code": 4401}
        await ws.disconnect()

    run(scenario)


def test_hello_says_who_and_the_newest_event(alice: Any, acme: Any, acme_box: Composition) -> None:
    place(acme_box)
    newest = Event.objects.latest("id").pk
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, hello = await open_as(cookie)
        assert hello["user"] == {"id": alice.pk, "username": "alice"}
        assert hello["operator"] is False
        assert hello["tenant_ids"] == [acme.pk]
        assert hello["newest_event_id"] == newest
        await ws.disconnect()

    run(scenario)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (b"http://testserver", True),
        (b"https://testserver", True),
        (b"http://evil.example", False),
        (b"null", False),
        (None, False),  # a session without an Origin is no browser we trust
    ],
)
def test_a_session_socket_must_come_from_an_allowed_origin(
    origin: bytes | None, allowed: bool, alice: Any, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws = communicator(cookie=cookie, origin=origin)
        connected, _ = await ws.connect(timeout=5)
        assert connected is allowed
        if connected:
            assert (await receive(ws))["type"] == "hello"
        await ws.disconnect()

    run(scenario)


@pytest.mark.parametrize("how", ["header", "query"])
def test_an_api_client_authenticates_with_its_token(how: str, alice: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    key = api_token_issue(user=alice, remote_addr=None).key
    headers = [(b"authorization", f"Token {key}".encode())] if how == "header" else []
    path = "/ws/events/" if how == "header" else f"/ws/events/?token={key}"

    async def scenario() -> None:
        ws = communicator(origin=None, headers=headers, path=path)  # no Origin: not a browser
        connected, _ = await ws.connect(timeout=5)
        assert connected
        hello = await receive(ws)
        assert hello["user"]["username"] == "alice"
        await ws.disconnect()

    run(scenario)


def test_a_revoked_token_s_stream_is_closed_at_the_next_scope_check(
    alice: Any, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.2
    issued = api_token_issue(user=alice, remote_addr=None)
    token, key = issued.token, issued.key

    async def scenario() -> None:
        with mock.patch.object(stream, "SCOPE_REFRESH_S", 0):
            ws = communicator(origin=None, path=f"/ws/events/?token={key}")
            connected, _ = await ws.connect(timeout=5)
            assert connected
            assert (await receive(ws))["type"] == "hello"
            await db(token.delete)()
            while True:
                output = await ws.receive_output(timeout=3)
                if output["type"] == "websocket.close":
                    break
            assert output["code"] == 4401
            await ws.disconnect()

    run(scenario)


@pytest.mark.parametrize("key", ["0" * 40, "x" * 300, "bad\x00key"])
def test_a_bad_token_is_refused_even_with_a_good_cookie(key: str, alice: Any) -> None:
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws = communicator(cookie=cookie, headers=[(b"authorization", f"Token {key}".encode())])
        connected, _ = await ws.connect(timeout=5)
        assert connected
        assert (await ws.receive_json_from(timeout=3))["type"] == "error"
        assert (await ws.receive_output(timeout=3))["code"] == 4401
        await ws.disconnect()

    run(scenario)


def test_an_inactive_users_token_is_refused(alice: Any) -> None:
    key = api_token_issue(user=alice, remote_addr=None).key
    alice.is_active = False
    alice.save()

    async def scenario() -> None:
        ws = communicator(origin=None, path=f"/ws/events/?token={key}")
        await ws.connect(timeout=5)
        assert (await ws.receive_json_from(timeout=3))["type"] == "error"
        assert (await ws.receive_output(timeout=3))["code"] == 4401
        await ws.disconnect()

    run(scenario)


# --- who hears what -----------------------------------------------------------------------------


def test_carol_never_receives_acme_events(
    admin_user: Any, alice: Any, carol: Any, acme_box: Composition, globex_box: Composition
) -> None:
    cookies = {u.username: session_cookie(u) for u in (admin_user, alice, carol)}

    async def scenario() -> None:
        op, _ = await open_as(cookies["admin"])
        a, _ = await open_as(cookies["alice"])
        c, _ = await open_as(cookies["carol"])

        await db(place)(acme_box)
        await db(alert)(acme_box)
        state, only_acme = await receive_events(a, 2)
        assert state["event_type"] == "composition.state"
        assert state["payload"]["to"] == "placing"
        assert only_acme["event_type"] == "fabric.alert"
        assert [e["event_type"] for e in await receive_events(op, 2)] == [
            "composition.state",
            "fabric.alert",
        ]
        assert await quiet(c)

        # An alert that hurts both: each tenant hears it, and only of its own composition.
        both = await db(alert)(acme_box, globex_box)
        (for_carol,) = await receive_events(c, 1)
        (for_alice,) = await receive_events(a, 1)
        (for_operator,) = await receive_events(op, 1)
        assert for_carol["id"] == for_alice["id"] == for_operator["id"] == both.pk
        radius = for_carol["payload"]["blast_radius"]
        assert [x["name"] for x in radius["compositions"]] == ["globex-infer"]
        assert "tenants" not in radius
        assert "acme" not in str(for_carol)
        assert [x["name"] for x in for_alice["payload"]["blast_radius"]["compositions"]] == [
            "acme-train"
        ]
        assert len(for_operator["payload"]["blast_radius"]["compositions"]) == 2
        assert for_operator["payload"]["blast_radius"]["tenants"]
        assert await quiet(c, 0.3)
        for ws in (op, a, c):
            await ws.disconnect()

    run(scenario)


def test_a_member_of_two_tenants_hears_an_alert_once_with_both_parts(
    acme: Any, globex: Any, acme_box: Composition, globex_box: Composition
) -> None:
    dave = UserFactory(username="dave")
    MembershipFactory(user=dave, tenant=acme)
    MembershipFactory(user=dave, tenant=globex)
    cookie = session_cookie(dave)

    async def scenario() -> None:
        ws, hello = await open_as(cookie)
        assert hello["tenant_ids"] == sorted([acme.pk, globex.pk])
        await db(alert)(acme_box, globex_box)
        (event,) = await receive_events(ws, 1)
        assert len(event["payload"]["blast_radius"]["compositions"]) == 2
        assert await quiet(ws, 0.3)
        await ws.disconnect()

    run(scenario)


def test_a_tenantless_jobs_progress_is_for_operators_only(admin_user: Any, alice: Any) -> None:
    cookies = (session_cookie(admin_user), session_cookie(alice))

    async def scenario() -> None:
        op, _ = await open_as(cookies[0])
        a, _ = await open_as(cookies[1])
        job = await db(Job.objects.create)(kind=JobKind.INVENTORY_SYNC)
        await db(events.job_progress_record)(job)
        (event,) = await receive_events(op, 1)
        assert event["job_id"] == job.pk and event["payload"]["tenant_id"] is None
        assert await quiet(a)
        for ws in (op, a):
            await ws.disconnect()

    run(scenario)


# --- subscriptions ------------------------------------------------------------------------------


def test_a_job_subscription_needs_permission(
    admin_user: Any, alice: Any, carol: Any, acme: Any
) -> None:
    acme_job = Job.objects.create(kind=JobKind.COMPOSE, tenant=acme)
    fabric_job = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    cookies = {u.username: session_cookie(u) for u in (admin_user, alice, carol)}

    async def scenario() -> None:
        c, _ = await open_as(cookies["carol"])
        for job in (acme_job, fabric_job):
            answer = await send(c, {"action": "subscribe", "job": job.pk})
            assert answer["type"] == "error" and answer["field"] == "job", answer
        missing = await send(c, {"action": "subscribe", "job": 10**9})
        assert missing["type"] == "error" and missing["field"] == "job"
        assert missing["message"].replace(str(10**9), "N") == answer["message"].replace(
            str(fabric_job.pk), "N"
        ), "an outsider cannot tell 'not yours' from 'no such job'"

        a, _ = await open_as(cookies["alice"])
        assert await send(a, {"action": "subscribe", "job": acme_job.pk}) == {
            "type": "subscribed",
            "job": acme_job.pk,
        }
        assert (await send(a, {"action": "subscribe", "job": fabric_job.pk}))["type"] == "error"
        op, _ = await open_as(cookies["admin"])
        assert (await send(op, {"action": "subscribe", "job": fabric_job.pk}))["type"] == (
            "subscribed"
        )

        await db(events.job_progress_record)(acme_job)
        (event,) = await receive_events(a, 1)  # once, though heard on two groups
        assert event["job_id"] == acme_job.pk
        assert await quiet(a, 0.3)
        assert await quiet(c, 0.1)
        assert await send(a, {"action": "unsubscribe", "job": acme_job.pk}) == {
            "type": "unsubscribed",
            "job": acme_job.pk,
        }
        for ws in (a, c, op):
            await ws.disconnect()

    run(scenario)


def test_a_composition_subscription_needs_permission(
    alice: Any, carol: Any, acme_box: Composition
) -> None:
    cookies = (session_cookie(alice), session_cookie(carol))

    async def scenario() -> None:
        c, _ = await open_as(cookies[1])
        answer = await send(c, {"action": "subscribe", "composition": acme_box.pk})
        assert (answer["type"], answer["field"]) == ("error", "composition")
        a, _ = await open_as(cookies[0])
        answer = await send(a, {"action": "subscribe", "composition": acme_box.pk})
        assert answer == {"type": "subscribed", "composition": acme_box.pk}
        await db(place)(acme_box)
        (event,) = await receive_events(a, 1)
        assert event["composition_id"] == acme_box.pk
        assert await quiet(c, 0.3)
        for ws in (a, c):
            await ws.disconnect()

    run(scenario)


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        ("not json", None),
        ("[1, 2]", None),
        ('{"action": "dance"}', "action"),
        ('{"no_action": 1}', "action"),
        ('{"action": "subscribe"}', None),
        ('{"action": "subscribe", "job": 1, "composition": 2}', None),
        ('{"action": "subscribe", "job": "7"}', "job"),
        ('{"action": "subscribe", "job": true}', "job"),
        ('{"action": "subscribe", "composition": -3}', "composition"),
        ('{"action": "unsubscribe", "composition": 1.5}', "composition"),
        ('{"action": "resume"}', "last_event_id"),
        ('{"action": "resume", "last_event_id": -1}', "last_event_id"),
        ('{"action": "resume", "last_event_id": "9"}', "last_event_id"),
        ('{"action": "resume", "last_event_id": 0, "seen": "all"}', "seen"),
        ('{"action": "resume", "last_event_id": 0, "seen": [1, "2"]}', "seen"),
        ("[" * 30_000 + "]" * 30_000, None),  # under the size limit, deeper than the stack
        ('{"a":' * 5_000 + "1" + "}" * 5_000, None),
        ('{"action": "resume", "last_event_id": 0, "x": "\\u0000"}', "x"),
    ],
)
def test_a_malformed_message_gets_an_error_naming_the_field_and_the_socket_lives_on(
    frame: str, field: str | None, alice: Any
) -> None:
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        await ws.send_to(text_data=frame)
        error = await receive(ws)
        assert error["type"] == "error" and error["field"] == field, error
        assert error["message"]
        await ws.send_to(bytes_data=b"\x00\x01")
        assert (await receive(ws))["type"] == "error"
        answer = await send(ws, {"action": "resume", "last_event_id": 0})
        assert answer["type"] == "resumed"
        await ws.disconnect()

    run(scenario)


@pytest.mark.parametrize("size", [MAX_MESSAGE_CHARS + 1, 10_000_000])
def test_a_message_too_big_is_told_and_closed_with_1009(size: int, alice: Any) -> None:
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        frame = '{"action": "resume", "last_event_id": 0, "pad": "' + "x" * size + '"}'
        await ws.send_to(text_data=frame)
        error = await receive(ws)
        assert error["type"] == "error" and "at most 65,536 characters" in error["message"]
        closing = await ws.receive_output(timeout=3)
        assert (closing["type"], closing["code"]) == ("websocket.close", 1009)
        await ws.disconnect()

    run(scenario)


# --- nothing is lost ----------------------------------------------------------------------------


def test_a_reconnecting_client_receives_exactly_what_it_missed_in_order(
    alice: Any, acme_box: Composition, globex_box: Composition
) -> None:
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        await db(place)(acme_box)
        (seen,) = await receive_events(ws, 1)
        await ws.disconnect()

        # While away: two Acme events and a Globex one.
        job = await db(Job.objects.create)(kind=JobKind.COMPOSE, tenant_id=acme_box.tenant_id)
        missed = [await db(alert)(acme_box), await db(events.job_progress_record)(job)]
        await db(alert)(globex_box)

        ws, hello = await open_as(cookie)
        assert hello["newest_event_id"] == missed[-1].pk
        await ws.send_json_to(
            {"action": "resume", "last_event_id": seen["id"], "seen": [seen["id"]]}
        )
        replayed = await receive_events(ws, 2)
        assert [e["id"] for e in replayed] == [e.pk for e in missed]
        assert all(e["replay"] for e in replayed)
        assert await receive(ws) == {
            "type": "resumed",
            "last_event_id": seen["id"],
            "replayed": 2,
            "newest_event_id": missed[-1].pk,
        }
        # Then live again.
        await db(alert)(acme_box)
        (live,) = await receive_events(ws, 1)
        assert "replay" not in live
        await ws.disconnect()

    run(scenario)


def test_resume_skips_what_this_connection_already_sent(alice: Any, acme_box: Composition) -> None:
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        await db(place)(acme_box)
        await receive_events(ws, 1)
        answer = await send(ws, {"action": "resume", "last_event_id": 0})
        assert answer["type"] == "resumed" and answer["replayed"] == 0
        await ws.disconnect()

    run(scenario)


def test_a_lost_live_message_arrives_with_the_next_heartbeat(
    alice: Any, acme_box: Composition, settings: Any
) -> None:
    settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.3
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        with mock.patch.object(outbox, "publish_many", side_effect=ConnectionError("gone")):
            lost = await db(alert)(acme_box)
        (message,) = await receive_events(ws, 1)
        assert message["id"] == lost.pk and message["replay"]
        beat = await ws.receive_json_from(timeout=3)
        assert beat == {"type": "heartbeat", "newest_event_id": lost.pk, "at": mock.ANY}
        await ws.disconnect()

    run(scenario)


def test_an_idle_connection_s_heartbeats_replay_nothing_from_the_database(
    alice: Any, acme_box: Composition, settings: Any
) -> None:
    """No event newer than the connection's cursor: heartbeats skip the replay query,
    except every FULL_CATCH_UP_EVERY-th one (the safety net)."""
    settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.1
    cookie = session_cookie(alice)

    async def scenario() -> None:
        with (
            mock.patch.object(replay, "NEWEST_TTL_S", 0),
            mock.patch.object(
                replay, "events_to_replay", wraps=replay.events_to_replay
            ) as replay_query,
        ):
            ws, _ = await open_as(cookie)
            for _ in range(stream.FULL_CATCH_UP_EVERY - 1):
                beat = await ws.receive_json_from(timeout=3)
                assert beat["type"] == "heartbeat"
            assert replay_query.call_count == 0
            await ws.receive_json_from(timeout=3)  # the safety-net beat replays
            assert replay_query.call_count == 1
            await ws.disconnect()

    run(scenario)


def test_a_user_deactivated_while_connected_is_closed_at_a_heartbeat(
    alice: Any, settings: Any
) -> None:
    settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.2
    cookie = session_cookie(alice)

    async def scenario() -> None:
        with mock.patch.object(stream, "SCOPE_REFRESH_S", 0):
            ws, _ = await open_as(cookie)
            await db(type(alice).objects.filter(pk=alice.pk).update)(is_active=False)
            while True:
                output = await ws.receive_output(timeout=3)
                if output["type"] == "websocket.close":
                    break
            assert output["code"] == 4401
            await ws.disconnect()

    run(scenario)


def test_without_redis_the_channel_layer_carries_the_events(
    alice: Any, acme_box: Composition, settings: Any
) -> None:
    """The in-memory layer (a run with no Redis at all): consumers join the layer's groups
    and events go through its group_send instead of the Redis hub."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        await db(place)(acme_box)
        (event,) = await receive_events(ws, 1)
        assert event["event_type"] == "composition.state"
        await ws.disconnect()

    run(scenario)


# --- a Redis restart ----------------------------------------------------------------------------


@pytest.fixture
def own_redis() -> Iterator[Any]:
    """A private redis-server this test may stop and start again on the same port."""
    from composer.embedded import free_port, start_redis

    folder = Path(tempfile.mkdtemp(prefix="composer-test-redis-"))
    port = free_port()

    class OwnRedis:
        url = f"redis://127.0.0.1:{port}/0"

        def __init__(self) -> None:
            self.process, _ = start_redis(folder, port=port)

        def stop(self) -> None:
            self.process.terminate()
            self.process.wait(timeout=10)

        def start(self) -> None:
            self.process, _ = start_redis(folder, port=port)

    server = OwnRedis()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_nothing_is_lost_across_a_redis_restart(
    alice: Any, bob: Any, acme: Any, acme_box: Composition, settings: Any, own_redis: Any
) -> None:
    prefix = use_layer(settings, own_redis.url)
    cookies = (session_cookie(alice), session_cookie(bob))
    group_channel = f"{prefix}:tenant-{acme.pk}"

    async def subscribed() -> None:
        client = redis.Redis.from_url(own_redis.url)
        for _ in range(100):
            # redis-py types a reply as `Awaitable | Any`, for sync and async clients alike.
            if client.pubsub_numsub(group_channel)[0][1]:  # type: ignore[index]
                return
            await asyncio.sleep(0.1)
        raise AssertionError("the event hub did not subscribe again after the restart")

    async def scenario() -> None:
        settings.COMPOSER_EVENTS_HEARTBEAT_S = 20
        slow, _ = await open_as(cookies[1])  # bob: no heartbeat during this test
        settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.3
        fast, _ = await open_as(cookies[0])  # alice: catches up every 0.3 s

        own_redis.stop()
        during = await db(alert)(acme_box)  # its publish fails: left for the sweep
        assert (await db(Event.objects.get)(pk=during.pk)).published_at is None
        own_redis.start()

        # Alice's heartbeat finds it in the database.
        (caught,) = await receive_events(fast, 1, timeout=5)
        assert caught["id"] == during.pk and caught["replay"]

        # The hub re-subscribes by itself and has its connections replay what they may
        # have missed: Bob, whose heartbeat is far away, gets it now. The sweep then
        # publishes it, and nobody is sent it twice.
        await subscribed()
        (replayed,) = await receive_events(slow, 1, timeout=5)
        assert replayed["id"] == during.pk
        assert await db(events.events_publish_pending)(older_than_s=0) == 1
        assert await quiet(fast, 0.5)
        assert await quiet(slow, 0.5)

        # And live publishing works again.
        after = await db(alert)(acme_box)
        assert [e["id"] for e in await receive_events(slow, 1)] == [after.pk]
        assert [e["id"] for e in await receive_events(fast, 1)] == [after.pk]
        for ws in (slow, fast):
            await ws.disconnect()

    run(scenario)


def test_a_resume_from_beyond_the_newest_event_counts_from_the_newest(
    alice: Any, acme_box: Composition, settings: Any
) -> None:
    """A tab that remembers ids the database no longer has (restored from a backup)."""
    settings.COMPOSER_EVENTS_HEARTBEAT_S = 0.3
    place(acme_box)
    newest = Event.objects.latest("id").pk
    cookie = session_cookie(alice)

    async def scenario() -> None:
        ws, _ = await open_as(cookie)
        answer = await send(ws, {"action": "resume", "last_event_id": 10**12, "seen": [newest]})
        assert answer == {
            "type": "resumed",
            "last_event_id": newest,  # replayed from here
            "replayed": 0,
            "newest_event_id": newest,
        }
        with mock.patch.object(outbox, "publish_many", side_effect=ConnectionError("gone")):
            lost = await db(alert)(acme_box)
        (caught,) = await receive_events(ws, 1)  # the heartbeat still catches up
        assert caught["id"] == lost.pk
        await ws.disconnect()

    run(scenario)


def test_the_hello_comes_first_even_when_an_event_arrives_while_connecting(
    alice: Any, acme_box: Composition
) -> None:
    """The consumer joins its groups before it reads the newest id for its hello; an event
    published in between was sent before the hello, and a client that (as events.md says)
    waits for the hello first gave up on the connection. The chaos run's websocket
    clients lost thousands of events that way."""
    cookie = session_cookie(alice)
    heard: list[Event] = []
    newest = stream.newest_event_id

    def newest_while_an_event_goes_out(scope: Any) -> int:
        found = newest(scope)
        heard.append(alert(acme_box))  # published now, after the join, before the hello
        time.sleep(0.5)  # long enough for the event hub to hand it to the connection
        return found

    async def scenario() -> None:
        with mock.patch.object(stream, "newest_event_id", newest_while_an_event_goes_out):
            ws, hello = await open_as(cookie)  # asserts that the first frame is the hello
        (event,) = await receive_events(ws, 1)
        assert event["id"] == heard[0].pk > hello["newest_event_id"]
        await ws.disconnect()

    run(scenario)
