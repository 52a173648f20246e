"""Resizing in a real browser (headless Chromium) over the real ASGI app and a real Celery
worker: alice previews one more GPU for her ready composition, resizes it, and watches it
come up live with the extra device, without a reload."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from fabric.services.sync import inventory_sync
from fabric.simulator.models import SimulatedFabric
from tests.fabric.simulated_world import simulated_manager
from tests.support.worker import WorkerProcess

# WhiteNoise serves static files to the ASGI handler as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]
SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-resize"
BIND_MS = 2500  # each bind, once the composition is up: long enough to watch


def _ready(composition: Composition, worker: WorkerProcess, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        composition.refresh_from_db()
        if composition.state == CompositionState.READY:
            return
        time.sleep(0.1)
    raise AssertionError(f"{composition.state}: {composition.failure_reason}\n{worker.log()}")


def _shots(page: Any, name: str) -> None:
    """The page at 1,400 px and at 390 px (a phone), full height."""
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})


def test_alice_previews_one_more_gpu_resizes_and_sees_it_come_up_live(
    transactional_db: None, asgi_login_page: Any, redis_url: str, alice: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    manager = simulated_manager()
    inventory_sync(manager=manager)
    slow = {"COMPOSER_TEST_LATENCY_SCALE": "1"}
    with WorkerProcess.start(
        redis_url=redis_url, database=connection.settings_dict, env=slow
    ) as worker:
        composition = composition_request(
            tenant=acme,
            requested_by=alice,
            spec={"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]},
            name="train-a",
        )
        _ready(composition, worker)
        SimulatedFabric.objects.filter(name="sim").update(latency_ms={"bind": BIND_MS})

        page = asgi_login_page(alice, f"/compositions/{composition.pk}/")
        expect(page.locator("#resize-form")).to_be_visible()
        expect(page.locator("#composition-devices tbody tr")).to_have_count(1)
        page.select_option("#id_add_0_kind", "gpu")
        page.fill("#id_add_0_count", "1")
        page.click("#resize-preview-button")
        expect(page.locator("#resize-plan")).to_be_visible()
        expect(page.locator("#resize-changes .resize-added")).to_have_count(1)
        expect(page.locator("#resize-explanation li").first).to_be_visible()
        expect(page.locator("#resize-after")).to_contain_text("GPU")
        _shots(page, "1-preview")
        assert not Job.objects.filter(kind=JobKind.RESIZE).exists()  # a preview holds nothing
        assert composition.allocations.count() == 1

        page.click("#resize-button")
        # Back on the page (HX-Redirect): resizing, the job's progress shown as it goes.
        expect(page.locator("#composition-live")).to_have_attribute("data-state", "resizing")
        expect(page.locator("#composition-job")).to_contain_text("Resize job")
        expect(page.locator("#resize-form")).to_have_count(0)  # not while it resizes
        expect(page.locator("#resizing-note")).to_be_visible()
        page.evaluate("window.stayed = true")
        _shots(page, "2-resizing")

        expect(page.locator("#composition-live")).to_have_attribute(
            "data-state", "ready", timeout=30_000
        )
        rows = page.locator("#composition-devices tbody tr")
        expect(rows).to_have_count(2)
        expect(page.locator("#composition-devices")).not_to_contain_text("Reserved")
        expect(page.locator("#job-status")).to_contain_text("Succeeded")
        expect(page.locator("#composition-history")).to_contain_text("Resizing")
        expect(page.locator("#resize-form")).to_be_visible()  # ready again: it may grow again
        expect(page.locator("#resizing-note")).to_have_count(0)
        assert page.evaluate("window.stayed") is True, "the page reloaded instead of going live"
        _shots(page, "3-resized")

    job = Job.objects.get(kind=JobKind.RESIZE)
    composition.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and composition.state == CompositionState.READY
    assert composition.allocations.filter(released_at__isnull=True, state="bound").count() == 2
