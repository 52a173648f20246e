"""The dashboard, for every persona."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from fabric.choices import DeviceState, Health, LinkState
from fabric.models import Device
from tests.factories.fabric import DeviceFactory, SmallFabric
from tests.support.personas import PERSONAS, TENANTS

pytestmark = pytest.mark.django_db

DASHBOARD = reverse("composer:dashboard")


@pytest.fixture
def busy(small: SmallFabric) -> SmallFabric:
    """Some devices bound, one failed, one degraded, a link down, one manager synced."""
    Device.objects.filter(name__in=["gpu-a-0", "gpu-a-1", "gpu-b-0"]).update(
        state=DeviceState.BOUND
    )
    Device.objects.filter(name="gpu-b-3").update(state=DeviceState.FAILED, health=Health.CRITICAL)
    Device.objects.filter(name="gpu-b-2").update(health=Health.WARNING)
    Device.objects.filter(name="mem-a-0").update(state=DeviceState.BOUND, allocated_gib=1024)
    small.links[-1].state = LinkState.DOWN
    small.links[-1].save()
    small.manager.last_synced_at = timezone.now()
    small.manager.save()
    return small


@pytest.mark.parametrize("who", PERSONAS)
def test_every_persona_sees_capacity_bars_and_health(
    who: str, busy: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(DASHBOARD)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('class="progress-stacked capacity-bar') == 2
    assert "H100 GPUs" in body and "CXL memory" in body
    caps = {c.pool.slug: c for c in response.context["capacities"]}
    assert (caps["h100"].allocated, caps["h100"].free, caps["h100"].unavailable) == (3, 4, 1)
    assert (caps["cxl-memory"].unit, caps["cxl-memory"].allocated) == ("GiB", 1024)
    assert "1 TiB free of 2 TiB" in body
    assert "4 free of 8" in body
    health = response.context["health"]
    assert (health.ok, health.warning, health.critical, health.unknown) == (8, 1, 1, 0)


def test_operators_also_see_the_fabric_and_each_managers_last_sync(
    busy: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(DASHBOARD)
    body = response.content.decode()
    fabric = response.context["fabric"]
    assert (fabric.hosts.total, fabric.enclosures.total, fabric.switches.total) == (2, 3, 2)
    assert (fabric.links_total, fabric.links_down) == (5, 1)
    assert 'id="fabric-summary"' in body
    assert "1 down" in body
    managers = body.split('id="manager-sync"', 1)[1]
    assert "fm-small" in managers and "synced" in managers


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_see_no_fabric_internals(
    who: str, busy: SmallFabric, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(DASHBOARD)
    body = response.content.decode()
    assert "fabric" not in response.context
    assert 'id="fabric-summary"' not in body and "fm-small" not in body
    assert reverse("fabric:host_list") not in body
    assert reverse("fabric:switch_list") not in body
    assert reverse("admin:index") not in body


def test_the_dashboard_costs_the_same_queries_whatever_the_inventory(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    client.get(DASHBOARD)
    with CaptureQueriesContext(connection) as few:
        client.get(DASHBOARD)
    DeviceFactory.create_batch(40, pool=small.pools[0])
    with CaptureQueriesContext(connection) as many:
        client.get(DASHBOARD)
    assert len(many.captured_queries) == len(few.captured_queries)


def test_an_empty_data_centre_still_renders(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(DASHBOARD)
    assert response.status_code == 200
    assert "No pools yet" in response.content.decode()
