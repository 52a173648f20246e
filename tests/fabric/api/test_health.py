"""Health in the API: alerts (operators; tenants through the composer's scope), a device's
samples, and the maintenance action of devices, switches and enclosures."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import QuerySet
from django.utils import timezone

from fabric.choices import AlertState, ComponentState, DeviceState
from fabric.models import Alert, ChangeRecord, Device, HealthSample
from fabric.services.alerts import AlertScope, alert_scope, register_alert_scope
from tests.factories.fabric import SmallFabric
from tests.support.api import assert_error, count_queries, results

pytestmark = pytest.mark.django_db

TENANT_ALERT_KEYS = {
    "id",
    "url",
    "source_type",
    "rule",
    "severity",
    "state",
    "message",
    "opened_at",
    "last_seen_at",
    "closed_at",
    "occurrences",
    "is_flapping",
    "is_acknowledged",
    "blast_radius",
}


def make_alert(fabric: SmallFabric, **fields: Any) -> Alert:
    now = timezone.now()
    switch = fabric.switches[0]
    values: dict[str, Any] = {
        "manager": fabric.manager,
        "source_type": "switch",
        "source_id": switch.pk,
        "source_name": switch.name,
        "rule": "element_failed",
        "severity": "critical",
        "message": f"Switch {switch.name} failed",
        "opened_at": now,
        "last_seen_at": now,
        "blast_radius": {
            "domain": f"switch:{switch.pk}",
            "effect": "lost",
            "devices": [d.pk for d in fabric.gpus[:4]],
            "device_count": 4,
            "hosts": [],
            "host_count": 0,
            "switches": [switch.pk],
            "enclosures": [],
            "links": [],
            "compositions": [
                {"id": 1, "name": "acme-train", "tenant_id": 1, "state": "ready"},
                {"id": 2, "name": "globex-infer", "tenant_id": 2, "state": "ready"},
            ],
            "composition_count": 2,
            "tenants": [1, 2],
            "tenant_count": 2,
        },
    }
    values.update(fields)
    return Alert.objects.create(**values)


# --- alerts -----------------------------------------------------------------------------------


def test_operators_list_and_read_alerts(small: SmallFabric, api_as: Any, admin_user: Any) -> None:
    alert = make_alert(small)
    client = api_as(admin_user)
    (row,) = results(client.get("/api/v1/alerts/"))
    assert row["id"] == alert.pk
    assert row["source_url"].endswith(f"/api/v1/switches/{small.switches[0].pk}/")
    assert row["manager"] == {"id": small.manager.pk, "name": small.manager.name}
    assert row["blast_radius"]["device_count"] == 4
    assert row["acknowledged_by"] is None
    detail = client.get(f"/api/v1/alerts/{alert.pk}/").json()
    assert detail == row


def test_alerts_filter(small: SmallFabric, api_as: Any, admin_user: Any) -> None:
    old = timezone.now() - timedelta(hours=2)
    a = make_alert(small, opened_at=old, last_seen_at=old)
    b = make_alert(
        small, source_type="device", source_id=small.switches[0].pk + 1000, severity="warning"
    )
    c = make_alert(small, rule="temperature", state=AlertState.CLOSED, closed_at=timezone.now())
    client = api_as(admin_user)

    def ids(query: str) -> list[int]:
        return [row["id"] for row in results(client.get(f"/api/v1/alerts/?{query}"))]

    assert ids("state=open") == [b.pk, a.pk]
    assert ids("severity=warning") == [b.pk]
    assert ids("severity=warning&severity=critical") == [c.pk, b.pk, a.pk]
    assert ids("source_type=switch") == [c.pk, a.pk]
    assert ids("rule=temperature") == [c.pk]
    since = (timezone.now() - timedelta(hours=1)).isoformat()
    assert ids(f"since={since.replace('+', '%2B')}") == [c.pk, b.pk]
    assert ids("is_acknowledged=false") == [c.pk, b.pk, a.pk]
    assert ids(f"manager={small.manager.pk}&source_id={small.switches[0].pk}") == [c.pk, a.pk]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=banana", "state"),
        ("severity=loud", "severity"),
        ("is_acknowledged=maybe", "is_acknowledged"),
        ("since=yesterday", "since"),
    ],
)
def test_bad_alert_filters_are_400_naming_the_field(
    small: SmallFabric, api_as: Any, admin_user: Any, query: str, field: str
) -> None:
    assert_error(api_as(admin_user).get(f"/api/v1/alerts/?{query}"), 400, "invalid", field=field)


def test_acknowledging_is_idempotent_and_audited(
    small: SmallFabric, api_as: Any, admin_user: Any
) -> None:
    alert = make_alert(small)
    client = api_as(admin_user)
    first = client.post(f"/api/v1/alerts/{alert.pk}/acknowledge/")
    assert first.status_code == 200
    assert first.json()["acknowledged_by"] == {"id": admin_user.pk, "username": "admin"}
    second = client.post(f"/api/v1/alerts/{alert.pk}/acknowledge/")
    assert second.json()["acknowledged_at"] == first.json()["acknowledged_at"]
    assert ChangeRecord.objects.filter(target_type="alert", target_id=alert.pk).count() == 1
    assert results(client.get("/api/v1/alerts/?is_acknowledged=true"))[0]["id"] == alert.pk


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_without_a_scope_tenant_members_get_404(
    small: SmallFabric,
    api_as: Any,
    persona: str,
    request: pytest.FixtureRequest,
    no_scope: None,
) -> None:
    alert = make_alert(small)
    client = api_as(request.getfixturevalue(persona))
    assert_error(client.get("/api/v1/alerts/"), 404, "not_found")
    assert_error(client.get(f"/api/v1/alerts/{alert.pk}/"), 404, "not_found")
    assert_error(client.post(f"/api/v1/alerts/{alert.pk}/acknowledge/"), 404, "not_found")


def test_anonymous_callers_get_401(small: SmallFabric, api: Any) -> None:
    alert = make_alert(small)
    assert_error(api.get("/api/v1/alerts/"), 401, "not_authenticated")
    assert_error(api.post(f"/api/v1/alerts/{alert.pk}/acknowledge/"), 401, "not_authenticated")


def _acme_alerts(user: Any, alerts: QuerySet[Alert]) -> QuerySet[Alert]:
    """A stand-in for the composer's scope: Acme members see alerts hurting tenant 1."""
    if user.username not in ("alice", "bob"):
        return alerts.none()
    return alerts.filter(pk__in=[a.pk for a in alerts if 1 in a.blast_radius.get("tenants", [])])


