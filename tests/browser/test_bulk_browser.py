"""Bulk maintenance in a real browser (headless Chromium): an operator ticks rows of the
switch list, reads the confirmation that names them and what they take down, and puts them
in maintenance together; then takes one device back out from the device table."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState
from composer.models import Composition
from fabric.choices import AlertSeverity, AlertSource, ComponentState, DeviceState
from fabric.health import rules
from fabric.models import Alert, Device, Switch
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


def test_an_operator_acknowledges_two_alerts_and_a_member_decomposes_two_compositions(
    login_page: Any, admin_user: Any, alice: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    small = fabric_small()
    now = timezone.now()
    alerts = [
        Alert.objects.create(
            manager=small.manager,
            source_type=AlertSource.DEVICE,
            source_id=gpu.pk,
            source_name=gpu.name,
            rule=rules.TEMPERATURE,
            severity=AlertSeverity.WARNING,
            message=f"{gpu.name} runs hot",
            opened_at=now,
            last_seen_at=now,
        )
        for gpu in small.gpus[:2]
    ]
    page = login_page(admin_user)
    page.goto("/alerts/")
    for alert in alerts:
        page.check(f"input[data-bulk-row][value='{alert.pk}']")
    expect(page.locator("#alert-bulk-form [data-bulk-count]")).to_have_text("2 ticked")
    page.click("#bulk-acknowledge")
    expect(page.locator("#bulk-title")).to_have_text("Acknowledge 2 alerts?")
    page.click("#bulk-confirm")
    expect(page.locator(".alert-success")).to_contain_text("2 alerts acknowledged.")
    assert Alert.objects.filter(acknowledged_by=admin_user).count() == 2

    boxes = [
        Composition.objects.create(tenant=acme, name=f"box-{i}", state=CompositionState.READY)
        for i in range(2)
    ]
    member = login_page(alice)
    member.goto("/compositions/")
    member.check("#composition-bulk-form input[data-bulk-all]")
    member.click("#bulk-decompose")
    expect(member.locator("#bulk-title")).to_have_text("Decompose 2 compositions?")
    member.click("#bulk-confirm")
    expect(member).to_have_url(re.compile(r"/compositions/$"))
    expect(member.locator(".alert-success")).to_contain_text("Decomposing 2 compositions.")
    for box in boxes:
        box.refresh_from_db()
        assert box.state != CompositionState.READY
