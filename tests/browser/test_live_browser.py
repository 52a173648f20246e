"""static/js/live.js in a real browser against the real ASGI app (HTTP and websockets).

The app runs under uvicorn in a thread of the test process (Django's live_server speaks
no websocket), so the test can stop and start the server: the indicator shows it, and the
events recorded while the server was away arrive after the reconnect.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from composer.choices import CompositionState, EventType, JobKind
from composer.events import event_record
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from composer.states import composition_transition
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager
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


def test_the_job_list_shows_a_new_job_as_it_runs_without_a_reload(
    asgi_login_page: Any, alice: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    inventory_sync(manager=simulated_manager())
    page = asgi_login_page(alice, "/jobs/")  # Acme has no job yet: nothing to poll for
    table = page.locator("#job-table")
    expect(table).to_contain_text("No jobs")
    page.evaluate("window.reloads = 0; window.addEventListener('load', () => window.reloads++)")

    composition = composition_request(
        tenant=acme, requested_by=alice, spec={"items": [{"kind": "gpu", "count": 1}]}, name="seen"
    )  # its compose job runs (eagerly) once the request commits

    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    row = table.locator("tr", has_text="seen")
    expect(row).to_be_visible(timeout=5_000)
    expect(row).to_contain_text(job.get_status_display())
    assert page.evaluate("window.reloads") == 0, "the page reloaded instead of its table"
