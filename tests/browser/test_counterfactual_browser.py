"""The counterfactual page in a real browser: an operator picks a period and a shape, replays,
and reads the answer and the method; a tenant member finds no such page."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.composer.counterfactual.history import END, START, build_history, eight_gpu_shape

pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]


def test_an_operator_replays_a_period_onto_fixed_servers(
    login_page: Any, admin_user: Any, acme: Any, settings: Any
) -> None:
    from playwright.sync_api import expect

    settings.TIME_ZONE = "UTC"
    build_history(acme)
    eight_gpu_shape()
    page = login_page(admin_user)
    page.goto("/")
    page.click("#fabric-menu")
    page.click("text=Fixed-ratio counterfactual")
    expect(page).to_have_url(re.compile(r"/counterfactual/$"))
    expect(page.locator("#counterfactual-method")).to_contain_text("best fit")
    page.fill("#id_start", START.strftime("%Y-%m-%dT%H:%M"))
    page.fill("#id_end", END.strftime("%Y-%m-%dT%H:%M"))
    page.select_option("#id_shape", label="8-GPU")
    page.click("#counterfactual-run")
    expect(page).to_have_url(re.compile(r"shape="))
    expect(page.locator("#servers-at-peak")).to_have_text("1")
    expect(page.locator("#counterfactual-headline")).to_contain_text("The 3 compositions")
    gpus = page.locator('#counterfactual-table tr[data-resource="gpus"] td')
    expect(gpus.nth(0)).to_have_text("8")  # installed on the one server
    expect(gpus.nth(2)).to_have_text("4.5")  # idle at the peak
    expect(gpus.nth(5)).to_have_text("3.5")  # the composable peak
    page.screenshot(path="/tmp/counterfactual.png", full_page=True)


def test_a_tenant_member_finds_no_counterfactual_page(login_page: Any, alice: Any) -> None:
    page = login_page(alice)
    response = page.goto("/counterfactual/")
    assert response is not None and response.status == 404
    assert page.locator("text=Fixed-ratio counterfactual").count() == 0
