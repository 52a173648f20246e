"""A held composition in a real browser (headless Chromium): alice clicks "Release hold"
and the page says the devices are free again."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState
from composer.models import Composition
from composer.services.holds import composition_hold
from fabric.choices import DeviceState
from fabric.models import Device
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager

# WhiteNoise serves static files to the server thread as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def test_alice_releases_her_hold_from_its_page(login_page: Any, alice: Any, acme: Any) -> None:
    from playwright.sync_api import expect

    inventory_sync(manager=simulated_manager())
    held = composition_hold(
        tenant=acme,
        requested_by=alice,
        spec={"items": [{"kind": "gpu", "count": 1}]},
        name="held-1",
        ttl_s=600,
    )
    device = held.allocations.get().device
    page = login_page(alice)
    page.goto(f"/compositions/{held.pk}/")
    expect(page.locator("#hold-expiry")).to_contain_text("Held until")
    expect(page.locator("#hold-apply-button")).to_be_visible()
    page.click("#hold-release-button")
    expect(page.locator(".alert-success, .toast, [role=alert]").first).to_contain_text(
        "Released the hold on held-1; its devices are free again."
    )
    expect(page.locator("#composition-state")).to_contain_text("Released")
    expect(page.locator("#hold-release-button")).to_have_count(0)
    assert Composition.objects.get(pk=held.pk).state == CompositionState.RELEASED
    assert Device.objects.get(pk=device.pk).state == DeviceState.FREE
