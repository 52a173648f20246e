"""Bulk maintenance in a real browser (headless Chromium): an operator ticks rows of the
switch list, reads the confirmation that names them and what they take down, and puts them
in maintenance together; then takes one device back out from the device table."""

from __future__ import annotations

import re
from typing import Any

import pytest

from fabric.choices import ComponentState, DeviceState
from fabric.models import Device, Switch
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.browser


def test_an_operator_puts_two_switches_in_maintenance_at_once(
    login_page: Any, admin_user: Any
) -> None:
    from playwright.sync_api import expect

    small = fabric_small()
    page = login_page(admin_user)
    page.goto("/fabric/switches/")
    maintenance = page.locator("#bulk-maintenance")
    expect(maintenance).to_be_disabled()
    page.check("#switch-bulk-form input[data-bulk-all]")
    expect(page.locator("[data-bulk-count]")).to_have_text("2 ticked")
    expect(maintenance).to_be_enabled()
    page.uncheck(f"input[data-bulk-row][value='{small.switches[1].pk}']")
    expect(page.locator("[data-bulk-count]")).to_have_text("1 ticked")
    page.check(f"input[data-bulk-row][value='{small.switches[1].pk}']")
    maintenance.click()
    expect(page).to_have_url(re.compile(r"/fabric/maintenance/\?"))
    expect(page.locator("#bulk-title")).to_have_text("Put 2 switches in maintenance?")
    expect(page.locator("#dependent-devices")).to_contain_text("Devices that depend on them")
    expect(page.locator("main")).to_contain_text("gpu-b-3")
    page.screenshot(path="/tmp/bulk-confirm.png", full_page=True)
    page.fill("#maintenance-reason", "spine firmware 4.2")
    page.click("#bulk-confirm")
    expect(page).to_have_url(re.compile(r"/fabric/switches/$"))
    expect(page.locator(".alert-success")).to_contain_text("2 switches in maintenance")
    assert set(Switch.objects.values_list("state", flat=True)) == {ComponentState.MAINTENANCE}

    # One device back out, from the device table (htmx-drawn).
    gpu = small.gpus[0]
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.MAINTENANCE)
    page.goto("/fabric/devices/?state=maintenance")
    page.check(f"#device-bulk-form input[data-bulk-row][value='{gpu.pk}']")
    # A live redraw of the table (a device's health changed) keeps the tick.
    with page.expect_response(lambda r: "/fabric/devices/" in r.url):
        page.evaluate("htmx.trigger('#device-table-rows', 'refresh')")
    page.wait_for_timeout(300)
    expect(
        page.locator(f"#device-bulk-form input[data-bulk-row][value='{gpu.pk}']")
    ).to_be_checked()
    expect(page.locator("[data-bulk-count]")).to_have_text("1 ticked")
    page.click("#bulk-service")
    expect(page.locator("#bulk-title")).to_have_text("Take 1 device out of maintenance?")
    page.click("#bulk-confirm")
    expect(page).to_have_url(re.compile(r"/fabric/devices/\?state=maintenance$"))
    expect(page.locator(".alert-success")).to_contain_text("1 device back in service")
    assert Device.objects.get(pk=gpu.pk).state == DeviceState.FREE
