"""Fabric managers in Chromium: an operator adds a simulated manager from the page, tests
the connection and reads the counts, then edits and disables it.

Screenshots go to a temporary folder (COMPOSER_SHOTS_DIR to choose it) on every run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from fabric.credentials import decrypt
from fabric.models import FabricManager
from tests.fabric.simulated_world import simulated_manager
from tests.support.manager_form import fill_manager_form

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-managers"
SECRET = "browser-Secret-5c2e"


def test_an_operator_adds_tests_edits_and_disables_a_manager(
    login_page: Any, admin_user: Any
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    simulated_manager(name="existing", fabric="sim")  # the simulated world to point at
    page = login_page(admin_user)
    fill_manager_form(
        page,
        name="fm-lab",
        driver="simulated",
        endpoint="sim://sim",
        settings='{"fabric": "sim"}',
        username="lab-operator",
        password=SECRET,
    )

    # Test connection with the entered values: what answered and how much it holds.
    page.click("#manager-test")
    expect(page.locator("#probe-ok")).to_be_visible()
    expect(page.locator("#probe-service")).to_have_text("simulated fabric sim")
    expect(page.locator('#probe-counts td[data-kind="devices"]')).to_have_text("9")
    expect(page.locator('#probe-counts td[data-kind="switches"]')).to_have_text("3")
    page.screenshot(path=str(SHOTS / "add-tested.png"), full_page=True)
    assert not FabricManager.objects.filter(name="fm-lab").exists()  # a test saves nothing

    page.click("#manager-save")
    page.wait_for_url(lambda url: "/fabric/managers/" in url and "/new/" not in url)
    expect(page.locator("h1")).to_have_text("fm-lab")
    expect(page.locator("#manager-credentials")).to_have_text("stored, encrypted")
    manager = FabricManager.objects.get(name="fm-lab")
    assert decrypt(manager) == {"username": "lab-operator", "password": SECRET}

    # The saved manager's own Test connection.
    page.click("#test-connection")
    expect(page.locator("#probe-ok")).to_be_visible()
    expect(page.locator('#probe-counts td[data-kind="hosts"]')).to_have_text("3")
    page.screenshot(path=str(SHOTS / "detail-tested.png"), full_page=True)
    assert SECRET not in page.content()

    # Edit: a new poll interval, the credentials left blank (kept).
    page.click("#edit-manager")
    expect(page.locator("#id_password")).to_have_value("")
    page.fill("#id_health_poll_interval_s", "0")
    page.click("#manager-save")
    expect(page.locator("#error-health_poll_interval_s")).to_have_text(
        "The interval must be at least 1 second."
    )
    page.screenshot(path=str(SHOTS / "edit-error.png"), full_page=True)
    page.fill("#id_health_poll_interval_s", "45")
    page.click("#manager-save")
    expect(page.locator("h1")).to_have_text("fm-lab")
    expect(page.locator("#health-poll")).to_contain_text("every 45 s")
    manager.refresh_from_db()
    assert decrypt(manager) == {"username": "lab-operator", "password": SECRET}

    # Disable: the badge says so and Sync now is off.
    page.click("#toggle-enabled")
    expect(page.locator(".page-header .badge").first).to_have_text("disabled")
    expect(page.locator("#sync-now")).to_be_disabled()
    expect(page.locator("#toggle-enabled")).to_contain_text("Enable")
    page.screenshot(path=str(SHOTS / "disabled.png"), full_page=True)
    manager.refresh_from_db()
    assert not manager.is_enabled
