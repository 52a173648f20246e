"""The utilisation page in a real browser (headless Chromium): history sampled by the real
tick, an operator opens the page from the navbar and the charts are drawn on their canvases;
switching the period keeps the pool; a member of another tenant sees none of Acme."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState
from composer.models import Composition
from composer.services.utilisation import utilisation_tick
from fabric.choices import DeviceState
from tests.factories.fabric import SmallFabric

# WhiteNoise serves static files to the server thread as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]

INKED = """canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let inked = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] > 0) inked++;
  return inked;
}"""


@pytest.fixture
def sampled(small: SmallFabric, acme: Any) -> SmallFabric:
    """Three minutes of history through the real tick: a GPU bound after the first."""
    now = timezone.now()
    utilisation_tick(now=now - timedelta(minutes=3))
    small.gpus[0].state, small.gpus[0].bound_host = DeviceState.BOUND, small.hosts[0]
    small.gpus[0].save()
    Composition.objects.create(tenant=acme, name="train", state=CompositionState.READY, spec={})
    utilisation_tick(now=now - timedelta(minutes=2))
    utilisation_tick(now=now - timedelta(minutes=1))
    return small


def test_an_operator_sees_the_charts_drawn(login_page: Any, admin_user: Any, sampled: Any) -> None:
    from playwright.sync_api import expect

    page = login_page(admin_user)
    page.click("#capacity-menu")
    page.click("nav >> text=Utilisation")
    expect(page).to_have_url(re.compile(r"/utilisation/$"))
    # The pool choice submits itself once the page's script runs: choosing before it has run
    # (the URL changes first) would go unheard.
    page.wait_for_load_state()
    page.select_option("#utilisation-pool", "h100")
    expect(page).to_have_url(re.compile(r"pool=h100"))
    charts = page.locator(".utilisation-chart canvas")
    expect(charts).to_have_count(3)  # utilisation, capacity, compositions per tenant
    expect(page.locator("body")).to_have_attribute("data-charts-drawn", "3")
    for i in range(3):
        assert charts.nth(i).evaluate(INKED) > 100, f"chart {i} is blank"
    legend = page.locator('[data-chart="capacity"] .u-legend')
    expect(legend).to_contain_text("Stranded")
    expect(page.locator("#utilisation-tenants")).to_contain_text("Acme")

    page.click("#utilisation-periods >> text=Last week")
    expect(page).to_have_url(re.compile(r"pool=h100&period=week"))
    # The tick rolled its hour up: the week has one point an hour.
    expect(page.locator("#utilisation-window")).to_contain_text("one point per hour")
    expect(page.locator(".utilisation-chart canvas")).to_have_count(3)


def test_another_tenants_member_sees_the_pools_but_not_acme(
    login_page: Any, carol: Any, sampled: Any
) -> None:
    from playwright.sync_api import expect

    page = login_page(carol)
    page.goto("/utilisation/")
    expect(page.locator(".utilisation-chart canvas")).to_have_count(4)  # two kinds, two each
    expect(page.locator("body")).not_to_contain_text("Acme")
    expect(page.locator("body")).not_to_contain_text("Stranded")
    expect(page.locator("#utilisation-tenants")).to_contain_text("No compositions in this period")
