"""Silencing in a real browser (headless Chromium): an operator opens the alert list, clicks
Silence on an alert's row, silences its rule for 8 hours, and finds it in the silences
list, reached from the user menu; then ends it. Screenshots at 1,400 and 390 px wide."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from composer.models import AlertAudience, Silence
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert, ChangeRecord
from tests.factories.fabric import fabric_small

# WhiteNoise serves static files to the server thread as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]
SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-notify"


def test_an_operator_silences_a_rule_from_the_alert_list(
    login_page: Any, admin_user: Any, acme: Any
) -> None:
    from playwright.sync_api import expect

    small = fabric_small()
    now = timezone.now()
    switch = small.switches[0]
    alert = Alert.objects.create(
        manager=small.manager,
        source_type=AlertSource.SWITCH,
        source_id=switch.pk,
        source_name=switch.name,
        rule=rules.ELEMENT_FAILED,
        severity=AlertSeverity.CRITICAL,
        message=f"{switch.name} failed: the manager reports Critical",
        opened_at=now,
        last_seen_at=now,
    )
    AlertAudience.objects.create(alert=alert, tenant=acme)
    SHOTS.mkdir(parents=True, exist_ok=True)

    page = login_page(admin_user)
    page.goto("/alerts/")
    row = page.locator(f"#alert-{alert.pk}")
    page.screenshot(path=str(SHOTS / "alerts-1400.png"), full_page=True)
    row.locator(".silence-link").click()
    expect(page).to_have_url(re.compile(rf"/notifications/silences/new/\?alert={alert.pk}$"))
    expect(page.locator(".page-subtitle")).to_contain_text(alert.message)
    page.check("input[name=match][value=rule]")
    page.select_option("#id_hours", "8")
    page.fill("#id_reason", "switch firmware upgrade tonight")
    page.screenshot(path=str(SHOTS / "silence-form-1400.png"), full_page=True)
    page.click("#notification-save")

    expect(page).to_have_url(re.compile(r"/notifications/silences/$"))
    silence = Silence.objects.get()
    listed = page.locator(f'tr[data-silence="{silence.pk}"]')
    expect(listed).to_contain_text("Silence: Element failed")
    expect(listed).to_contain_text("switch firmware upgrade tonight")
    expect(listed).to_contain_text("admin")
    expect(page.locator(".alert-success")).to_contain_text("Silence: Element failed until")
    page.screenshot(path=str(SHOTS / "silences-1400.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SHOTS / "silences-390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1400, "height": 900})

    # The same list from the user menu; ending it moves it to the ended ones.
    page.goto("/")
    page.click("#user-menu")
    page.click("#menu-silences")
    expect(listed).to_be_visible()
    listed.locator(".silence-end").click()
    expect(page.locator(f'tr[data-silence="{silence.pk}"]')).to_have_count(0)
    page.click("#silence-states >> text=Ended")
    expect(page.locator(f'tr[data-silence="{silence.pk}"]')).to_contain_text("ended")
    actions = ChangeRecord.objects.filter(target_type="silence").values_list("action", flat=True)
    assert sorted(actions) == ["added", "changed"]
