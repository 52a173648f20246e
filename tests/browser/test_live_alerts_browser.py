"""A failing fabric element alerts every operator's browser and the browser of every tenant it
hurts, live, with the blast radius cut to what each may see (issue #5).

Real pieces end to end: the ASGI app under uvicorn with the websocket consumer, the Redis
pub/sub layer, static/js/live.js, alerts.js, live_pages.js and topology_live.js in headless
Chromium, and the real fault path: `simulator_fault` (what the fault-injection page and API
call) queues a health poll, which runs eagerly in the test process, writes the alert and
its events and publishes them after commit.

The world: the tiny simulated fabric; Acme's `acme-infer` and Globex's `globex-infer` each
hold an L40S in chassis gpu-a-02, Globex's `globex-train` an H100 in gpu-a-01.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from composer.models import Composition
from composer.services.health_poll import health_poll_run
from fabric.models import Alert, Enclosure, FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.console.faults import simulator_fault
from tests.fabric.simulated_world import simulated_manager
from tests.support.compose import composed
from tests.support.screenshots import publish_screenshot

# WhiteNoise serves static files to the ASGI handler as a synchronous stream.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume:Warning"),
]

SHOTS = Path(os.environ.get("COMPOSER_SHOTS_DIR", tempfile.gettempdir())) / "composer-alerts"
# "Within a fraction of a second" is the product's promise; a loaded CI machine gets slack.
LIVE_WITHIN_MS = 5_000
L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}]}
H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}


@dataclass
class World:
    manager: FabricManager
    acme_infer: Composition
    globex_infer: Composition
    globex_train: Composition
    l40s_chassis: Enclosure
    h100_chassis: Enclosure


def _chassis(composition: Composition) -> Enclosure:
    return composition.allocations.get(device__kind="gpu").device.enclosure


@pytest.fixture
def world(acme: Any, alice: Any, globex: Any, carol: Any) -> World:
    manager = simulated_manager()
    inventory_sync(manager=manager)
    acme_infer = composed(tenant=acme, user=alice, spec=L40S, name="acme-infer")
    globex_infer = composed(tenant=globex, user=carol, spec=L40S, name="globex-infer")
    globex_train = composed(tenant=globex, user=carol, spec=H100, name="globex-train")
    assert _chassis(acme_infer) == _chassis(globex_infer) != _chassis(globex_train)
    health_poll_run(manager=manager)  # a healthy baseline: no alert
    assert not Alert.objects.exists()
    return World(
        manager,
        acme_infer,
        globex_infer,
        globex_train,
        _chassis(acme_infer),
        _chassis(globex_train),
    )


def _fail(world: World, enclosure: Enclosure, admin: Any) -> Alert:
    """Fail `enclosure` the way the fault-injection page does; the poll runs on commit."""
    simulator_fault(
        manager=world.manager,
        target_type="enclosure",
        target_id=enclosure.name,
        action="fail",
        actor=admin,
        source="browser test",
    )
    return Alert.objects.get(source_type="enclosure", source_id=enclosure.pk, state="open")


def _toast(page: Any, alert: Alert) -> Any:
    return page.locator(f'#toast-area .toast[data-alert-id="{alert.pk}"][data-alert-state="open"]')


def _mark_loaded(page: Any) -> None:
    """A flag that a reload would lose."""
    page.evaluate("window.composerNotReloaded = true")


def _not_reloaded(page: Any) -> bool:
    return bool(page.evaluate("window.composerNotReloaded === true"))


def test_a_failed_chassis_alerts_operators_and_the_hurt_tenant_live_and_nothing_else(
    asgi_login_page: Any, world: World, admin_user: Any, alice: Any
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    admin = asgi_login_page(admin_user, "/alerts/")
    mine = asgi_login_page(alice, f"/compositions/{world.acme_infer.pk}/")
    for page in (admin, mine):
        _mark_loaded(page)
    expect(admin.locator("#alert-table")).to_contain_text("0 alerts")
    expect(mine.locator("#composition-state .badge")).to_have_attribute("data-state", "ready")

    # 1. A fault that hurts Globex only: the operator hears of it, Alice never does.
    globex_only = _fail(world, world.h100_chassis, admin_user)
    expect(_toast(admin, globex_only)).to_be_visible(timeout=LIVE_WITHIN_MS)
    expect(_toast(admin, globex_only)).to_contain_text("globex-train")

    # 2. A fault that hurts Acme and Globex.
    started = time.monotonic()
    shared = _fail(world, world.l40s_chassis, admin_user)
    alice_toast = _toast(mine, shared)
    expect(alice_toast).to_be_visible(timeout=LIVE_WITHIN_MS)
    admin_toast = _toast(admin, shared)
    expect(admin_toast).to_be_visible(timeout=LIVE_WITHIN_MS)
    elapsed = time.monotonic() - started

    # The operator: the whole blast radius, both alerts in the live table, the badge.
    expect(admin_toast).to_contain_text(f"Enclosure {world.l40s_chassis.name}")
    expect(admin_toast).to_contain_text("2 compositions: ")
    expect(admin_toast).to_contain_text("acme-infer")
    expect(admin_toast).to_contain_text("globex-infer")
    expect(admin_toast).to_contain_text("(2 tenants)")
    expect(admin_toast.locator(".badge")).to_contain_text("Critical")
    expect(admin.locator("#alert-table tbody tr[data-alert-id]")).to_have_count(2)
    expect(admin.locator(f'#alert-table tr[data-alert-id="{shared.pk}"]')).to_contain_text(
        "globex-infer"
    )
    expect(admin.locator("#alert-count")).to_have_text("2")

    # Alice: her composition only, and it shows DEGRADED without a reload; no element
    # names, none of the fabric's counts.
    expect(alice_toast).to_contain_text("Your compositions: acme-infer")
    expect(alice_toast).to_contain_text("An enclosure your compositions depend on failed.")
    expect(alice_toast).not_to_contain_text("globex")
    expect(alice_toast).not_to_contain_text(world.l40s_chassis.name)
    expect(alice_toast).not_to_contain_text(" host")
    expect(alice_toast.locator("a.toast-composition")).to_have_attribute(
        "href", f"/compositions/{world.acme_infer.pk}/"
    )
    expect(mine.locator("#composition-state .badge")).to_have_attribute(
        "data-state", "degraded", timeout=LIVE_WITHIN_MS
    )
    expect(mine.locator("#failure-reason")).to_contain_text(
        "An enclosure your compositions depend on failed."
    )
    # (Its own device, gpu-a-02-1, is named; the chassis, gpu-a-02, is not.)
    chassis_named = re.compile(rf"{re.escape(world.l40s_chassis.name)}(?![\w-])")
    expect(mine.locator("#failure-reason")).not_to_contain_text(chassis_named)
    expect(mine.locator("#alert-count")).to_have_text("1")
    mine.screenshot(path=str(SHOTS / "alice-composition-degraded-toast.png"))
    admin.screenshot(path=str(SHOTS / "admin-alert-list-live.png"))
    publish_screenshot(SHOTS / "admin-alert-list-live.png", "alerts.png")

    # Nothing of Globex ever reached Alice's browser, and she has one toast.
    heard = mine.evaluate("window.composerEvents")
    assert heard, "Alice heard no event at all"
    assert "globex" not in json.dumps(heard).lower()
    assert globex_only.pk not in {
        (e.get("payload") or {}).get("alert", {}).get("id") for e in heard
    }
    expect(mine.locator("#toast-area .toast")).to_have_count(1)

    # 3. The operator acknowledges; Alice's toast says so, live.
    admin.locator(f'#alert-table tr[data-alert-id="{shared.pk}"] .ack-button').click()
    row = admin.locator(f'#alert-table tr[data-alert-id="{shared.pk}"]')
    expect(row.locator(".acknowledged")).to_contain_text("admin")
    expect(row.locator(".ack-button")).to_have_count(0)
    expect(alice_toast.locator(".toast-acknowledged")).to_have_text("Acknowledged")
    assert Alert.objects.get(pk=shared.pk).acknowledged_by == admin_user

    assert _not_reloaded(admin) and _not_reloaded(mine)
    assert elapsed < LIVE_WITHIN_MS / 1000
    # One toast per alert: the poll that opened the second alert also updated the first
    # (seen twice now), which toasts nothing new; a reload replays nothing the page shows.
    expect(admin.locator("#toast-area .toast")).to_have_count(2)
    admin.reload()
    expect(admin.locator("#live-status")).to_have_attribute("data-status", "live")
    expect(admin.locator("#alert-table tbody tr[data-alert-id]")).to_have_count(2)
    admin.wait_for_timeout(500)
    expect(admin.locator("#toast-area .toast")).to_have_count(0)


def test_the_topology_dashboard_and_device_rows_change_in_place(
    asgi_login_page: Any, world: World, admin_user: Any, alice: Any
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    topology = asgi_login_page(admin_user, "/fabric/topology/")
    expect(topology.locator("#topology")).to_have_attribute("data-ready", "true")
    dashboard = asgi_login_page(admin_user, "/")
    devices = asgi_login_page(alice, "/fabric/devices/?kind=gpu")
    for page in (topology, dashboard, devices):
        _mark_loaded(page)
    chassis = f"enclosure:{world.l40s_chassis.pk}"
    node_health = f"window.composerTopology.cy.getElementById('{chassis}').data('health')"
    assert topology.evaluate(node_health) == "ok"
    expect(dashboard.locator("#health-critical .stat-value")).to_have_text("0")
    gpu = world.acme_infer.allocations.get(device__kind="gpu").device
    row = devices.locator("#device-table tbody tr", has_text=gpu.name)
    expect(row).to_contain_text("OK")

    _fail(world, world.l40s_chassis, admin_user)

    topology.wait_for_function(f"{node_health} === 'critical'", timeout=LIVE_WITHIN_MS)
    device_node = f"window.composerTopology.cy.getElementById('device:{gpu.pk}').data('health')"
    assert topology.evaluate(device_node) == "critical"
    expect(dashboard.locator("#health-critical .stat-value")).to_have_text(
        "2", timeout=LIVE_WITHIN_MS
    )
    expect(row).to_contain_text("Critical", timeout=LIVE_WITHIN_MS)
    devices.screenshot(path=str(SHOTS / "alice-device-rows-live.png"))
    topology.screenshot(path=str(SHOTS / "admin-topology-live.png"))
    assert all(_not_reloaded(page) for page in (topology, dashboard, devices))


def test_a_partial_drawn_from_a_read_older_than_an_event_reloads_once_more(
    login_page: Any, alice: Any
) -> None:
    """A reload in flight when an event arrives may have read the database before it; the
    refresh live.js asks for meanwhile is dropped (or lands on the swapped-out copy), so
    live_pages.js reloads the new copy once more. Without a websocket (Django's WSGI live
    server) partials fall back to polling."""
    page = login_page(alice)
    page.goto("/alerts/")
    assert page.evaluate("composerPollFallback()") is True
    reloads = """(withEvent) => new Promise((resolve) => {
        let count = 0;
        document.addEventListener("htmx:beforeRequest", (e) => {
            if (e.detail.elt.id === "alert-table") count += 1;
        });
        const table = document.getElementById("alert-table");
        htmx.trigger(table, "refresh");  // a reload starts
        if (withEvent) {
            // An event about the table arrives while it is in flight; live.js's refresh is
            // dropped (hx-sync="this:drop").
            document.dispatchEvent(new CustomEvent("composer:event", {detail: {
                type: "event", id: 1, event_type: "fabric.alert", payload: {}}}));
            htmx.trigger(table, "refresh");
        }
        setTimeout(() => resolve(count), 1500);
    })"""
    assert page.evaluate(reloads, False) == 1
    assert page.evaluate(reloads, True) == 2


def test_a_tenant_whose_composition_a_spine_degrades_gets_a_toast_naming_it(
    asgi_login_page: Any, acme: Any, alice: Any, globex: Any, carol: Any, admin_user: Any
) -> None:
    """Both spines reach the memory box: when one fails nothing is lost and both memory
    compositions keep their memory over the other, degraded. Alice's toast names hers,
    never Globex's, and her composition's page reloads its live part; the operator's toast
    names both."""
    from playwright.sync_api import expect

    manager = simulated_manager()
    inventory_sync(manager=manager)
    mine = composed(tenant=acme, user=alice, spec={"memory_gib": 128}, name="acme-mem")
    composed(tenant=globex, user=carol, spec={"memory_gib": 128}, name="globex-mem")
    health_poll_run(manager=manager)
    admin = asgi_login_page(admin_user, "/alerts/")
    page = asgi_login_page(alice, "/alerts/")
    detail = asgi_login_page(alice, f"/compositions/{mine.pk}/")
    # Marked once the replays of its compose have reloaded it: the live partial loses the
    # mark when the alert naming it reloads it.
    detail.wait_for_load_state("networkidle")
    detail.evaluate("document.getElementById('composition-live').dataset.drawn = 'before'")

    simulator_fault(
        manager=manager,
        target_type="switch",
        target_id="cxl-spine-1",
        action="fail",
        actor=admin_user,
        source="browser test",
    )
    alert = Alert.objects.get(source_type="switch", state="open")
    toast = _toast(page, alert)
    expect(toast).to_be_visible(timeout=LIVE_WITHIN_MS)
    expect(toast.locator(".toast-degraded")).to_have_text(
        "Your compositions degraded (fewer paths): acme-mem"
    )
    expect(toast.locator(".toast-degraded a")).to_have_attribute(
        "href", f"/compositions/{mine.pk}/"
    )
    expect(toast).not_to_contain_text("globex")
    expect(toast).not_to_contain_text("Your compositions: ")
    expect(page.locator(f'#alert-table tr[data-alert-id="{alert.pk}"]')).to_contain_text(
        "Your compositions degraded (fewer paths): acme-mem"
    )
    expect(detail.locator("#composition-live")).to_be_visible()
    expect(detail.locator('#composition-live[data-drawn="before"]')).to_have_count(
        0, timeout=LIVE_WITHIN_MS
    )
    operator_toast = _toast(admin, alert)
    expect(operator_toast.locator(".toast-degraded")).to_have_text(
        "Degraded (fewer paths): acme-mem, globex-mem"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "alice-degraded-toast.png"))
    admin.screenshot(path=str(SHOTS / "admin-degraded-toast.png"))
