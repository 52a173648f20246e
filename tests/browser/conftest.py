"""Browser fixtures that need websockets: the real ASGI app, and logged-in pages on it.

`login_page` (tests/conftest.py) runs on Django's WSGI `live_server`, where static/js/live.js
never connects; tests of live updates use `asgi_login_page` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.factories.composer import PASSWORD
from tests.support.asgi import AsgiServer, asgi_server_running


@pytest.fixture
def asgi_server(redis_url: str, settings: Any) -> Iterator[AsgiServer]:
    """composer.asgi under uvicorn, on the run's Redis (see tests/support/asgi.py)."""
    with asgi_server_running(redis_url, settings) as server:
        yield server


@pytest.fixture
def asgi_login_page(browser: Any, asgi_server: AsgiServer) -> Iterator[Callable[..., Any]]:
    """`asgi_login_page(user, path="/")`: a fresh browser context logged in as `user` through
    the login form of the ASGI server, on `path`, once live updates are connected.

    Each context records every `composer:event` it hears in `window.composerEvents` (from
    before the page's own scripts run), so a test can check what a user was never sent.
    """
    from playwright.sync_api import expect

    contexts: list[Any] = []

    def open_as(user: Any, path: str = "/") -> Any:
        context = browser.new_context(
            base_url=asgi_server.url, viewport={"width": 1400, "height": 900}
        )
        context.set_default_timeout(15_000)
        context.add_init_script(
            "window.composerEvents = [];"
            "document.addEventListener('composer:event',"
            " (e) => window.composerEvents.push(e.detail));"
        )
        contexts.append(context)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("input[name=username]", user.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        if path != "/":
            page.goto(path)
        expect(page.locator("#live-status")).to_have_attribute("data-status", "live")
        return page

    yield open_as
    for context in contexts:
        context.close()
