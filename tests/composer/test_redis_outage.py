"""A Redis outage (issue 11): with the broker, cache and channel layer gone, every page and
API operation answers without a 5xx, and the work it accepts waits in the database (the
job outbox, the poll requests) until Redis is back.

The test starts a Redis of its own, points this process at it, and kills it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.dispatch import WAITING_FOR_QUEUE, jobs_dispatch
from fabric.models import Alert, Device, Enclosure, FabricManager, Host, Link, Pool, Switch
from fabric.services.sync import inventory_sync
from tests.factories.composer import PASSWORD
from tests.support import websocket as ws
from tests.support.compose import composed
from tests.support.outage import OwnRedis, celery_on, use_redis

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}
SKIPPED = ("admin/", "api/v1/^[", "^api/", "accounts/logout/")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    with OwnRedis.running(tmp_path / "redis") as redis:
        yield redis


def console_paths(ids: dict[str, Any]) -> list[str]:
    """Every URL pattern of the console and API (not the admin), with the ids of `ids`
    (keyed by the path segment before the id) filled in."""
    paths = []

    def walk(resolver: URLResolver, prefix: str) -> None:
        for pattern in resolver.url_patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern, route)
            elif isinstance(pattern, URLPattern) and not route.startswith(SKIPPED):
                paths.append(_concrete(route, ids))

    walk(get_resolver(), "")
    return sorted(set(paths))


def _concrete(route: str, ids: dict[str, Any]) -> str:
    route = route.replace("^", "").replace("$", "")
    parts: list[str] = []
    for segment in route.strip("/").split("/"):
        if segment.startswith("<") or segment.startswith("(?P<"):
            resource = parts[-1] if parts else ""
            segment = str(ids[resource])
        parts.append(segment)
    path = "/" + "/".join(p for p in parts if p)
    return path + "/" if route.endswith("/") and path != "/" else path


def assert_no_5xx(response: Any, what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code} {response.content[:500]!r}"


def test_every_page_and_api_operation_answers_during_a_redis_outage(
    own_redis: OwnRedis,
    settings: Any,
    admin_user: Any,
    alice: Any,
    carol: Any,
    acme: Any,
) -> None:
    from fabric.simulator.faults import fault_inject
    from tests.fabric.simulated_world import simulated_manager

    manager = simulated_manager()
    inventory_sync(manager=manager)
    ready = composed(tenant=acme, user=alice, name="before", spec=ONE_GPU)
    gpu = Device.objects.filter(kind="gpu", state="free").order_by("pk").first()
    assert gpu is not None
    fault_inject(manager=manager, target_type="device", target_id=gpu.name, action="fail")
    from composer.services.health_poll import health_poll_run

    health_poll_run(manager=manager)
    alert = Alert.objects.order_by("pk").first()
    assert alert is not None
    job = Job.objects.order_by("pk").first()
    assert job is not None
    ids = {
        "devices": gpu.pk,
        "hosts": Host.objects.first().pk,
        "enclosures": Enclosure.objects.first().pk,
        "switches": Switch.objects.first().pk,
        "managers": manager.pk,
        "fabric-managers": manager.pk,
        "links": Link.objects.first().pk,
        "racks": 1,
        "power-feeds": 1,
        "failure-domains": 1,
        "alerts": alert.pk,
        "jobs": job.pk,
        "runs": 1,
        "templates": "none",
        "quotas": 1,
        "compositions": ready.pk,
        "pools": getattr(Pool.objects.first(), "slug", "none"),
        # None made: their pages answer 404, which is an answer.
        "routes": 1,
        "notification-routes": 1,
        "notification-deliveries": 1,
        "webhooks": 1,
        "silences": 1,
        "bookings": 1,
        "occurrences": 1,
        "server-shapes": 1,
        "api-tokens": 1,
    }

    with celery_on(own_redis.url):
        use_redis(settings, own_redis.url)
        settings.REDIS_URL = own_redis.url  # what /readyz pings
        own_redis.stop()  # the outage
        started = time.monotonic()

        # The login page and a sign-in through it (sessions live in the database).
        browser = Client()
        assert_no_5xx(browser.get("/accounts/login/"), "login page")
        signed_in = browser.post(
            "/accounts/login/", {"username": "alice", "password": PASSWORD}, follow=False
        )
        assert signed_in.status_code == 302, signed_in.content[:300]

        # Every page and every API GET, as an operator and as two tenants.
        paths = console_paths(ids)
        assert len(paths) > 60
        for user in (admin_user, alice, carol):
            client = Client()
            client.force_login(user)
            for path in paths:
                response = client.get(path)
                if path == "/readyz":  # the readiness probe's 503 is its answer: not ready
                    assert response.status_code == 503 and "redis" in response.json()["failed"]
                    continue
                assert_no_5xx(response, f"GET {path} as {user.username}")

        # The token: its throttle's counters are in the unreachable cache, and fail open.
        api = APIClient()
        token = api.post(
            "/api/v1/auth/token/", {"username": "alice", "password": PASSWORD}, format="json"
        )
        assert token.status_code == 200, token.content
        api.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")

        # Work accepted during the outage: answered as usual, waiting for the task queue.
        composing = api.post(
            "/api/v1/compositions/",
            {"tenant": acme.slug, "name": "during", "spec": ONE_GPU},
            format="json",
        )
        assert composing.status_code == 202, composing.content
        decomposing = api.post(f"/api/v1/compositions/{ready.pk}/decompose/", format="json")
        assert decomposing.status_code == 202, decomposing.content
        operator = APIClient()
        operator.force_authenticate(admin_user)
        syncing = operator.post(f"/api/v1/fabric-managers/{manager.pk}/sync/", format="json")
        assert syncing.status_code == 202, syncing.content
        injected = operator.post(
            "/api/v1/simulator/faults/",
            {
                "manager": manager.pk,
                "target_type": "device",
                "target_id": gpu.name,
                "action": "recover",
            },
            format="json",
        )
        assert injected.status_code == 202, injected.content
        acknowledged = operator.post(f"/api/v1/alerts/{alert.pk}/acknowledge/", format="json")
        assert_no_5xx(acknowledged, "acknowledge")

        # The console's forms that queue work.
        console = Client()
        console.force_login(admin_user)
        for path, data in (
            (f"/managers/{manager.pk}/sync/", {}),
            (
                "/simulator/faults/",
                {
                    "manager": manager.pk,
                    "target_type": "device",
                    "target": gpu.name,
                    "action": "fail",
                },
            ),
            (f"/alerts/{alert.pk}/acknowledge/", {}),
        ):
            assert_no_5xx(console.post(path, data), f"POST {path}")
        # A token from the console: the password limit and the nonce's cache key fail open.
        form = console.get("/account/api-tokens/new/").content.decode()
        nonce = form.split('name="nonce" value="', 1)[1].split('"', 1)[0]
        made = console.post(
            "/account/api-tokens/new/",
            {"name": "", "password": PASSWORD, "expires": "90", "nonce": nonce},
        )
        assert made.status_code == 201, made.content[:300]

        # The live events socket: accepted, and fed from the database until Redis is back.
        cookie = ws.session_cookie(alice)

        async def connect() -> None:
            socket, hello = await ws.open_as(cookie)
            assert hello["tenant_ids"] == [acme.pk]
            await socket.disconnect()

        ws.run(connect)
        elapsed = time.monotonic() - started

        waiting = Job.objects.filter(status=JobStatus.QUEUED)
        assert {j.kind for j in waiting} == {
            JobKind.COMPOSE,
            JobKind.DECOMPOSE,
            JobKind.INVENTORY_SYNC,
        }
        assert {j.message for j in waiting} == {WAITING_FOR_QUEUE}
        assert not Job.objects.filter(status=JobStatus.FAILED).exists()
        assert Composition.objects.get(name="during").state == CompositionState.PLACING
        assert FabricManager.objects.get(pk=manager.pk).poll_requested_at is not None

        # Redis back (empty, on the same port): the dispatch pass sends what waited.
        own_redis.start()
        Job.objects.update(created_at=timezone.now() - timedelta(seconds=10))
        assert jobs_dispatch() == 3
        assert not Job.objects.filter(status=JobStatus.QUEUED, dispatched_at__isnull=True).exists()
    # Each refused publish costs well under a second; nothing hangs on the dead Redis.
    assert elapsed < 120, elapsed
