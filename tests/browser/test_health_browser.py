"""Health and maintenance on the fabric pages in a real browser: the maintenance modal loads
what depends on a switch through htmx, and confirming takes the switch out of service."""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from fabric.choices import ComponentState
from fabric.models import HealthSample, Switch
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-health"


def test_an_operator_puts_a_switch_in_maintenance_after_seeing_what_depends_on_it(
    login_page: Any, admin_user: Any
) -> None:
    from playwright.sync_api import expect

    small = fabric_small()
    switch = small.switches[1]
    now = timezone.now()
    for minutes in range(4):
        HealthSample.objects.create(
            manager=small.manager,
            target_type="switch",
            target_id=switch.pk,
            taken_at=now - timedelta(minutes=minutes),
            health="ok",
            temperature_c=41.5 + minutes,
            power_state="on",
        )
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = login_page(admin_user)
    page.goto(f"/fabric/switches/{switch.pk}/")
    expect(page.locator("#health-latest")).to_contain_text("41.5 °C")
    page.click("#maintenance-toggle")
    modal = page.locator("#maintenance-modal")
    expect(modal.locator("#maintenance-title")).to_have_text("Put sw-b in maintenance?")
    # gpu-b's four GPUs hang off sw-b alone; gpu-a stays reached by host-a (host-b, which
    # reaches it only through sw-b, is lost with it, and is counted as a host).
    expect(modal.locator("#dependent-devices")).to_contain_text("4")
    expect(modal).to_contain_text("cut off: no path to any host")
    expect(modal).to_have_css("opacity", "1")  # faded in
    page.screenshot(path=str(SHOTS / "switch-maintenance-modal.png"))
    page.fill("#maintenance-reason", "firmware 2.4")
    page.click("#maintenance-confirm")
    expect(page.locator("#maintenance")).to_contain_text("In maintenance")
    expect(page.locator("#history")).to_contain_text("put in maintenance: firmware 2.4")
    page.screenshot(path=str(SHOTS / "switch-in-maintenance.png"), full_page=True)
    assert Switch.objects.get(pk=switch.pk).state == ComponentState.MAINTENANCE
