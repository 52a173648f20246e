"""The audit page in a real browser (headless Chromium): an operator narrows it to one user
and reads a before -> after; a tenant member sees only its own entries."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.audit import audit_world

# WhiteNoise serves static files to the server thread as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def test_an_operator_filters_by_user_and_reads_the_change(
    login_page: Any, admin_user: Any, alice: Any, carol: Any, acme: Any, globex: Any
) -> None:
    from playwright.sync_api import expect

    world = audit_world(admin=admin_user, alice=alice, carol=carol, acme=acme, globex=globex)
    page = login_page(admin_user)
    page.click("nav >> text=Audit")
    expect(page).to_have_url(re.compile(r"/audit/$"))
    rows = page.locator("#audit-table tbody tr")
    expect(rows).to_have_count(7)
    page.fill("#id_who", "admin")
    page.click("#audit-filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"[?&]who=admin"))
    expect(rows).to_have_count(3)  # the reconcile run, the sync job, the device change
    row = page.locator(f"#audit-change-{world.device_change.pk}")
    expect(row.locator(".audit-changes")).to_contain_text("state: free")
    expect(row.locator(".audit-changes")).to_contain_text("maintenance")
    expect(row).to_contain_text("192.0.2.7")
    # The filters live in the URL: a reload keeps them.
    page.reload()
    expect(page.locator("#id_who")).to_have_value("admin")
    expect(rows).to_have_count(3)


def test_a_tenant_member_sees_only_its_own_entries(
    login_page: Any, admin_user: Any, alice: Any, carol: Any, acme: Any, globex: Any
) -> None:
    from playwright.sync_api import expect

    world = audit_world(admin=admin_user, alice=alice, carol=carol, acme=acme, globex=globex)
    page = login_page(carol)
    page.goto("/audit/")
    rows = page.locator("#audit-table tbody tr")
    expect(rows).to_have_count(1)
    row = page.locator(f"#audit-state-{world.globex_requested.pk}")
    expect(row).to_contain_text("globex-infer")
    expect(row).to_contain_text("requested")
    expect(row).not_to_contain_text("10.9.9.9")
    expect(page.locator("#audit-table")).not_to_contain_text("gpu-a-01-1")
    expect(page.locator("#audit-table")).not_to_contain_text("acme-train")
