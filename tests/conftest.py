"""Shared fixtures: the personas, an embedded or real Redis, a real Celery worker, a browser.

Personas (CONTRIBUTING.md): **admin** (operator), **alice** (Acme admin), **bob** (Acme read-only),
**carol** (Globex member). Every tenant-scoped page, endpoint and stream is tested for them.

Resources the machine may lack (PostgreSQL, Chromium) make their tests skip with a reason
on a plain machine; under CI (CI=true) a missing resource fails the test instead, so
nothing is silently skipped there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from composer.choices import Role
from tests.factories.composer import PASSWORD, MembershipFactory, TenantFactory, UserFactory
from tests.factories.fabric import SmallFabric, fabric_small

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def require(condition: bool, reason: str) -> None:
    """Skip on a plain machine, fail under CI, when a needed resource is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("browser") and item.get_closest_marker("django_db") is None:
            item.add_marker(pytest.mark.django_db(transaction=True))


@pytest.fixture
def password() -> str:
    return PASSWORD


@pytest.fixture
def acme(db: None) -> Any:
    return TenantFactory(name="Acme", slug="acme")


@pytest.fixture
def globex(db: None) -> Any:
    return TenantFactory(name="Globex", slug="globex")


@pytest.fixture
def admin_user(db: None) -> Any:
    """The operator: staff and superuser."""
    return UserFactory(username="admin", is_staff=True, is_superuser=True)


@pytest.fixture
def alice(acme: Any) -> Any:
    user = UserFactory(username="alice")
    MembershipFactory(user=user, tenant=acme, role=Role.ADMIN)
    return user


@pytest.fixture
def bob(acme: Any) -> Any:
    user = UserFactory(username="bob")
    MembershipFactory(user=user, tenant=acme, role=Role.READONLY)
    return user


@pytest.fixture
def carol(globex: Any) -> Any:
    user = UserFactory(username="carol")
    MembershipFactory(user=user, tenant=globex, role=Role.MEMBER)
    return user


@pytest.fixture
def small(db: None) -> SmallFabric:
    """The two-switch, two-rack fabric of tests/factories/fabric.py."""
    return fabric_small()


@pytest.fixture
def client_as(client: Client) -> Callable[[Any], Client]:
    """`client_as(user)`: the test client with that user logged in (a real session)."""

    def login(user: Any) -> Client:
        client.force_login(user)
        return client

    return login


@pytest.fixture
def persona(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """`persona("alice")`: the persona fixture of that name."""
    return request.getfixturevalue


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def api_as(api: APIClient) -> Any:
    """`api_as(user)` returns an API client authenticated as that user (session-less)."""

    def login(user: Any) -> APIClient:
        api.force_authenticate(user=user)
        return api

    return login


@pytest.fixture
def postgres(db: None) -> None:
    """For tests whose point is PostgreSQL's behaviour (row locks, concurrency)."""
    require(connection.vendor == "postgresql", "needs PostgreSQL: set DATABASE_URL=postgres://...")


# --- Redis ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """REDIS_URL when set (CI's real Redis), else a private embedded redis-server."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    from composer.embedded import start_redis

    folder = Path(tempfile.mkdtemp(prefix="composer-test-redis-"))
    process, url = start_redis(folder)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


# --- A real Celery worker ---------------------------------------------------------------------


@pytest.fixture
def celery_worker(transactional_db: None, redis_url: str) -> Iterator[Any]:
    """A real `celery worker` process on the test database and Redis; tasks are not eager.

    Yields the running `tests.support.worker.WorkerProcess`.
    """
    from tests.support.worker import WorkerProcess

    with WorkerProcess.start(redis_url=redis_url, database=connection.settings_dict) as worker:
        yield worker


# --- A real browser -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian's packages, driven by Playwright."""
    require(Path(CHROMIUM).exists(), f"needs Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls that tests make
    # between page actions are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def login_page(browser: Any, live_server: Any) -> Iterator[Any]:
    """`login_page(user)` opens a fresh browser context logged in as that user via the form;
    keywords are the context's options (`timezone_id=`, `locale=`, ...)."""
    contexts: list[Any] = []

    def open_as(user: Any, **options: Any) -> Any:
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1400, "height": 900}, **options
        )
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("input[name=username]", user.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        return page

    yield open_as
    for context in contexts:
        context.close()
