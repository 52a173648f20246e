"""The add-a-manager page as an operator fills it in, for the browser tests of managers."""

from __future__ import annotations

from typing import Any


def fill_manager_form(
    page: Any, *, name: str, driver: str, endpoint: str, settings: str, username: str, password: str
) -> None:
    """Open "Add a fabric manager" from the managers list and type these values in."""
    from playwright.sync_api import expect

    page.goto("/fabric/managers/")
    page.click("#add-manager")
    expect(page.locator("h1")).to_have_text("Add a fabric manager")
    page.fill("#id_name", name)
    page.select_option("#id_driver", driver)
    page.fill("#id_endpoint", endpoint)
    page.fill("#id_settings", settings)
    page.fill("#id_username", username)
    page.fill("#id_password", password)
