"""API tokens in a real browser (headless Chromium): a tenant member opens *API tokens*
from the user menu, makes a named token (the password asked again), copies it, finds it
working on the API, and revokes it. Screenshots at 1,400 and 390 px wide."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from composer.models import ApiToken
from tests.factories.composer import PASSWORD

pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]
SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-tokens"


def test_a_member_makes_copies_and_revokes_a_token(login_page: Any, alice: Any) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    page = login_page(alice)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#user-menu")
    page.click("#menu-api-tokens")
    expect(page.locator("h1")).to_have_text("API tokens")
    expect(page.locator("#api-token-table")).to_contain_text("No tokens")

    page.click("#api-token-create")
    page.fill("#id_name", "nightly-report")
    page.fill("#id_password", "not it")
    page.click("#api-token-make")
    expect(page.locator("#error-password")).to_have_text("That is not your password.")
    page.fill("#id_password", PASSWORD)
    page.screenshot(path=str(SHOTS / "api-token-form-1400.png"), full_page=True)
    page.click("#api-token-make")
    key_field = page.locator("#api-token-key")
    expect(key_field).to_be_visible()
    key = key_field.input_value()
    assert len(key) == 40
    page.click("#api-token-copy")
    expect(page.locator("#api-token-copy")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == key
    page.screenshot(path=str(SHOTS / "api-token-new-1400.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SHOTS / "api-token-new-390.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/").status_code == 200

    page.click("#api-token-done")
    token = ApiToken.objects.get(user=alice)
    row = page.locator(f"tr[data-token='{token.pk}']")
    expect(row).to_contain_text("nightly-report")
    expect(row).not_to_contain_text("not yet")  # used just now, by the API call above
    expect(page.locator("#api-token-key")).to_have_count(0)  # the key is never shown again
    page.screenshot(path=str(SHOTS / "api-tokens-1400.png"), full_page=True)
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator(".api-token-revoke").click()
    expect(page.locator("#api-token-table")).to_contain_text("No tokens")
    expect(page.locator("body")).to_contain_text(f"API token {token.pk} revoked")
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/pools/").status_code == 401
