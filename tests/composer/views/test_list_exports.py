"""The composer's list pages (compositions, jobs, alerts) sort by their columns, export what
they show (every page the filters select, in the table's order) as CSV and JSON with the
page's scoping, and say why they are empty."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import AlertAudience, Composition, Job, Membership
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert
from tests.factories.composer import JobFactory
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db

COMPOSITIONS = reverse("composer:composition_list")
JOBS = reverse("composer:job_list")
ALERTS = reverse("composer:alert_list")


def _body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def _csv(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(_body(response))))


def _json(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    return list(json.loads(_body(response)))


# --- compositions -------------------------------------------------------------------------------


@pytest.fixture
def boxes(small: SmallFabric, acme: Any, globex: Any, alice: Any, carol: Any) -> dict[str, Any]:
    """Three of Acme's (one ready on a host, one never ready) and one of Globex's."""
    now = timezone.now()
    made = {
        "b": Composition.objects.create(
            tenant=acme,
            name="acme-b",
            requested_by=alice,
            host=small.hosts[0],
            state=CompositionState.READY,
            score=0.5,
            ready_at=now - timedelta(hours=2),
        ),
        "a": Composition.objects.create(
            tenant=acme,
            name="acme-a",
            requested_by=alice,
            host=small.hosts[1],
            state=CompositionState.READY,
            score=0.9,
            ready_at=now - timedelta(hours=1),
        ),
        "c": Composition.objects.create(
            tenant=acme, name="acme-c", state=CompositionState.REJECTED
        ),
        "globex": Composition.objects.create(
            tenant=globex,
            name="globex-secret",
            requested_by=carol,
            host=small.hosts[1],
            state=CompositionState.READY,
            ready_at=now,
        ),
    }
    return made


def test_compositions_sort_by_a_column_and_say_so_in_its_header(
    boxes: dict[str, Any], admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    response = client.get(COMPOSITIONS, {"ordering": "name"})
    assert response.status_code == 200
    assert [c.name for c in response.context["page"]] == [
        "acme-a",
        "acme-b",
        "acme-c",
        "globex-secret",
    ]
    body = response.content.decode()
    assert 'aria-sort="ascending"' in body
    assert 'href="?ordering=-name"' in body and 'href="?ordering=tenant"' in body
    # Rows without a value sort last whichever way: the one never ready is last both times.
    ready = [c.name for c in client.get(COMPOSITIONS, {"ordering": "-ready"}).context["page"]]
    assert ready == ["globex-secret", "acme-a", "acme-b", "acme-c"]
    ready = [c.name for c in client.get(COMPOSITIONS, {"ordering": "ready"}).context["page"]]
    assert ready == ["acme-b", "acme-a", "globex-secret", "acme-c"]
    # Without an ordering the table is newest first, and its Created header says so.
    default = client.get(COMPOSITIONS)
    assert default.context["page"][0].name == "globex-secret"
    assert 'data-sort="created"' in default.content.decode()
    # The sort links keep the filters; the filter bar keeps the sort.
    filtered = client.get(COMPOSITIONS, {"ordering": "-score", "q": "acme"}).content.decode()
    assert 'href="?ordering=score&amp;q=acme"' in filtered
    assert '<input type="hidden" name="ordering" value="-score">' in filtered


def test_a_bad_sort_or_export_of_compositions_is_a_400_naming_it(
    boxes: dict[str, Any], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    bad = client.get(COMPOSITIONS, {"ordering": "banana"})
    assert bad.status_code == 400
    assert "Ordering: Select a valid choice. banana is not one" in bad.content.decode()
    export = client.get(COMPOSITIONS, {"export": "xlsx"})
    assert export.status_code == 400
    assert "Export: must be csv or json" in export.content.decode()


def test_a_composition_export_carries_every_page_the_filters_select_in_the_pages_order(
    acme: Any, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    for i in range(60):  # more than a page of 50
        Composition.objects.create(tenant=acme, name=f"box-{i:02}", state=CompositionState.READY)
    Composition.objects.create(tenant=acme, name="other", state=CompositionState.FAILED)
    client = client_as(admin_user)
    query = {"state": "ready", "ordering": "-name", "page": "2"}
    rows = _csv(client.get(COMPOSITIONS, {**query, "export": "csv"}))
    assert len(rows) == 60
    assert [r["name"] for r in rows][:2] == ["box-59", "box-58"]
    assert list(rows[0]) == [
        "id",
        "name",
        "tenant",
        "state",
        "template",
        "host",
        "score",
        "requested_by",
        "created_at",
        "ready_at",
        "released_at",
    ]
    as_json = _json(client.get(COMPOSITIONS, {**query, "export": "json"}))
    assert [r["name"] for r in as_json] == [r["name"] for r in rows]
    assert as_json[0]["tenant"] == "Acme" and as_json[0]["host"] is None
    response = client.get(COMPOSITIONS, {"state": "ready"})
    assert response["Content-Type"].startswith("text/html")
    assert 'href="?state=ready&amp;export=csv"' in response.content.decode()


def test_a_member_exports_only_their_tenants_compositions_as_the_table_shows_them(
    boxes: dict[str, Any], alice: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(alice)
    rows = _json(client.get(COMPOSITIONS, {"export": "json", "ordering": "name"}))
    assert [r["name"] for r in rows] == ["acme-a", "acme-b", "acme-c"]
    # One tenant: no tenant column on the page, none in the export; their own hosts, as the
    # table shows them.
    assert "tenant" not in rows[0]
    assert rows[0]["host"] == boxes["a"].host.name
    body = _body(client.get(COMPOSITIONS, {"export": "csv", "tenant": "globex"}))
    assert "globex" not in body
    # A sort by tenant is theirs too, over their own rows only.
    by_tenant = _csv(client.get(COMPOSITIONS, {"export": "csv", "ordering": "tenant"}))
    assert {r["name"] for r in by_tenant} == {"acme-a", "acme-b", "acme-c"}


def test_a_member_of_two_tenants_sees_and_exports_the_tenant_column(
    boxes: dict[str, Any], alice: Any, globex: Any, client_as: Callable[[Any], Client]
) -> None:
    Membership.objects.create(user=alice, tenant=globex, role="member")
    rows = _csv(client_as(alice).get(COMPOSITIONS, {"export": "csv", "ordering": "-tenant"}))
    assert [r["tenant"] for r in rows] == ["Globex", "Acme", "Acme", "Acme"]


def test_an_empty_composition_list_says_why(
    boxes: dict[str, Any], carol: Any, bob: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(carol)
    response = client.get(COMPOSITIONS, {"state": "failed", "q": "zz"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "No compositions match these filters" in body
    assert "(State: Failed; Search: “zz”)" in body
    assert "1 composition in all" in body
    assert 'data-export="csv"' not in body  # nothing to export
    Composition.objects.filter(tenant__slug="acme").delete()
    empty = client_as(bob).get(COMPOSITIONS, {"state": "failed"}).content.decode()
    assert "No compositions yet." in empty and "match these filters" not in empty


# --- jobs ---------------------------------------------------------------------------------------


@pytest.fixture
def jobs(acme: Any, globex: Any, admin_user: Any) -> dict[str, Job]:
    now = timezone.now()
    return {
        "sync": JobFactory.create(
            kind=JobKind.INVENTORY_SYNC,
            status=JobStatus.SUCCEEDED,
            target_label="fm-secret",
            requested_by=admin_user,
            started_at=now - timedelta(seconds=30),
            finished_at=now - timedelta(seconds=20),
        ),
        "long": JobFactory.create(
            kind=JobKind.COMPOSE,
            tenant=acme,
            status=JobStatus.SUCCEEDED,
            target_label="acme-train",
            started_at=now - timedelta(seconds=300),
            finished_at=now - timedelta(seconds=100),
        ),
        "queued": JobFactory.create(kind=JobKind.DECOMPOSE, tenant=acme, target_label="acme-x"),
        "globex": JobFactory.create(
            kind=JobKind.COMPOSE,
            tenant=globex,
            status=JobStatus.RUNNING,
            target_label="globex-secret",
            started_at=now - timedelta(seconds=5),
        ),
    }


def test_jobs_sort_by_duration_and_id(
    jobs: dict[str, Job], admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    longest = client.get(JOBS, {"ordering": "-duration"})
    assert longest.status_code == 200
    # Longest first; the job not started yet has no duration and comes last either way.
    assert [j.pk for j in longest.context["page"]] == [
        jobs[n].pk for n in ("long", "sync", "globex", "queued")
    ]
    shortest = client.get(JOBS, {"ordering": "duration"})
    assert [j.pk for j in shortest.context["page"]] == [
        jobs[n].pk for n in ("globex", "sync", "long", "queued")
    ]
    by_id = client.get(JOBS, {"ordering": "id"})
    assert [j.pk for j in by_id.context["page"]] == sorted(j.pk for j in jobs.values())
    assert 'aria-sort="ascending"' in by_id.content.decode()
    bad = client.get(JOBS, {"ordering": "-banana"})
    assert bad.status_code == 400 and "Ordering: " in bad.content.decode()


def test_a_job_export_carries_every_page_and_a_member_only_their_tenants_jobs(
    jobs: dict[str, Job], acme: Any, admin_user: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    for i in range(55):
        JobFactory.create(kind=JobKind.HEAL, tenant=acme, target_label=f"heal-{i}")
    rows = _csv(client_as(admin_user).get(JOBS, {"kind": "heal", "export": "csv", "page": "2"}))
    assert len(rows) == 55 and {r["kind"] for r in rows} == {"heal"}
    assert set(rows[0]) >= {"id", "kind", "target", "tenant", "status", "duration_s", "error"}
    member = _json(client_as(alice).get(JOBS, {"export": "json", "ordering": "-duration"}))
    assert len(member) == 57
    assert member[0]["id"] == jobs["long"].pk and member[0]["duration_s"] == 200.0
    assert member[-1]["duration_s"] is None
    text = json.dumps(member)
    assert "fm-secret" not in text and "globex-secret" not in text


def test_an_empty_job_list_says_which_filters_leave_it_empty(
    jobs: dict[str, Job], carol: Any, client_as: Callable[[Any], Client]
) -> None:
    body = client_as(carol).get(JOBS, {"status": ["failed", "cancelled"]}).content.decode()
    assert "No jobs match these filters</strong> (Status: Failed, Cancelled)" in body
    assert "1 job in all" in body


# --- alerts -------------------------------------------------------------------------------------


def _alert(small: SmallFabric, i: int, **fields: Any) -> Alert:
    now = timezone.now()
    device = small.gpus[i]
    values: dict[str, Any] = {
        "manager": small.manager,
        "source_type": AlertSource.DEVICE,
        "source_id": device.pk,
        "source_name": device.name,
        "rule": rules.ELEMENT_FAILED,
        "severity": AlertSeverity.CRITICAL,
        "message": f"{device.name} failed: the manager reports Critical",
        "opened_at": now - timedelta(minutes=10 - i),
        "last_seen_at": now,
    }
    values.update(fields)
    return Alert.objects.create(**values)


@pytest.fixture
def alerts(small: SmallFabric, acme: Any, globex: Any) -> dict[str, Alert]:
    """Acme's failed GPU (the newest), Globex's degraded switch, and an info no one sees."""
    acme_box = Composition.objects.create(tenant=acme, name="acme-box", state="degraded")
    globex_box = Composition.objects.create(tenant=globex, name="globex-box", state="degraded")
    radius = {
        "effect": "lost",
        "device_count": 1,
        "host_count": 0,
        "compositions": [
            {"id": acme_box.pk, "name": "acme-box", "tenant_id": acme.pk, "state": "degraded"},
            {"id": globex_box.pk, "name": "globex-box", "tenant_id": globex.pk, "state": "ok"},
        ],
        "tenants": [acme.pk, globex.pk],
    }
    made = {
        "gpu": _alert(small, 2, occurrences=2, blast_radius=radius),
        "switch": _alert(
            small,
            1,
            source_type=AlertSource.SWITCH,
            source_id=small.switches[0].pk,
            source_name=small.switches[0].name,
            rule=rules.ELEMENT_DEGRADED,
            severity=AlertSeverity.WARNING,
            message=f"Switch {small.switches[0].name} degraded: fan",
            occurrences=7,
        ),
        "info": _alert(small, 0, severity=AlertSeverity.INFO, occurrences=3),
    }
    AlertAudience.objects.create(alert=made["gpu"], tenant=acme)
    AlertAudience.objects.create(alert=made["gpu"], tenant=globex)
    AlertAudience.objects.create(alert=made["switch"], tenant=globex)
    return made


def _alert_ids(response: Any) -> list[int]:
    assert response.status_code == 200, response.content[:300]
    return [row.alert.pk for row in response.context["rows"]]


def test_alerts_sort_by_severity_seen_and_closed(
    alerts: dict[str, Alert], admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    ids = {name: a.pk for name, a in alerts.items()}
    assert _alert_ids(client.get(ALERTS)) == [ids["gpu"], ids["switch"], ids["info"]]
    by_severity = client.get(ALERTS, {"ordering": "severity"})
    assert _alert_ids(by_severity) == [ids["gpu"], ids["switch"], ids["info"]]
    assert _alert_ids(client.get(ALERTS, {"ordering": "-severity"}))[0] == ids["info"]
    assert _alert_ids(client.get(ALERTS, {"ordering": "-seen"})) == [
        ids["switch"],
        ids["info"],
        ids["gpu"],
    ]
    Alert.objects.filter(pk=ids["info"]).update(state="closed", closed_at=timezone.now())
    # Open alerts have no closing time: last, whichever way.
    assert _alert_ids(client.get(ALERTS, {"ordering": "-closed"}))[0] == ids["info"]
    assert _alert_ids(client.get(ALERTS, {"ordering": "closed"}))[0] == ids["info"]
    bad = client.get(ALERTS, {"ordering": "source_name"})
    assert bad.status_code == 400 and "Ordering: " in bad.content.decode()


def test_operators_search_alerts_by_message_and_source_name(
    alerts: dict[str, Alert],
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(admin_user)
    by_name = client.get(ALERTS, {"q": small.gpus[2].name})
    assert _alert_ids(by_name) == [alerts["gpu"].pk]
    assert _alert_ids(client.get(ALERTS, {"q": "FAN"})) == [alerts["switch"].pk]


def test_members_search_alerts_by_the_words_they_are_shown_only(
    alerts: dict[str, Alert], small: SmallFabric, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(carol)
    # Carol reads "A switch your compositions depend on is degraded.": its name, the
    # manager's words ("fan") and another tenant's alert never match.
    assert _alert_ids(client.get(ALERTS, {"q": "switch your"})) == [alerts["switch"].pk]
    assert _alert_ids(client.get(ALERTS, {"q": "depend on"})) == [
        alerts["gpu"].pk,
        alerts["switch"].pk,
    ]
    for hidden in (small.switches[0].name, "fan", small.gpus[0].name):
        response = client.get(ALERTS, {"q": hidden})
        assert _alert_ids(response) == []
        assert "No alerts match these filters" in response.content.decode()


def test_a_member_exports_alerts_in_their_words_without_fabric_names(
    alerts: dict[str, Alert], small: SmallFabric, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(ALERTS, {"export": "json"})
    rows = _json(response)
    assert [r["id"] for r in rows] == [alerts["gpu"].pk]
    row = rows[0]
    assert row["message"] == "A device your compositions depend on failed."
    assert row["compositions"] == "acme-box"
    assert not {"source_name", "tenants", "acknowledged_by"} & set(row)
    text = json.dumps(rows)
    for hidden in (small.gpus[2].name, "globex-box", "the manager reports"):
        assert hidden not in text
    csv_rows = _csv(client_as(alice).get(ALERTS, {"export": "csv"}))
    assert csv_rows[0]["message"] == row["message"]


def test_an_operator_exports_every_alert_the_filters_select(
    alerts: dict[str, Alert],
    small: SmallFabric,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(admin_user)
    for i in range(3, 8):
        _alert(small, i, severity=AlertSeverity.WARNING)
    rows = _csv(client.get(ALERTS, {"severity": "warning", "ordering": "-seen", "export": "csv"}))
    assert len(rows) == 6 and rows[0]["id"] == str(alerts["switch"].pk)
    every = _json(client.get(ALERTS, {"export": "json"}))
    gpu = next(r for r in every if r["id"] == alerts["gpu"].pk)
    assert gpu["source_name"] == small.gpus[2].name
    assert gpu["tenants"] == "Acme, Globex"
    assert gpu["compositions"] == "acme-box, globex-box"
    assert gpu["blast_radius"] == "1 device lost"
    assert client.get(ALERTS, {"export": "pdf"}).status_code == 400


def test_an_empty_alert_list_says_why(
    alerts: dict[str, Alert], bob: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(bob)
    body = client.get(ALERTS, {"severity": "info", "state": "all"}).content.decode()
    assert "No alerts match these filters</strong> (Severity: Info)" in body
    assert "1 alert in all" in body
    AlertAudience.objects.filter(tenant__slug="acme").delete()
    none = client.get(ALERTS, {"severity": "info"}).content.decode()
    assert "No alerts concern your compositions." in none
