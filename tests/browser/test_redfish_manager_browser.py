"""A Redfish manager from the console, end to end in Chromium: an operator adds a manager
with driver Redfish pointed at a live Redfish service (a simulated world of its own, served
as Redfish over HTTP), tests the connection, syncs it with a real Celery worker, and
composes a GPU through it; the simulator's own state then holds the binding the Redfish
driver made.

The password is checked to be absent from every page the operator sees. Screenshots go to
a temporary folder (COMPOSER_SHOTS_DIR to choose it) on every run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from composer.models import Composition
from fabric.credentials import decrypt
from fabric.models import Device, FabricManager, Host
from fabric.simulator import store
from fabric.simulator.builder import world_write
from fabric.simulator.redfish import paths
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import TINY
from tests.support.manager_form import fill_manager_form

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-redfish"
FABRIC = "rf-browser"  # the served world's own fabric, not the demo's
USERNAME = "rf-operator"
SECRET = "Redfish-Secret-7d41"


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    assert SECRET not in page.content(), f"the password is in the page of {name}"


def test_an_operator_adds_a_redfish_manager_syncs_and_composes_through_it(
    transactional_db: None,
    asgi_login_page: Any,
    celery_worker: Any,
    admin_user: Any,
    acme: Any,
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    world_write(fabric_name=FABRIC, spec=TINY)
    with serve_world(FABRIC, username=USERNAME, password=SECRET) as endpoint:
        page = asgi_login_page(admin_user)
        fill_manager_form(
            page,
            name="rf-lab",
            driver="redfish",
            endpoint=endpoint,
            settings="{}",
            username=USERNAME,
            password=SECRET,
        )

        # Test connection: the Redfish version, how it composes, and what it holds.
        page.click("#manager-test")
        expect(page.locator("#probe-ok")).to_be_visible()
        expect(page.locator("#probe-service")).to_contain_text("Redfish 1.")
        expect(page.locator("#probe-methods")).not_to_have_text("—")
        expect(page.locator('#probe-counts td[data-kind="hosts"]')).to_have_text("3")
        expect(page.locator('#probe-counts td[data-kind="devices"]')).to_have_text("9")
        _shot(page, "1-add-tested")
        assert not FabricManager.objects.filter(name="rf-lab").exists()  # a test saves nothing

        page.click("#manager-save")
        page.wait_for_url(lambda url: "/fabric/managers/" in url and "/new/" not in url)
        expect(page.locator("h1")).to_have_text("rf-lab")
        expect(page.locator("#manager-credentials")).to_have_text("stored, encrypted")
        manager = FabricManager.objects.get(name="rf-lab")
        assert manager.driver == "redfish" and manager.endpoint == endpoint
        assert decrypt(manager) == {"username": USERNAME, "password": SECRET}
        _shot(page, "2-saved")
        page.click("#edit-manager")  # the edit form gives back neither the password nor the user
        expect(page.locator("#id_password")).to_have_value("")
        expect(page.locator("#id_username")).to_have_value("")
        assert SECRET not in page.content()
        page.go_back()

        # Sync now: the worker discovers the inventory over Redfish.
        page.click("#sync-now")
        expect(page.locator("#job-progress")).to_have_attribute(
            "data-status", "succeeded", timeout=60_000
        )
        _shot(page, "3-sync-job")
        page.goto(f"/fabric/managers/{manager.pk}/")
        expect(page.locator("#manager-counts")).to_contain_text("Hosts")
        assert Host.objects.filter(manager=manager).count() == 3
        assert Device.objects.filter(manager=manager).count() == 9
        _shot(page, "4-synced")
        # Its hosts and devices, the lists naming the manager they are narrowed to.
        page.click("#manager-counts >> text=Hosts")
        expect(page.locator("#filter-manager")).to_contain_text("rf-lab")
        expect(page.locator("table tbody tr")).to_have_count(3)
        _shot(page, "5-hosts")
        page.goto(f"/fabric/managers/{manager.pk}/")
        page.click("#manager-counts >> text=Devices")
        expect(page.locator("#filter-manager")).to_contain_text("rf-lab")
        expect(page.locator("#device-table tbody tr")).to_have_count(9)
        _shot(page, "6-devices")

        # Compose a GPU for Acme through it, from the console's request form.
        page.goto("/compositions/new/")
        expect(page.locator("#id_tenant")).to_have_value(str(acme.pk))  # the only tenant
        page.fill("#id_name", "rf-gpu-1")
        page.select_option("#id_item_0_kind", "gpu")
        page.fill("#id_item_0_count", "1")
        page.click("#request-button")
        page.wait_for_url(
            lambda url: "/compositions/" in url and url.rstrip("/").split("/")[-1].isdigit()
        )
        expect(page.locator("h1")).to_have_text("rf-gpu-1")
        expect(page.locator("#composition-live")).to_have_attribute(
            "data-state", "ready", timeout=60_000
        )
        _shot(page, "7-composed")

    composition = Composition.objects.get(name="rf-gpu-1")
    gpu = composition.allocations.get(device__kind="gpu").device
    assert gpu.manager_id == manager.pk
    bindings = store.bindings_for(store.fabric_get(FABRIC))
    assert [(b.device_id, b.host_id) for b in bindings] == [
        (paths.element_id(gpu.external_id), paths.element_id(composition.host.external_id))
    ]
