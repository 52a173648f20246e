"""Every page at 390 px wide (a phone) in a real browser: nothing makes the page scroll
sideways (wide tables scroll inside their card), and the navbar is a menu that opens.

The world is the small fabric of tests/factories/fabric.py with a composition, a job, an alert
and a template, so that tables, badges and detail pages have rows to draw.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from composer.choices import AllocationState, CompositionState, JobKind
from composer.models import (
    AlertAudience,
    Allocation,
    Booking,
    BookingHold,
    Composition,
    Occurrence,
    Template,
)
from composer.notifications import Actor, route_create, silence_create, webhook_create
from composer.services.utilisation import utilisation_tick
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert, Device
from tests.factories.composer import JobFactory
from tests.factories.fabric import fabric_small
from tests.support.calendar import book_window

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def _world(acme: Any, alice: Any) -> dict[str, Any]:
    small = fabric_small()
    box = Composition.objects.create(
        tenant=acme,
        name="train-with-a-rather-long-name-01",
        requested_by=alice,
        host=small.hosts[0],
        state=CompositionState.READY,
        spec={"items": [{"kind": "gpu", "count": 2}]},
    )
    for gpu in small.gpus[:2]:  # held and bound, so the page draws its devices' paths
        Allocation.objects.create(
            composition=box, device=gpu, state=AllocationState.BOUND, binding_id=f"b-{gpu.pk}"
        )
        Device.objects.filter(pk=gpu.pk).update(state="bound", bound_host=small.hosts[0])
    job = JobFactory.create(
        kind=JobKind.COMPOSE,
        tenant=acme,
        target_type="composition",
        target_id=box.pk,
        target_label=box.name,
        message="Binding gpu-a-0 to host-a through sw-a",
    )
    now = timezone.now()
    alert = Alert.objects.create(
        manager=small.manager,
        source_type=AlertSource.DEVICE,
        source_id=small.gpus[0].pk,
        source_name=small.gpus[0].name,
        rule=rules.ELEMENT_FAILED,
        severity=AlertSeverity.CRITICAL,
        message="gpu-a-0 failed: the manager reports Critical (uncorrectable ECC errors)",
        opened_at=now,
        last_seen_at=now,
    )
    AlertAudience.objects.create(alert=alert, tenant=acme)
    template = Template(
        name="inference-2gpu-bigmem",
        slug="inference-2gpu-bigmem",
        description="Two GPUs and a terabyte of CXL memory, for large-context inference",
        spec={"items": [{"kind": "gpu", "count": 2}], "memory_gib": 1024, "policy": "enclosure"},
    )
    template.full_clean()
    template.save()
    actor = Actor(user=alice, source="test")
    hook, _ = webhook_create(
        tenant=acme, name="acme-pager", url="https://pager.acme.example/hooks/composer", actor=actor
    )
    route_create(
        tenant=acme, name="acme-on-call", emails=["oncall@acme.example"], webhook=hook, actor=actor
    )
    silence_create(
        tenant=acme,
        alert=alert,
        match_element=True,
        duration=timedelta(hours=4),
        reason="the GPU is being replaced",
        actor=actor,
    )
    # Two minutes of utilisation history, so that its page draws its charts and table.
    utilisation_tick(now=now - timedelta(minutes=1))
    utilisation_tick(now=now)
    start = now + timedelta(days=1)
    booking = Booking.objects.create(
        tenant=acme,
        name="nightly-inference-with-a-long-name",
        spec={"items": [{"kind": "gpu", "count": 2}]},
        time_zone="Europe/Berlin",
        starts_at=start,
        ends_at=start + timedelta(hours=8),
        recurrence="daily",
        until=(start + timedelta(days=1)).date(),
    )
    for day in range(2):
        occurrence = Occurrence.objects.create(
            booking=booking,
            starts_at=start + timedelta(days=day),
            ends_at=start + timedelta(days=day, hours=8),
            host=small.hosts[0],
            placement={
                "ok": True,
                "host": f"host:{small.hosts[0].pk}",
                "host_name": small.hosts[0].name,
                "devices": [
                    {"device": f"device:{g.pk}", "name": g.name, "kind": "gpu"}
                    for g in small.gpus[2:4]
                ],
                "memory": [],
            },
        )
        for gpu in small.gpus[2:4]:
            BookingHold.objects.create(
                occurrence=occurrence,
                device=gpu,
                host=small.hosts[0],
                starts_at=occurrence.starts_at,
                ends_at=occurrence.ends_at,
            )
    # A booked window tonight, so that the calendar draws its timeline.
    book_window(
        acme,
        "nightly-inference",
        now + timedelta(hours=2),
        now + timedelta(hours=6),
        small.gpus[4:6],
        small.hosts[1],
    )
    return {
        "small": small,
        "box": box,
        "job": job,
        "alert": alert,
        "hook": hook,
        "booking": booking,
    }


def _overflow(page: Any) -> list[str]:
    """What sticks out past the viewport's right edge (outside horizontally scrolled boxes)."""
    return list(
        page.evaluate(
            """() => {
              const width = document.documentElement.clientWidth;
              const scrolls = (el) => {
                for (let p = el.parentElement; p; p = p.parentElement) {
                  const style = getComputedStyle(p);
                  if (["auto", "scroll", "hidden"].includes(style.overflowX)) return true;
                }
                return false;
              };
              const out = [];
              for (const el of document.body.querySelectorAll("*")) {
                const box = el.getBoundingClientRect();
                if (box.width && box.right > width + 1 && !scrolls(el)) {
                  out.push(`${el.tagName.toLowerCase()}#${el.id}.${[...el.classList].join(".")}`
                    + ` right=${Math.round(box.right)}`);
                }
              }
              return out.slice(0, 8);
            }"""
        )
    )