def _own_compositions(user: Any, radius: Any) -> dict[str, Any]:
    mine = [c for c in radius.get("compositions", []) if c["tenant_id"] == 1]
    return {"compositions": mine, "composition_count": len(mine)}


@pytest.fixture
def acme_scope() -> Iterator[None]:
    before = alert_scope()
    register_alert_scope(AlertScope(alerts=_acme_alerts, blast_radius=_own_compositions))
    yield
    register_alert_scope(before)


def test_a_registered_scope_shows_tenants_their_alerts_cut_down(
    small: SmallFabric, api_as: Any, alice: Any, carol: Any, acme_scope: None
) -> None:
    alert = make_alert(small)
    make_alert(small, source_id=small.switches[1].pk, blast_radius={"tenants": [2]})
    (row,) = results(api_as(alice).get("/api/v1/alerts/"))
    assert set(row) == TENANT_ALERT_KEYS
    assert row["id"] == alert.pk
    assert row["blast_radius"] == {
        "compositions": [{"id": 1, "name": "acme-train", "tenant_id": 1, "state": "ready"}],
        "composition_count": 1,
    }
    assert_error(
        api_as(alice).post(f"/api/v1/alerts/{alert.pk}/acknowledge/"), 403, "permission_denied"
    )
    assert results(api_as(carol).get("/api/v1/alerts/")) == []
    assert_error(api_as(carol).get(f"/api/v1/alerts/{alert.pk}/"), 404, "not_found")


def test_the_alert_list_costs_the_same_queries_for_more_alerts(
    small: SmallFabric, api_as: Any, admin_user: Any
) -> None:
    make_alert(small, acknowledged_by=admin_user, acknowledged_at=timezone.now())
    client = api_as(admin_user)
    few = count_queries(lambda: client.get("/api/v1/alerts/"))
    for gpu in small.gpus:
        make_alert(
            small,
            source_type="device",
            source_id=gpu.pk,
            acknowledged_by=admin_user,
            acknowledged_at=timezone.now(),
        )
    assert count_queries(lambda: client.get("/api/v1/alerts/")) == few


# --- samples ----------------------------------------------------------------------------------


@pytest.fixture
def samples(small: SmallFabric) -> list[HealthSample]:
    gpu = small.gpus[0]
    now = timezone.now()
    return [
        HealthSample.objects.create(
            manager=small.manager,
            target_type="device",
            target_id=gpu.pk,
            taken_at=now - timedelta(minutes=minutes),
            health="ok",
            temperature_c=40.0 + minutes,
            power_state="on",
            metrics={"power_w": 200.0},
        )
        for minutes in range(5)
    ]


