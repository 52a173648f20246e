"""Every route, webhook and silence added, changed, ended or deleted leaves a ChangeRecord;
a tenant's are its members' to read on the audit trail, never another tenant's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from composer.models import ChangeAudience
from composer.notifications import (
    KEEP,
    Actor,
    route_create,
    route_delete,
    route_update,
    silence_create,
    silence_delete,
    silence_end,
    webhook_create,
    webhook_delete,
    webhook_update,
)
from fabric.models import ChangeRecord
from tests.support.api import results

pytestmark = pytest.mark.django_db


def _trail(kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (r.action, r.changes) for r in ChangeRecord.objects.filter(target_type=kind).order_by("pk")
    ]


def test_every_write_is_audited_with_each_field_before_and_after(
    acme: Any, as_alice: Actor
) -> None:
    hook, secret = webhook_create(
        tenant=acme, name="pager", url="https://p.acme.example/?token=abc123", actor=as_alice
    )
    webhook_update(webhook=hook, name="pager-2", url=KEEP, actor=as_alice)
    route = route_create(tenant=acme, name="r", webhook=hook, actor=as_alice)
    route_update(route=route, changes={"emails": ["a@acme.example"]}, actor=as_alice)
    silence = silence_create(
        tenant=acme, rule="temperature", duration=timedelta(hours=1), reason="hot", actor=as_alice
    )
    silence_end(silence=silence, actor=as_alice)
    silence_delete(silence=silence, actor=as_alice)
    route_delete(route=route, actor=as_alice)
    webhook_delete(webhook=hook, actor=as_alice)

    hooks = _trail("webhook")
    assert [a for a, _ in hooks] == ["added", "changed", "deleted"]
    assert hooks[0][1]["url"] == [None, "https://p.acme.example/?token=********"]
    assert hooks[0][1]["secret"] == [None, "set"] and str(secret) not in str(hooks)
    assert hooks[1][1] == {"name": ["pager", "pager-2"]}
    routes = _trail("notificationroute")
    assert [a for a, _ in routes] == ["added", "changed", "deleted"]
    assert routes[1][1] == {"emails": [[], ["a@acme.example"]]}
    silences = _trail("silence")
    assert [a for a, _ in silences] == ["added", "changed", "deleted"]
    assert set(silences[1][1]) == {"ends_at"}
    records = ChangeRecord.objects.filter(
        target_type__in=("webhook", "notificationroute", "silence")
    )
    assert all(r.actor_id == as_alice.user.pk and r.source == "test" for r in records)
    assert ChangeAudience.objects.filter(record__in=records, tenant=acme).count() == 9


def test_a_tenant_reads_its_own_notification_records_and_no_one_else_s(
    api_as: Any, acme: Any, globex: Any, bob: Any, carol: Any, as_admin: Actor
) -> None:
    webhook_create(tenant=acme, name="acme-hook", url="https://a.example/", actor=as_admin)
    webhook_create(tenant=globex, name="globex-hook", url="https://g.example/", actor=as_admin)
    webhook_create(tenant=None, name="noc-hook", url="https://n.example/", actor=as_admin)
    labels = {r["label"] for r in results(api_as(bob).get("/api/v1/audit/", {"kind": "webhook"}))}
    assert labels == {"acme-hook"}
    labels = {r["label"] for r in results(api_as(carol).get("/api/v1/audit/"))}
    assert labels == {"globex-hook"}
