"""/api/v1/alerts/ for tenants: an alert that hurts Acme is Acme's to see (with its own
compositions only), never Globex's; tenants read, operators acknowledge."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from composer.choices import CompositionState, EventType, JobKind
from composer.events import payload_for
from composer.models import Composition, Event, Job
from composer.services.compositions import composition_request
from composer.services.health_poll import health_poll_run
from composer.tasks import composition_compose_task
from fabric.models import Alert, FabricManager
from fabric.simulator.faults import fault_inject
from tests.support.api import results
from tests.support.compose import composed

pytestmark = pytest.mark.django_db
L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


@pytest.fixture
def alert(synced: FabricManager, acme: Any, alice: Any) -> Alert:
    composition = composition_request(tenant=acme, requested_by=alice, spec=L40S, name="c1")
    composition_compose_task.delay(
        Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk).pk
    )
    composition = Composition.objects.get(pk=composition.pk)
    assert composition.state == CompositionState.READY
    device = composition.allocations.get(device__kind="gpu").device
    fault_inject(
        manager=synced, target_type="enclosure", target_id=device.enclosure.name, action="fail"
    )
    return Alert.objects.get(pk__in=health_poll_run(manager=synced).opened)


def test_alice_sees_the_alert_with_her_composition_and_no_other_tenant(
    api_as: Any, alice: Any, alert: Alert
) -> None:
    rows = results(api_as(alice).get("/api/v1/alerts/"))
    assert [row["id"] for row in rows] == [alert.pk]
    radius = api_as(alice).get(f"/api/v1/alerts/{alert.pk}/").json()["blast_radius"]
    assert [c["name"] for c in radius["compositions"]] == ["c1"]
    assert "tenants" not in radius


def test_carol_sees_nothing_of_it(api_as: Any, carol: Any, alert: Alert) -> None:
    assert results(api_as(carol).get("/api/v1/alerts/")) == []
    assert api_as(carol).get(f"/api/v1/alerts/{alert.pk}/").status_code == 404


def test_tenants_cannot_acknowledge_operators_can(
    api_as: Any, alice: Any, admin_user: Any, alert: Alert
) -> None:
    url = f"/api/v1/alerts/{alert.pk}/acknowledge/"
    assert api_as(alice).post(url).status_code == 403
    response = api_as(admin_user).post(url)
    assert response.status_code == 200, response.content
    alert.refresh_from_db()
    assert alert.acknowledged_by == admin_user


def test_a_tenant_sees_its_compositions_not_the_fabrics_counts_or_names(
    api_as: Any, alice: Any, admin_user: Any, alert: Alert
) -> None:
    body = api_as(alice).get(f"/api/v1/alerts/{alert.pk}/").json()
    assert set(body["blast_radius"]) == {
        "effect",
        "compositions",
        "composition_count",
        "compositions_degraded",
        "compositions_degraded_count",
    }
    assert body["blast_radius"]["composition_count"] == 1
    assert body["message"] == "An enclosure your compositions depend on failed."
    assert alert.source_name not in str(body)
    listed = results(api_as(alice).get("/api/v1/alerts/"))[0]
    assert listed["message"] == body["message"] and alert.source_name not in str(listed)
    full = api_as(admin_user).get(f"/api/v1/alerts/{alert.pk}/").json()
    assert full["blast_radius"]["devices"] and full["blast_radius"]["tenants"]
    assert full["message"] == alert.message and alert.source_name in full["message"]


def test_a_tenant_whose_composition_is_only_degraded_sees_it_and_no_other(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    globex: Any,
    carol: Any,
    api_as: Any,
    client_as: Any,
) -> None:
    """A spine fails: both memory compositions keep their memory over the other spine, so
    nothing is hit and both are degraded. Each tenant hears of the alert (list page, API,
    event) with its own degraded composition, never the other's."""
    mine = composed(tenant=acme, user=alice, spec={"memory_gib": 128}, name="acme-mem")
    theirs = composed(tenant=globex, user=carol, spec={"memory_gib": 128}, name="globex-mem")
    health_poll_run(manager=synced)
    fault_inject(manager=synced, target_type="switch", target_id="cxl-spine-1", action="fail")
    (alert,) = Alert.objects.filter(pk__in=health_poll_run(manager=synced).opened)
    assert alert.blast_radius["compositions"] == []
    assert {c["name"] for c in alert.blast_radius["compositions_degraded"]} == {
        "acme-mem",
        "globex-mem",
    }

    radius = api_as(alice).get(f"/api/v1/alerts/{alert.pk}/").json()["blast_radius"]
    assert [c["name"] for c in radius["compositions_degraded"]] == ["acme-mem"]
    assert (radius["compositions"], radius["compositions_degraded_count"]) == ([], 1)
    assert [r["id"] for r in results(api_as(alice).get("/api/v1/alerts/"))] == [alert.pk]

    page = client_as(alice).get(reverse("composer:alert_list")).content.decode()
    row = page.split(f'id="alert-{alert.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "Your compositions degraded (fewer paths): " in row
    assert f'data-composition="{mine.pk}">acme-mem</a>' in row
    assert "globex" not in page and f'data-composition="{theirs.pk}"' not in row

    event = Event.objects.filter(type=EventType.FABRIC_ALERT).latest("pk")
    assert set(event.audience.values_list("tenant_id", flat=True)) == {acme.pk, globex.pk}
    cut = payload_for(event, tenant_id=acme.pk)
    assert cut is not None
    assert [c["name"] for c in cut["blast_radius"]["compositions_degraded"]] == ["acme-mem"]
    assert "globex" not in str(cut)
