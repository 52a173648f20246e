"""The fault-injection page in Chromium: the target field suggests the elements of the kind
picked (devices and links too), a link is taken by the name the console shows, and the form
keeps what the operator typed after each injection."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.models import SimulatedElement
from tests.fabric.simulated_world import simulated_manager

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-faults"
LINK = "cxl-spine-1 <-> mem-a-01"


def suggestions(page: Any) -> list[str]:
    """The values the target field offers now (its datalist)."""
    return list(
        page.evaluate(
            """() => {
                const list = document.getElementById("id_target").list;
                return list ? Array.from(list.options, (o) => o.value) : [];
            }"""
        )
    )


def test_an_operator_fails_and_recovers_a_link_by_its_name(
    login_page: Any, admin_user: Any
) -> None:
    from playwright.sync_api import expect

    manager: FabricManager = simulated_manager()
    inventory_sync(manager=manager)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = login_page(admin_user)
    page.goto("/simulator/faults/")

    # Devices are suggested for the first kind, links once "Link" is picked.
    assert "gpu-a-01-1" in suggestions(page)
    page.select_option("#id_target_type", "link")
    links = suggestions(page)
    assert LINK in links and "gpu-a-01-1" not in links
    expect(page.locator("#id_target")).to_have_attribute("placeholder", f"e.g. {links[0]}")

    page.fill("#id_target", LINK)
    page.select_option("#id_action", "fail")
    page.click("#fault-form button[type=submit]")

    expect(page.locator(".alert-success")).to_contain_text(
        f"Link {LINK} failed (it was running normally)."
    )
    # The form keeps what was typed, and its suggestions still follow the kind.
    expect(page.locator("#id_target")).to_have_value(LINK)
    expect(page.locator("#id_target_type")).to_have_value("link")
    expect(page.locator("#id_action")).to_have_value("fail")
    assert LINK in suggestions(page)
    expect(page.locator("#active-faults")).to_contain_text(LINK)
    page.screenshot(path=str(SHOTS / "link-failed.png"), full_page=True)
    link = SimulatedElement.objects.get(kind="link", fault="failed")

    page.select_option("#id_action", "recover")
    page.click("#fault-form button[type=submit]")
    expect(page.locator(".alert-success")).to_contain_text(
        f"Link {LINK} recovered (it was failed)."
    )
    expect(page.locator("#id_target")).to_have_value(LINK)
    assert SimulatedElement.objects.get(pk=link.pk).fault == ""

    # Once more: nothing to recover, and the page says so in words.
    page.click("#fault-form button[type=submit]")
    expect(page.locator(".alert-info")).to_contain_text(
        f"Link {LINK} has no fault to recover from; nothing changed."
    )
    expect(page.locator("#id_target")).to_have_value(LINK)
    page.screenshot(path=str(SHOTS / "nothing-changed.png"), full_page=True)
