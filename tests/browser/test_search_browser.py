"""Search in a real browser (headless Chromium): "/" goes to the navbar's box, the results come
grouped by kind, "All devices that match" pages through one kind, and a tenant member finds
nothing of the fabric's internals; on a phone, "/" opens the search page."""

from __future__ import annotations

import re
from typing import Any

import pytest

from composer.choices import CompositionState
from composer.models import Composition
from tests.factories.fabric import SmallFabric

pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def test_an_operator_searches_from_the_navbar_with_the_slash_key(
    login_page: Any, admin_user: Any, small: SmallFabric
) -> None:
    from playwright.sync_api import expect

    page = login_page(admin_user)
    page.goto("/jobs/")
    page.keyboard.press("/")
    box = page.locator("#navbar-search")
    expect(box).to_be_focused()
    box.fill("-a")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"/search/\?q=-a$"))
    groups = page.locator(".search-group")
    expect(groups.locator(".card-header")).to_have_text(
        [
            re.compile(t)
            for t in ("Hosts", "Devices", "Enclosures", "Switches", "Links", "Racks", "Power feeds")
        ]
    )
    expect(page.locator("#search-host .search-hit mark").first).to_have_text("-a")
    expect(page.locator("#navbar-search")).to_have_value("-a")
    page.screenshot(path="/tmp/search-operator.png", full_page=True)
    page.click("#search-device .search-more")
    expect(page).to_have_url(re.compile(r"kind=device"))
    expect(page.locator("#search-total")).to_have_text("Devices: 6")
    # "/" on the search page goes to the page's own box; Escape leaves it.
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("/")
    expect(page.locator("#search-page-form input[name=q]")).to_be_focused()
    page.keyboard.press("Escape")
    page.click("#search-device .search-hit >> text=gpu-a-2")
    expect(page).to_have_url(re.compile(r"/fabric/devices/\d+/$"))
    expect(page.locator("h1")).to_contain_text("gpu-a-2")


def test_a_tenant_member_finds_their_own_and_not_the_fabric(
    login_page: Any, alice: Any, carol: Any, acme: Any, globex: Any, small: SmallFabric
) -> None:
    from playwright.sync_api import expect

    Composition.objects.create(
        tenant=acme, name="train-acme", requested_by=alice, state=CompositionState.READY
    )
    Composition.objects.create(
        tenant=globex, name="train-globex", requested_by=carol, state=CompositionState.READY
    )
    page = login_page(alice)
    page.fill("#navbar-search", "train")
    page.press("#navbar-search", "Enter")
    expect(page.locator(".search-group")).to_have_count(1)
    expect(page.locator("#search-composition")).to_contain_text("train-acme")
    expect(page.locator("main")).not_to_contain_text("train-globex")
    page.fill("#search-page-form input[name=q]", "sw-a")
    page.press("#search-page-form input[name=q]", "Enter")
    expect(page.locator("#search-empty")).to_contain_text("Nothing you can see matches")


def test_on_a_phone_the_slash_key_opens_the_search_page(
    login_page: Any, alice: Any, small: SmallFabric
) -> None:
    from playwright.sync_api import expect

    page = login_page(alice)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/compositions/")
    expect(page.locator("#navbar-search")).to_be_hidden()  # inside the collapsed menu
    page.keyboard.press("/")
    expect(page).to_have_url(re.compile(r"/search/$"))
    box = page.locator("#search-page-form input[name=q]")
    box.fill("gpu-b")
    box.press("Enter")
    expect(page.locator("#search-device .search-hit")).to_have_count(4)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width} px)"
    page.screenshot(path="/tmp/search-phone.png", full_page=True)
