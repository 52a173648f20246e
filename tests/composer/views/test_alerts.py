"""The alert pages: who sees which alert and how much of its blast radius, filters,
acknowledging (operators only, audited), the navbar count, and the live table.

The alerts are made the real way: compositions on the tiny simulated world, a fault injected
into it, a health poll (tests/composer/services/test_health_poll.py does the same).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from composer.models import Composition
from composer.services.health_poll import health_poll_run
from fabric.models import Alert, ChangeRecord, FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.factories.composer import TenantFactory
from tests.support.compose import composed
from tests.support.personas import PERSONAS

pytestmark = pytest.mark.django_db

ALERTS = reverse("composer:alert_list")
L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}]}
HTMX_TABLE: dict[str, Any] = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "alert-table"}


@dataclass
class World:
    manager: FabricManager
    acme_box: Composition  # Acme's, hurt by `hurts_two`
    other_box: Composition  # Initech's, hurt by the same alert
    hurts_two: Alert  # the failed L40S enclosure: Acme's and Initech's compositions
    hurts_none: Alert  # the failed H100 enclosure: no composition (operators only)


def _compose(tenant: Any, user: Any, name: str) -> Composition:
    return composed(tenant=tenant, user=user, name=name, spec=L40S)


def _fail_enclosure(manager: FabricManager, name: str) -> Alert:
    fault_inject(manager=manager, target_type="enclosure", target_id=name, action="fail")
    return Alert.objects.get(pk__in=health_poll_run(manager=manager).opened)


@pytest.fixture
def world(sim_manager: FabricManager, acme: Any, alice: Any, admin_user: Any) -> World:
    """Acme and Initech each hold an L40S in the same chassis, which fails; then the H100
    chassis, which nobody uses, fails too (the newer alert)."""
    inventory_sync(manager=sim_manager)
    initech = TenantFactory(name="Initech", slug="initech")
    acme_box = _compose(acme, alice, "acme-infer")
    other_box = _compose(initech, admin_user, "initech-infer")
    l40s = acme_box.allocations.get(device__kind="gpu").device.enclosure
    assert other_box.allocations.get(device__kind="gpu").device.enclosure == l40s
    health_poll_run(manager=sim_manager)  # a healthy baseline
    hurts_two = _fail_enclosure(sim_manager, l40s.name)
    h100 = sim_manager.enclosures.filter(devices__kind="gpu").exclude(pk=l40s.pk).distinct().get()
    hurts_none = _fail_enclosure(sim_manager, h100.name)
    return World(sim_manager, acme_box, other_box, hurts_two, hurts_none)


def _ids(response: Any) -> list[int]:
    return [row.alert.pk for row in response.context["rows"]]


# --- who sees what ------------------------------------------------------------------------------


def test_operators_see_every_alert_newest_first_with_the_whole_blast_radius(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(ALERTS)
    assert response.status_code == 200
    assert _ids(response) == [world.hurts_none.pk, world.hurts_two.pk]
    body = response.content.decode()
    row = response.context["rows"][1]
    assert {c.name for c in row.compositions} == {"acme-infer", "initech-infer"}
    assert sorted(row.tenants) == ["Acme", "Initech"]
    assert row.device_count >= 2
    assert world.hurts_two.source_name in body
    assert reverse("composer:composition_detail", args=[world.other_box.pk]) in body
    assert body.count('class="btn btn-sm btn-outline-primary ack-button"') == 2
    assert 'data-live-type="fabric.alert alert.acknowledged"' in body
    assert 'id="alert-count" data-count="2"' in body  # the navbar badge


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_acme_members_see_the_alert_that_hurts_acme_with_only_their_composition(
    who: str, world: World, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    response = client_as(persona(who)).get(ALERTS)
    assert response.status_code == 200
    assert _ids(response) == [world.hurts_two.pk]
    row = response.context["rows"][0]
    assert [c.name for c in row.compositions] == ["acme-infer"]
    assert row.tenants == []
    body = response.content.decode()
    assert "initech" not in body.lower()
    assert "Your compositions:" in body and "acme-infer" in body
    assert "ack-button" not in body  # operators' work
    assert 'id="alert-count" data-count="1"' in body


def test_a_tenant_whose_compositions_are_unhurt_sees_no_alert(
    world: World, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(carol).get(ALERTS)
    assert response.status_code == 200
    assert _ids(response) == []
    body = response.content.decode()
    assert "No alerts concern your compositions." in body
    assert world.hurts_two.message not in body
    assert 'id="alert-count"' not in body


def test_the_page_needs_a_login(world: World, client: Client) -> None:
    response = client.get(ALERTS)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- filters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["hurts_none", "hurts_two"]),
        ({"state": "all"}, ["hurts_none", "hurts_two"]),
        ({"state": "open"}, ["hurts_none", "hurts_two"]),
        ({"state": "closed"}, []),
        ({"severity": "critical"}, ["hurts_none", "hurts_two"]),
        ({"severity": ["info", "warning"]}, []),
        ({"source_type": "enclosure"}, ["hurts_none", "hurts_two"]),
        ({"source_type": ["switch", "device"]}, []),
    ],
)
def test_filters_by_state_severity_and_source(
    query: dict[str, Any],
    expected: list[str],
    world: World,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(admin_user).get(ALERTS, query)
    assert response.status_code == 200
    assert _ids(response) == [getattr(world, name).pk for name in expected]


def test_the_state_filter_finds_closed_alerts(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    Alert.objects.filter(pk=world.hurts_none.pk).update(state="closed", closed_at=timezone.now())
    client = client_as(admin_user)
    assert _ids(client.get(ALERTS, {"state": "closed"})) == [world.hurts_none.pk]
    assert _ids(client.get(ALERTS, {"state": "open"})) == [world.hurts_two.pk]


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ({"state": "maybe"}, 400, "State:"),
        ({"severity": "dire"}, 400, "Severity:"),
        ({"source_type": "toaster"}, 400, "Source:"),
        ({"page": "two"}, 400, "is not a page number"),
        ({"page": "9"}, 404, "does not exist"),
    ],
)
def test_bad_filter_values_are_an_error_naming_the_field(
    query: dict[str, str],
    status: int,
    message: str,
    world: World,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(admin_user).get(ALERTS, query)
    assert response.status_code == status
    assert any(message in error for error in response.context["errors"])
    assert message in response.content.decode()


def test_htmx_gets_the_table_alone_for_the_same_filters(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(ALERTS, {"severity": "critical"}, **HTMX_TABLE)
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body and body.lstrip().startswith('<div id="alert-table"')
    # The table reloads itself from the same address: the filters stay.
    assert 'hx-get="/alerts/?severity=critical"' in body
    assert 'hx-trigger="refresh"' in body
    assert "HX-Target" in response["Vary"]


def test_a_page_of_alerts_costs_the_same_queries_at_any_size(
    world: World, admin_user: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    client.get(ALERTS)  # warm up (session, content types)
    with CaptureQueriesContext(connection) as few:
        client.get(ALERTS, **HTMX_TABLE)
    now = timezone.now()
    Alert.objects.bulk_create(
        Alert(
            manager=world.manager,
            source_type="device",
            source_id=1000 + i,
            source_name=f"gpu-x-{i}",
            rule="element_failed",
            severity="warning",
            message=f"gpu-x-{i} degraded",
            opened_at=now,
            last_seen_at=now,
            blast_radius=world.hurts_two.blast_radius,
        )
        for i in range(12)
    )
    with CaptureQueriesContext(connection) as many:
        response = client.get(ALERTS, **HTMX_TABLE)
    assert len(response.context["rows"]) == 14
    assert len(many.captured_queries) == len(few.captured_queries)


# --- acknowledging ------------------------------------------------------------------------------


def _ack_url(alert: Alert) -> str:
    return reverse("composer:alert_acknowledge", args=[alert.pk])


def test_an_operator_acknowledges_an_alert_and_it_is_audited(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    response = client.post(_ack_url(world.hurts_two), HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    assert response["HX-Trigger"] == "refresh"  # the table the button sits in reloads
    alert = Alert.objects.get(pk=world.hurts_two.pk)
    assert alert.acknowledged_by == admin_user and alert.acknowledged_at is not None
    record = ChangeRecord.objects.get(target_type="alert", target_id=alert.pk)
    assert (record.actor, record.source, record.remote_addr) == (
        admin_user,
        "console",
        "127.0.0.1",
    )
    assert alert.state == "open"  # acknowledging does not close it

    # Once only: a second click changes nothing and records nothing.
    client.post(_ack_url(world.hurts_two), HTTP_HX_REQUEST="true")
    assert ChangeRecord.objects.filter(target_type="alert", target_id=alert.pk).count() == 1

    body = client.get(ALERTS).content.decode()
    assert f'data-alert-id="{alert.pk}"' in body
    assert body.count("ack-button") == 1  # only the other alert still has the button
    assert "admin, " in body


def test_a_plain_form_post_goes_back_where_it_came_from(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    back = f"{ALERTS}?state=open"
    response = client.post(_ack_url(world.hurts_none), {"next": back})
    assert response.status_code == 302 and response["Location"] == back
    elsewhere = client.post(_ack_url(world.hurts_two), {"next": "https://evil.example/"})
    assert elsewhere["Location"] == ALERTS
    assert Alert.objects.filter(acknowledged_by=admin_user).count() == 2


@pytest.mark.parametrize(("who", "status"), [("alice", 403), ("bob", 403), ("carol", 404)])
def test_tenants_cannot_acknowledge(
    who: str,
    status: int,
    world: World,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(persona(who)).post(_ack_url(world.hurts_two), HTTP_HX_REQUEST="true")
    assert response.status_code == status
    assert not Alert.objects.filter(acknowledged_at__isnull=False).exists()
    assert not ChangeRecord.objects.filter(target_type="alert").exists()


def test_an_alert_that_hurts_nobody_is_a_404_to_every_tenant(
    world: World, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    assert client_as(alice).post(_ack_url(world.hurts_none)).status_code == 404


def test_acknowledging_takes_a_post(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    assert client_as(admin_user).get(_ack_url(world.hurts_two)).status_code == 405


# --- the navbar entry -------------------------------------------------------------------------


@pytest.mark.parametrize(("who", "count"), [("admin_user", 2), ("alice", 1), ("carol", 0)])
def test_the_navbar_counts_the_open_alerts_the_viewer_may_see(
    who: str,
    count: int,
    world: World,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(persona(who)).get(
        reverse("composer:alert_count"), HTTP_HX_CURRENT_URL="http://testserver/alerts/"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="alert-nav"' in body and "<html" not in body
    assert 'data-live-type="fabric.alert"' in body
    assert (f'data-count="{count}"' in body) if count else ('id="alert-count"' not in body)
    assert "nav-alerts active" in body  # drawn for the alert page that asked


def test_the_navbar_entry_is_highlighted_on_the_alert_page_only(
    world: World, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    count = reverse("composer:alert_count")
    on_dashboard = client.get(count, HTTP_HX_CURRENT_URL="http://testserver/")
    assert "nav-alerts active" not in on_dashboard.content.decode()
    nowhere = client.get(count, HTTP_HX_CURRENT_URL="http://testserver/no/such/page/")
    assert "nav-alerts active" not in nowhere.content.decode()


@pytest.mark.parametrize("who", PERSONAS)
def test_every_page_has_the_alert_entry_and_the_toast_area(
    who: str, world: World, persona: Callable[[str], Any], client_as: Callable[[Any], Client]
) -> None:
    body = client_as(persona(who)).get(reverse("composer:dashboard")).content.decode()
    assert 'id="alert-nav"' in body
    assert 'id="toast-area"' in body
    viewer = "operator" if who == "admin_user" else "tenant"
    assert f'data-viewer="{viewer}"' in body
    assert body.index("js/live.js") < body.index("js/alerts.js")
