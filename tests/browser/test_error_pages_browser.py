"""The console's own error pages in a real browser: a tenant who opens an operator's page
sees the console's 404, styled like every other page, with the way back.

The screenshot is written to the test's temporary folder (`--basetemp` to keep it).
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_a_tenant_on_an_operator_page_sees_the_consoles_404(
    login_page: Any, alice: Any, tmp_path: Any
) -> None:
    from playwright.sync_api import expect

    page = login_page(alice)

    response = page.goto("/fabric/switches/")

    assert response is not None and response.status == 404
    expect(page.locator(".error-code")).to_have_text("404")
    expect(page.locator("#user-menu")).to_contain_text("alice")
    assert "URLconf" not in page.content()
    # Styled: the stylesheet was served and applied (Bootstrap's primary button is filled).
    home = page.get_by_role("link", name="Back to the dashboard")
    assert home.evaluate("e => getComputedStyle(e).backgroundColor") not in {"", "rgba(0, 0, 0, 0)"}
    page.screenshot(path=str(tmp_path / "404.png"))
    home.click()
    page.wait_for_url(lambda url: url.rstrip("/").count("/") == 2)  # the dashboard, at /
    expect(page.locator(".error-code")).to_have_count(0)