def test_operators_read_a_devices_samples_newest_first(
    small: SmallFabric, samples: list[HealthSample], api_as: Any, admin_user: Any
) -> None:
    client = api_as(admin_user)
    url = f"/api/v1/devices/{small.gpus[0].pk}/health/"
    body = client.get(url).json()
    assert body["device"] == {"id": small.gpus[0].pk, "name": "gpu-a-0"}
    assert (body["count"], body["truncated"]) == (5, False)
    assert [row["temperature_c"] for row in body["results"]] == [40.0, 41.0, 42.0, 43.0, 44.0]
    assert body["results"][0]["metrics"] == {"power_w": 200.0}

    body = client.get(url, {"limit": 2}).json()
    assert (body["count"], body["truncated"]) == (2, True)
    older = client.get(url, {"until": body["results"][-1]["taken_at"]}).json()
    assert [row["temperature_c"] for row in older["results"]] == [42.0, 43.0, 44.0]
    since = (samples[2].taken_at - timedelta(seconds=1)).isoformat()
    assert client.get(url, {"since": since}).json()["count"] == 3
    assert client.get(f"/api/v1/devices/{small.gpus[1].pk}/health/").json()["results"] == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({"limit": 0}, "limit"), ({"limit": "x"}, "limit"), ({"since": "soon"}, "since")],
)
def test_bad_sample_queries_are_400_naming_the_field(
    small: SmallFabric, api_as: Any, admin_user: Any, params: dict[str, Any], field: str
) -> None:
    response = api_as(admin_user).get(f"/api/v1/devices/{small.gpus[0].pk}/health/", params)
    assert_error(response, 400, "invalid", field=field)


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_tenant_members_get_404_on_samples_and_maintenance(
    small: SmallFabric, api_as: Any, persona: str, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    gpu = small.gpus[0]
    assert client.get(f"/api/v1/devices/{gpu.pk}/").status_code == 200  # devices: everyone
    assert_error(client.get(f"/api/v1/devices/{gpu.pk}/health/"), 404, "not_found")
    response = client.post(f"/api/v1/devices/{gpu.pk}/maintenance/", {"on": True}, format="json")
    assert_error(response, 404, "not_found")
    assert Device.objects.get(pk=gpu.pk).state == DeviceState.FREE


# --- maintenance ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "which", "state"),
    [
        ("devices", "gpus", DeviceState.MAINTENANCE),
        ("switches", "switches", ComponentState.MAINTENANCE),
        ("enclosures", "enclosures", ComponentState.MAINTENANCE),
    ],
)
def test_operators_put_things_in_maintenance_and_back(
    small: SmallFabric, api_as: Any, admin_user: Any, prefix: str, which: str, state: str
) -> None:
    target = getattr(small, which)[0]
    client = api_as(admin_user)
    url = f"/api/v1/{prefix}/{target.pk}/maintenance/"
    before = client.get(url).json()
    assert (before["state"], before["changed"]) == (target.state, False)
    assert before["devices"]  # something depends on each of them

    body = client.post(url, {"on": True, "reason": "firmware"}, format="json").json()
    assert (body["state"], body["changed"]) == (state, True)
    assert client.post(url, {"on": True}, format="json").json()["changed"] is False
    record = ChangeRecord.objects.filter(target_id=target.pk, source="api").get()
    assert record.message == "put in maintenance: firmware"
    body = client.post(url, {"on": False}, format="json").json()
    assert body["state"] in (DeviceState.FREE, ComponentState.ACTIVE)


@pytest.mark.parametrize(
    ("payload", "field"),
    [({}, "on"), ({"on": "banana"}, "on"), ({"on": True, "reason": "x" * 201}, "reason")],
)
def test_bad_maintenance_input_is_400_naming_the_field(
    small: SmallFabric, api_as: Any, admin_user: Any, payload: dict[str, Any], field: str
) -> None:
    url = f"/api/v1/switches/{small.switches[0].pk}/maintenance/"
    assert_error(api_as(admin_user).post(url, payload, format="json"), 400, "invalid", field=field)


def test_a_reserved_device_is_refused_naming_the_field(
    small: SmallFabric, api_as: Any, admin_user: Any
) -> None:
    gpu = small.gpus[0]
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.RESERVED)
    response = api_as(admin_user).post(
        f"/api/v1/devices/{gpu.pk}/maintenance/", {"on": True}, format="json"
    )
    body = assert_error(response, 400, "invalid", field="on")
    assert "reserved" in body["detail"]


def test_the_schema_documents_the_health_endpoints(api: Any) -> None:
    paths = api.get("/api/schema/", {"format": "json"}).json()["paths"]
    for path in (
        "/api/v1/alerts/",
        "/api/v1/alerts/{id}/",
        "/api/v1/alerts/{id}/acknowledge/",
        "/api/v1/devices/{id}/health/",
        "/api/v1/devices/{id}/maintenance/",
        "/api/v1/switches/{id}/maintenance/",
        "/api/v1/enclosures/{id}/maintenance/",
    ):
        assert path in paths, path
    listing = paths["/api/v1/alerts/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listing["examples"]
