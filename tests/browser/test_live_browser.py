"""static/js/live.js in a real browser against the real ASGI app (HTTP and websockets).

The app runs under uvicorn in a thread of the test process (Django's live_server speaks
no websocket), so the test can stop and start the server: the indicator shows it, and the
events recorded while the server was away arrive after the reconnect.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.choices import CompositionState, EventType
from composer.events import event_record
from composer.models import Composition
from composer.states import composition_transition
from tests.factories.composer import PASSWORD
from tests.support.asgi import AsgiServer  # the `asgi_server` fixture: tests/browser/conftest.py

# WhiteNoise serves static files to the ASGI handler as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def test_the_page_hears_events_live_and_after_a_server_restart(
    browser: Any, asgi_server: AsgiServer, alice: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    box = Composition.objects.create(tenant=acme, name="acme-train", spec={})
    context = browser.new_context(base_url=asgi_server.url)
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("input[name=username]", alice.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        status = page.locator("#live-status")
        expect(status).to_have_attribute("data-status", "live")
        page.evaluate(
            """(id) => {
                window.got = [];
                window.refreshed = 0;
                document.addEventListener("composer:event", (e) => window.got.push(e.detail));
                const row = document.createElement("div");
                row.setAttribute("data-live-composition", String(id));
                row.addEventListener("refresh", () => { window.refreshed += 1; });
                document.body.appendChild(row);
            }""",
            box.pk,
        )

        composition_transition(box, CompositionState.PLACING, reason="Placing")
        page.wait_for_function("window.got.length === 1")
        first = page.evaluate("window.got[0]")
        assert (first["event_type"], first["payload"]["to"]) == ("composition.state", "placing")
        page.wait_for_function("window.refreshed === 1")

        asgi_server.stop()
        expect(status).to_have_attribute("data-status", "reconnecting")
        missed = [
            event_record(EventType.DEVICE_HEALTH, {"device": {"id": 1}}, tenant_ids=[acme.pk]),
            event_record(EventType.DEVICE_HEALTH, {"device": {"id": 2}}, tenant_ids=[acme.pk]),
        ]
        asgi_server.start()
        expect(status).to_have_attribute("data-status", "live")
        page.wait_for_function("window.got.length === 3")
        replayed = page.evaluate("window.got.slice(1)")
        assert [e["id"] for e in replayed] == [e.pk for e in missed]
        assert all(e["replay"] for e in replayed)
        assert page.evaluate("window.ComposerLive.lastEventId") == missed[-1].pk
        time.sleep(0.5)
        assert page.evaluate("window.got.length") == 3, "an event was delivered twice"
    finally:
        context.close()
