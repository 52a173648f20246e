"""A rack's elevation in a real browser (headless Chromium), on the demo data centre as
discovery fills it: reached from the Fabric menu, every unit drawn top to bottom, a host's
block spanning its two units where its manager says it sits, and a click through to the host.
Readable at 1,400 px and at 390 px (a phone): nothing wider than the screen but tables,
which scroll inside their card. Screenshots are written to a temporary folder on every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fabric.models import Host, Rack

pytestmark = pytest.mark.browser

# Nothing on the page is wider than the window, but what scrolls inside its own box.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => el.closest('.table-responsive') !== null;
  const wide = [...document.querySelectorAll('main *')]
    .filter((el) => !inScroller(el) && el.getBoundingClientRect().right > width + 1)
    .map((el) => el.tagName + '.' + el.className);
  return {page: document.documentElement.scrollWidth, width, wide: wide.slice(0, 5)};
}"""


def test_an_operator_reads_a_rack_elevation_and_clicks_through_to_a_host(
    login_page: Any, admin_user: Any, alice: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    from fabric.simulator.console.demo import demo_seed

    demo_seed(users=False)
    rack = Rack.objects.get(name="rack-a")
    host = Host.objects.get(name="host-a-01")
    assert (host.rack_unit, host.height_u) == (31, 2)  # as the simulator mounts it

    page = login_page(admin_user)
    page.click("#fabric-menu")
    page.click(".dropdown-menu >> text=Racks")
    expect(page.locator("h1")).to_have_text("Racks")
    expect(page.locator("#rack-table tbody tr")).to_have_count(2)
    page.click("#rack-table >> text=rack-a")
    expect(page.locator("h1")).to_have_text("rack-a")
    page.screenshot(path=str(tmp_path / "rack-1400.png"), full_page=True)

    elevation = page.locator("#elevation")
    expect(elevation.locator(".ru-num")).to_have_count(52)
    block = elevation.locator(f'a.ru-box[href="/fabric/hosts/{host.pk}/"]')
    expect(block).to_contain_text("host-a-01")
    expect(block).to_contain_text("U31\u201332")
    # The block spans units 32 and 31: from the top of 32's row to the bottom of 31's.
    top_label = elevation.locator(".ru-num", has_text="32").first.bounding_box()
    low_label = elevation.locator(".ru-num").nth(52 - 31).bounding_box()
    box = block.bounding_box()
    assert top_label and low_label and box
    assert abs(box["y"] - top_label["y"]) <= 1
    assert abs((box["y"] + box["height"]) - (low_label["y"] + low_label["height"])) <= 1
    # The top unit holds a switch, units 47-50 are empty, the bottom holds a GPU chassis.
    expect(elevation.locator(".ru-box").first).to_contain_text("cxl-spine-1")
    expect(elevation.locator(".ru-empty")).to_have_count(4)
    expect(elevation.locator(".ru-box").last).to_contain_text("gpu-a-01")
    expect(page.locator("#rack-feeds tbody tr")).to_have_count(2)

    # A phone: the drawing fits, only tables scroll (inside their card).
    page.set_viewport_size({"width": 390, "height": 844})
    fit = page.evaluate(OVERFLOW)
    assert fit["page"] <= fit["width"] and not fit["wide"], fit
    assert elevation.bounding_box()["width"] <= 390
    page.screenshot(path=str(tmp_path / "rack-390.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})

    block.click()
    expect(page.locator("h1")).to_have_text("host-a-01")
    expect(page.locator(".rack-units")).to_contain_text("U31\u201332")
    page.click(f'a[href="/fabric/racks/{rack.pk}/"]')
    expect(page.locator("h1")).to_have_text("rack-a")

    # A tenant member gets the same answer as for any page of the fabric's insides.
    member = login_page(alice)
    response = member.goto(f"/fabric/racks/{rack.pk}/")
    assert response is not None and response.status == 404
    expect(member.locator("body")).not_to_contain_text("host-a-01")
