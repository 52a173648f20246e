"""The audit page: every trail for operators, a tenant's own things for its members, the
filters, the empty states, the exports, and a query count that does not grow with rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from composer.models import StateChange
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from tests.support.audit import (
    AuditWorld,
    keys_for_acme,
    keys_for_globex,
    keys_for_operator,
)

pytestmark = pytest.mark.django_db

URL = "/audit/"


def _keys(response: Any) -> list[str]:
    return [entry.key for entry in response.context["entries"]]


def test_the_page_is_at_audit_and_linked_in_the_navbar_for_everyone(
    audit_trail: AuditWorld, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    assert reverse("composer:audit_list") == URL
    page = client_as(alice).get(reverse("composer:dashboard")).content.decode()
    assert f'href="{URL}"' in page


def test_operator_sees_every_trail_newest_first_with_before_and_after(
    audit_trail: AuditWorld, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(URL)
    assert response.status_code == 200
    assert _keys(response) == keys_for_operator(audit_trail)
    html = response.content.decode()
    # A fabric change, field by field, with who and where from.
    row = html.split(f'id="audit-change-{audit_trail.device_change.pk}"')[1].split("</tr>")[0]
    assert "gpu-a-01-1" in row and "admin" in row and "192.0.2.7" in row
    assert "free" in row and "maintenance" in row and "fan swap" in row
    assert f'href="{reverse("fabric:device_detail", args=[4242])}"' in row
    # A composition's state change: before -> after, why, and its page.
    row = html.split(f'id="audit-state-{audit_trail.acme_placing.pk}"')[1].split("</tr>")[0]
    assert "requested" in row and "placing" in row and "Placing on a host" in row
    assert f'href="{reverse("composer:composition_detail", args=[audit_trail.acme_box.pk])}"' in row
    assert "compose job 7" in row
    assert "10.9.9.9" in html  # the other tenant's address, for operators


@pytest.mark.parametrize("kind", ["rack", "power_feed", "link"])
def test_a_rack_feed_or_link_change_links_its_page(
    kind: str, db: None, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    record = ChangeRecord.objects.create(
        target_type=kind, target_id=31, target_label="x", changes={"health": ["ok", "critical"]}
    )
    html = client_as(admin_user).get(URL).content.decode()
    row = html.split(f'id="audit-change-{record.pk}"')[1].split("</tr>")[0]
    assert f'href="{reverse(f"fabric:{kind}_detail", args=[31])}"' in row


@pytest.mark.parametrize("name", ["alice", "bob"])
def test_acme_members_see_only_their_own_compositions_and_jobs(
    audit_trail: AuditWorld,
    name: str,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(persona(name)).get(URL)
    assert response.status_code == 200
    assert _keys(response) == keys_for_acme(audit_trail)
    html = response.content.decode()
    for hidden in ("gpu-a-01-1", "globex-infer", "sim-east", "Reconcile run", "10.0.0.5"):
        assert hidden not in html  # no fabric rows, no other tenant, no addresses


def test_carol_sees_only_globex(
    audit_trail: AuditWorld, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(carol).get(URL)
    assert _keys(response) == keys_for_globex(audit_trail)
    assert "acme-train" not in response.content.decode()


def test_anonymous_is_sent_to_log_in(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"who": "ALICE"}, lambda w: [f"job-{w.acme_job.pk}", f"state-{w.acme_requested.pk}"]),
        ({"kind": "device"}, lambda w: [f"change-{w.device_change.pk}"]),
        ({"kind": "composition", "label": "globex"}, lambda w: [f"state-{w.globex_requested.pk}"]),
        ({"label": "gpu-a"}, lambda w: [f"change-{w.device_change.pk}"]),
        (
            {"since": "2026-11-30T09:05", "until": "2026-11-30T09:06"},
            lambda w: [f"job-{w.sync_job.pk}", f"change-{w.device_change.pk}"],
        ),
        (
            {"source": "compose job"},
            lambda w: [f"state-{w.acme_placing.pk}", f"job-{w.acme_job.pk}"],
        ),
        (
            {"source": "192.0.2"},
            lambda w: [f"reconcile-{w.reconcile.pk}", f"change-{w.device_change.pk}"],
        ),
        ({"kind": "reconcile"}, lambda w: [f"reconcile-{w.reconcile.pk}"]),
        ({"kind": "job", "source": "inventory_sync"}, lambda w: [f"job-{w.sync_job.pk}"]),
    ],
)
def test_operator_filters(
    audit_trail: AuditWorld,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    query: dict[str, str],
    expected: Callable[[AuditWorld], list[str]],
) -> None:
    response = client_as(admin_user).get(URL, query)
    assert response.status_code == 200
    assert _keys(response) == expected(audit_trail)


def test_a_tenant_cannot_find_its_entries_by_address(
    audit_trail: AuditWorld, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    assert _keys(client_as(alice).get(URL, {"source": "10.0.0.5"})) == []
    assert _keys(client_as(alice).get(URL, {"source": "console"})) == [
        f"state-{audit_trail.acme_requested.pk}"
    ]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"kind": "spaceship"}, "What"),
        ({"since": "yesterday"}, "From"),
        ({"since": "2026-11-30T10:00", "until": "2026-11-30T09:00"}, "To"),
        ({"who": "x" * 151}, "Who"),
        ({"page": "abc"}, "Page"),
        ({"export": "xml"}, "Export"),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(
    audit_trail: AuditWorld,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    query: dict[str, str],
    field: str,
) -> None:
    response = client_as(admin_user).get(URL, query)
    assert response.status_code == 400
    assert field in " ".join(response.context["errors"])


def test_a_tenant_may_not_ask_for_fabric_kinds(
    audit_trail: AuditWorld, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(alice).get(URL, {"kind": "device"})
    assert response.status_code == 400
    assert "gpu-a-01-1" not in response.content.decode()


def test_empty_states_say_why(
    db: None, admin_user: Any, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    nothing = client_as(admin_user).get(URL).content.decode()
    assert "Nothing has been recorded yet" in nothing
    assert "No entries match" not in nothing
    filtered = client_as(admin_user).get(URL, {"who": "nobody"}).content.decode()
    assert "No entries match these filters" in filtered
    mine = client_as(alice).get(URL).content.decode()
    assert "Nothing has been recorded about your compositions" in mine


def test_pages_keep_the_filters_in_their_links(
    audit_trail: AuditWorld, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    ChangeRecord.objects.bulk_create(
        ChangeRecord(
            target_type="device", target_id=i, target_label=f"gpu-{i}", action=ChangeAction.CHANGED
        )
        for i in range(60)
    )
    first = client_as(admin_user).get(URL, {"kind": "device"})
    assert len(first.context["entries"]) == 50
    assert "?kind=device&amp;page=2" in first.content.decode()
    second = client_as(admin_user).get(URL, {"kind": "device", "page": "2"})
    assert len(second.context["entries"]) == 11


def _export(client: Client, form: str, **query: str) -> Any:
    response = client.get(URL, {**query, "export": form})
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]


def test_csv_export_carries_what_the_filters_select(
    audit_trail: AuditWorld, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    rows = list(csv.DictReader(io.StringIO(_export(client, "csv", kind="device"))))
    assert len(rows) == 1
    assert rows[0]["label"] == "gpu-a-01-1"
    assert rows[0]["changes"] == "state: free -> maintenance"
    assert rows[0]["who"] == "admin" and rows[0]["remote_addr"] == "192.0.2.7"
    everything = list(csv.DictReader(io.StringIO(_export(client, "csv"))))
    assert len(everything) == len(keys_for_operator(audit_trail))


def test_json_export_is_scoped_to_the_tenant(
    audit_trail: AuditWorld, alice: Any, client_as: Callable[[Any], Client]
) -> None:
    entries = json.loads(_export(client_as(alice), "json"))
    assert [e["id"] for e in entries] == keys_for_acme(audit_trail)
    assert {e["kind"] for e in entries} == {"composition", "job"}
    assert all(e["remote_addr"] is None for e in entries)
    placing = next(e for e in entries if e["id"] == f"state-{audit_trail.acme_placing.pk}")
    assert placing["changes"] == [{"field": "state", "before": "requested", "after": "placing"}]


def test_the_export_reads_more_than_one_batch(
    audit_trail: AuditWorld, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    StateChange.objects.bulk_create(
        StateChange(composition=audit_trail.acme_box, to_state="requested") for _ in range(520)
    )
    entries = json.loads(_export(client_as(admin_user), "json", kind="composition"))
    assert len(entries) == 523


def test_query_count_does_not_grow_with_rows(
    audit_trail: AuditWorld, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    client.get(URL)  # session, content types: warmed once
    with CaptureQueriesContext(connection) as few:
        assert client.get(URL).status_code == 200
    older = audit_trail.at(-60)  # below the trail's rows: the page shows every trail
    ChangeRecord.objects.bulk_create(
        ChangeRecord(
            target_type="switch",
            target_id=i,
            target_label=f"sw-{i}",
            action=ChangeAction.CHANGED,
            changes={"health": ["ok", "degraded"]},
            actor=admin_user,
        )
        for i in range(80)
    )
    StateChange.objects.bulk_create(
        StateChange(composition=audit_trail.acme_box, to_state="requested") for _ in range(40)
    )
    ChangeRecord.objects.filter(target_type="switch").update(at=older)
    StateChange.objects.filter(from_state="").exclude(reason__gt="").update(at=older)
    with CaptureQueriesContext(connection) as many:
        response = client.get(URL)
    assert response.status_code == 200
    assert len(response.context["entries"]) == 50
    assert {key.split("-")[0] for key in _keys(response)} == {"change", "state", "job", "reconcile"}
    assert len(many) == len(few)


def test_a_compositions_state_history_shows_addresses_to_operators_only(
    audit_trail: AuditWorld, admin_user: Any, carol: Any, client_as: Callable[[Any], Client]
) -> None:
    """The composition page's history follows the audit page: the tenant reads who and why,
    never the address a change came from (an operator's, often)."""
    url = reverse("composer:composition_detail", args=[audit_trail.globex_box.pk])
    seen_by_carol = client_as(carol).get(url)
    assert seen_by_carol.status_code == 200
    assert "10.9.9.9" not in seen_by_carol.content.decode()
    assert "10.9.9.9" in client_as(admin_user).get(url).content.decode()