def _report(found: dict[str, list[str]]) -> str:
    return "pages wider than a phone:\n" + "\n".join(
        f"{path}: {', '.join(what)}" for path, what in found.items()
    )


def _survey(page: Any, paths: list[str], shots: Path) -> dict[str, list[str]]:
    """{path: what sticks out} for each page wider than the phone; a screenshot of each page
    in `shots` to look at."""
    found = {}
    for path in paths:
        response = page.goto(path)
        assert response is not None and response.status < 400, path
        page.wait_for_load_state("load")
        name = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "dashboard"
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            found[path] = [f"scrollWidth={width}", *_overflow(page)]
    return found


def test_every_operator_page_fits_a_phone(
    login_page: Any, admin_user: Any, acme: Any, alice: Any, tmp_path: Path
) -> None:
    world = _world(acme, alice)
    small = world["small"]
    page = login_page(admin_user)
    page.set_viewport_size(PHONE)
    paths = [
        reverse("composer:dashboard"),
        reverse("composer:composition_list"),
        reverse("composer:composition_create"),
        reverse("composer:composition_templates"),
        reverse("composer:composition_detail", args=[world["box"].pk]),
        reverse("composer:booking_list"),
        reverse("composer:booking_create"),
        reverse("composer:booking_detail", args=[world["booking"].pk]),
        reverse("composer:pool_list"),
        reverse("composer:calendar"),
        reverse("composer:pool_detail", args=[small.pools[0].slug]),
        reverse("composer:utilisation"),
        reverse("composer:utilisation") + f"?pool={small.pools[0].slug}",
        reverse("fabric:device_list"),
        reverse("fabric:device_detail", args=[small.gpus[0].pk]),
        reverse("fabric:host_list"),
        reverse("fabric:host_detail", args=[small.hosts[0].pk]),
        reverse("fabric:enclosure_list"),
        reverse("fabric:enclosure_detail", args=[small.enclosures[0].pk]),
        reverse("fabric:switch_list"),
        reverse("fabric:switch_detail", args=[small.switches[0].pk]),
        reverse("fabric:rack_list"),
        reverse("fabric:rack_detail", args=[small.racks[0].pk]),
        reverse("fabric:power_feed_list"),
        reverse("fabric:power_feed_detail", args=[small.feeds[0].pk]),
        reverse("fabric:link_list"),
        reverse("fabric:link_detail", args=[small.links[0].pk]),
        reverse("composer:search") + "?q=gpu-a",
        reverse("fabric:manager_list"),
        reverse("fabric:manager_detail", args=[small.manager.pk]),
        reverse("fabric:manager_create"),
        reverse("fabric:failure_domain_list"),
        reverse("fabric:topology"),
        reverse("composer:alert_list") + "?state=all",
        reverse("composer:job_list"),
        reverse("composer:job_detail", args=[world["job"].pk]),
        reverse("composer:audit_list"),
        reverse("composer:reconcile_list"),
        reverse("composer:search") + "?q=a",
        reverse("composer:route_list"),
        reverse("composer:route_create"),
        reverse("composer:webhook_list"),
        reverse("composer:webhook_create"),
        reverse("composer:webhook_detail", args=[world["hook"].pk]),
        reverse("composer:silence_list"),
        reverse("composer:silence_create") + f"?alert={world['alert'].pk}",
        reverse("composer:counterfactual"),
    ]
    found = _survey(page, paths, tmp_path)
    assert not found, _report(found)


def test_every_tenant_page_fits_a_phone_and_the_menu_opens(
    login_page: Any, alice: Any, acme: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    world = _world(acme, alice)
    page = login_page(alice)
    page.set_viewport_size(PHONE)
    paths = [
        reverse("composer:dashboard"),
        reverse("composer:composition_list"),
        reverse("composer:composition_create"),
        reverse("composer:composition_templates"),
        reverse("composer:composition_detail", args=[world["box"].pk]),
        reverse("composer:booking_list"),
        reverse("composer:booking_create"),
        reverse("composer:booking_detail", args=[world["booking"].pk]),
        reverse("composer:pool_list"),
        reverse("composer:utilisation"),
        reverse("composer:calendar"),
        reverse("fabric:device_list"),
        reverse("composer:alert_list") + "?state=all",
        reverse("composer:job_list"),
        reverse("composer:job_detail", args=[world["job"].pk]),
        reverse("composer:audit_list"),
        reverse("composer:search") + "?q=train",
        reverse("composer:route_list"),
        reverse("composer:webhook_list"),
        reverse("composer:webhook_detail", args=[world["hook"].pk]),
        reverse("composer:silence_list"),
        reverse("composer:silence_create") + f"?alert={world['alert'].pk}",
    ]
    found = _survey(page, paths, tmp_path)
    assert not found, _report(found)
    page.goto("/")
    expect(page.locator("#main-nav")).to_be_hidden()
    page.click(".navbar-toggler")
    expect(page.locator("#main-nav")).to_be_visible()
    expect(page.locator("#main-nav >> text=Compositions")).to_be_visible()
    expect(page.locator("#navbar-search")).to_be_visible()
    page.screenshot(path=str(tmp_path / "menu.png"))
