"""Health and maintenance on the device, switch and enclosure pages (operators only)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from fabric.choices import ComponentState, DeviceState
from fabric.models import Alert, Device, HealthSample, Switch
from fabric.services.maintenance import maintenance_set
from tests.factories.fabric import SmallFabric
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def sampled(small: SmallFabric) -> SmallFabric:
    gpu = small.gpus[0]
    now = timezone.now()
    for minutes, temperature in ((0, 71.5), (1, 70.0), (2, 69.0)):
        HealthSample.objects.create(
            manager=small.manager,
            target_type="device",
            target_id=gpu.pk,
            taken_at=now - timedelta(minutes=minutes),
            health="warning" if minutes == 0 else "ok",
            detail="degraded (injected fault)" if minutes == 0 else "",
            temperature_c=temperature,
            correctable_errors=130.0,
            uncorrectable_errors=0.0,
            power_state="on",
            utilisation_pct=80.0,
            metrics={"power_w": 280.0},
        )
    Alert.objects.create(
        manager=small.manager,
        source_type="device",
        source_id=gpu.pk,
        source_name=gpu.name,
        rule="ecc_correctable",
        severity="warning",
        message="Device gpu-a-0: 130 correctable ECC errors this period (warning at 100)",
        opened_at=now,
        last_seen_at=now,
        occurrences=3,
    )
    return small


def test_the_device_page_shows_the_latest_metrics_recent_samples_and_open_alerts(
    sampled: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    url = reverse("fabric:device_detail", args=[sampled.gpus[0].pk])
    body = client_as(admin_user).get(url).content.decode()
    assert 'id="health"' in body and 'id="maintenance"' in body
    assert "71.5 °C" in body and "280 W" in body
    assert "130 correctable, 0 uncorrectable" in body
    assert body.count("<tr>") >= 3  # the recent-samples table
    assert "130 correctable ECC errors this period" in body and "seen 3 times" in body
    assert "Put in maintenance" in body


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_see_no_health_or_maintenance_on_the_device_page(
    who: str,
    sampled: SmallFabric,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    body = client.get(reverse("fabric:device_detail", args=[sampled.gpus[0].pk])).content.decode()
    assert 'id="health"' not in body and 'id="maintenance"' not in body
    for name in ("device_maintenance", "switch_maintenance"):
        target = sampled.gpus[0] if name.startswith("device") else sampled.switches[0]
        url = reverse(f"fabric:{name}", args=[target.pk])
        assert client.get(url).status_code == 404
        assert client.post(url, {"on": "1"}).status_code == 404
    assert Device.objects.get(pk=sampled.gpus[0].pk).state == DeviceState.FREE


def test_switch_and_enclosure_pages_show_health_and_maintenance(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    for name, target in (("switch", small.switches[0]), ("enclosure", small.enclosures[0])):
        body = client.get(reverse(f"fabric:{name}_detail", args=[target.pk])).content.decode()
        assert 'id="health"' in body and "No health samples yet" in body
        assert reverse(f"fabric:{name}_maintenance", args=[target.pk]) in body


def test_the_confirmation_lists_what_depends_on_a_switch(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    Device.objects.filter(pk=small.gpus[4].pk).update(
        state=DeviceState.BOUND, bound_host=small.hosts[1]
    )
    client = client_as(admin_user)
    url = reverse("fabric:switch_maintenance", args=[small.switches[1].pk])
    page = client.get(url)
    body = page.content.decode()
    assert page.status_code == 200 and "<html" in body
    assert "Put sw-b in maintenance?" in body
    assert "gpu-b-0" in body and "cut off: no path to any host" in body
    assert "1 held device" in body and "bound to host-b" in body

    partial = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and 'id="maintenance-form"' in partial


def test_confirming_puts_it_in_maintenance_and_back(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    switch = small.switches[0]
    url = reverse("fabric:switch_maintenance", args=[switch.pk])
    detail = reverse("fabric:switch_detail", args=[switch.pk])

    response = client.post(url, {"on": "1", "reason": "firmware"})
    assert (response.status_code, response["Location"]) == (302, detail)
    assert Switch.objects.get(pk=switch.pk).state == ComponentState.MAINTENANCE
    body = client.get(detail).content.decode()
    assert "is in maintenance" in body and "Back in service" in body
    assert "put in maintenance: firmware" in body  # the change history

    response = client.post(url, {"on": "0"}, HTTP_HX_REQUEST="true")
    assert response["HX-Redirect"] == detail
    assert Switch.objects.get(pk=switch.pk).state == ComponentState.ACTIVE


def test_a_refusal_is_shown_and_changes_nothing(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    gpu = small.gpus[0]
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.RESERVED)
    client = client_as(admin_user)
    response = client.post(reverse("fabric:device_maintenance", args=[gpu.pk]), {"on": "1"})
    assert response.status_code == 302
    body = client.get(response["Location"]).content.decode()
    assert "reserved by a composition being built" in body
    assert Device.objects.get(pk=gpu.pk).state == DeviceState.RESERVED


@pytest.mark.parametrize("data", [{}, {"reason": "firmware"}, {"on": ""}, {"on": "maybe"}])
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_a_post_that_does_not_say_in_or_out_changes_nothing(
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    data: dict[str, str],
    htmx: bool,
) -> None:
    """A missing `on` is not "out of maintenance": the form always posts it."""
    gpu = small.gpus[0]
    maintenance_set(target=gpu, on=True, actor=admin_user)
    client = client_as(admin_user)
    url = reverse("fabric:device_maintenance", args=[gpu.pk])
    detail = reverse("fabric:device_detail", args=[gpu.pk])
    response = client.post(url, data, headers={"HX-Request": "true"} if htmx else {})
    assert (response.get("HX-Redirect") if htmx else response["Location"]) == detail
    assert Device.objects.get(pk=gpu.pk).state == DeviceState.MAINTENANCE
    body = client.get(detail).content.decode()
    assert "Nothing changed: say whether gpu-a-0 goes in maintenance or back in service." in body
    assert "back in service (" not in body


@pytest.mark.parametrize("on", ["0", "false", "off"])
def test_the_spellings_of_out_take_it_out(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client], on: str
) -> None:
    gpu = small.gpus[0]
    maintenance_set(target=gpu, on=True, actor=admin_user)
    client_as(admin_user).post(reverse("fabric:device_maintenance", args=[gpu.pk]), {"on": on})
    assert Device.objects.get(pk=gpu.pk).state == DeviceState.FREE


def test_a_device_in_an_enclosure_in_maintenance_is_not_available(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    url = reverse("fabric:device_detail", args=[small.gpus[0].pk])
    assert "it can be placed in a composition now" in client.get(url).content.decode()
    small.enclosures[0].__class__.objects.filter(pk=small.enclosures[0].pk).update(
        state=ComponentState.MAINTENANCE
    )
    assert "it can be placed in a composition now" not in client.get(url).content.decode()
