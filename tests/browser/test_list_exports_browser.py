"""A list page in a real browser (headless Chromium): alice sorts her compositions by a column,
the address keeps the sort through a filter, and the export she downloads holds every row the
filters select, in the table's order; from the templates page, *Request* opens the form with
the template picked."""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from composer.choices import CompositionState
from composer.models import Composition, Template

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-lists"


def test_alice_sorts_her_compositions_and_downloads_what_the_table_shows(
    login_page: Any, acme: Any, globex: Any, alice: Any
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, state in (
        ("train-b", CompositionState.READY),
        ("train-c", CompositionState.FAILED),
        ("train-a", CompositionState.READY),
        ("infer-z", CompositionState.READY),
    ):
        Composition.objects.create(tenant=acme, name=name, requested_by=alice, state=state)
    Composition.objects.create(tenant=globex, name="globex-secret", state=CompositionState.READY)
    template = Template(
        name="inference-2gpu",
        slug="inference-2gpu",
        description="Two GPUs for inference",
        spec={"items": [{"kind": "gpu", "count": 2}], "cores": 8},
    )
    template.full_clean()
    template.save()

    page = login_page(alice)
    page.goto(reverse("composer:composition_list"))
    rows = page.locator("#composition-table tbody tr td > a.fw-semibold")
    expect(rows).to_have_count(4)
    page.click("#composition-table a.sort-link[data-sort='name']")
    page.wait_for_url("**/compositions/?ordering=name")
    expect(rows).to_have_text(["infer-z", "train-a", "train-b", "train-c"])
    page.click("#composition-table a.sort-link[data-sort='name']")  # again: reversed
    page.wait_for_url("**/compositions/?ordering=-name")
    expect(rows).to_have_text(["train-c", "train-b", "train-a", "infer-z"])
    expect(page.locator("th[aria-sort='descending']")).to_contain_text("Name")

    # A filter keeps the sort, in the table and in the address bar.
    page.fill("#id_q", "train")
    page.select_option("#id_state", "ready")
    expect(rows).to_have_text(["train-b", "train-a"])
    page.wait_for_url("**ordering=-name**")
    assert "state=ready" in page.url and "q=train" in page.url
    page.screenshot(path=str(SHOTS / "compositions-sorted.png"), full_page=True)

    with page.expect_download() as download_info:
        page.click("#composition-table a[data-export='csv']")
    download = download_info.value
    assert download.suggested_filename == "compositions.csv"
    exported = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert [r["name"] for r in exported] == ["train-b", "train-a"]
    assert {r["state"] for r in exported} == {"ready"}

    # The page header leads to the templates; Request opens the form with it picked.
    page.click("#composition-templates")
    expect(page.locator("h1")).to_have_text("Templates")
    expect(page.locator("td.template-asks")).to_have_text("2 GPUs, 8 host cores")
    page.screenshot(path=str(SHOTS / "templates.png"), full_page=True)
    page.click("a.request-template")
    expect(page.locator("h1")).to_have_text("Request a composition")
    expect(page.locator("#id_template")).to_have_value(str(template.pk))
    expect(page.locator("#id_item_0_count")).to_have_value("2")
    expect(page.locator("#id_cores")).to_be_disabled()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(reverse("composer:composition_templates"))
    page.screenshot(path=str(SHOTS / "templates-phone.png"), full_page=True)
    page.goto(reverse("composer:composition_list") + "?ordering=-name")
    page.screenshot(path=str(SHOTS / "compositions-phone.png"), full_page=True)
