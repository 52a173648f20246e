"""Alerts: acknowledging, selecting, the tenant visibility hook; samples: pruning."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from fabric.choices import AlertState, ChangeAction
from fabric.models import Alert, ChangeRecord, FabricManager, HealthSample
from fabric.services.alerts import (
    AlertScope,
    alert_acknowledge,
    alert_list,
    alert_scope,
    alerts_visible_to,
    health_samples_for,
    health_samples_prune,
    register_alert_scope,
)
from tests.factories.fabric import FabricManagerFactory

pytestmark = pytest.mark.django_db


def make_alert(manager: FabricManager, **fields: Any) -> Alert:
    now = timezone.now()
    values: dict[str, Any] = {
        "manager": manager,
        "source_type": "switch",
        "source_id": 1,
        "source_name": "sw-a",
        "rule": "element_failed",
        "severity": "critical",
        "message": "Switch sw-a failed",
        "opened_at": now,
        "last_seen_at": now,
        "blast_radius": {"tenants": [1]},
    }
    values.update(fields)
    return Alert.objects.create(**values)


@pytest.fixture
def manager() -> FabricManager:
    return FabricManagerFactory.create(name="fm")


def test_acknowledging_is_audited_and_idempotent(
    manager: FabricManager, admin_user: Any, django_user_model: Any
) -> None:
    alert = make_alert(manager)
    assert alert_acknowledge(alert=alert, user=admin_user, remote_addr="192.0.2.1") is True
    assert (alert.acknowledged_by, alert.state) == (admin_user, AlertState.OPEN)
    first_at = alert.acknowledged_at

    other = django_user_model.objects.create_user("op2", is_staff=True)
    assert alert_acknowledge(alert=alert, user=other) is False
    assert (alert.acknowledged_by, alert.acknowledged_at) == (admin_user, first_at)

    (record,) = ChangeRecord.objects.filter(target_type="alert", target_id=alert.pk)
    assert (record.action, record.actor, record.remote_addr) == (
        ChangeAction.CHANGED,
        admin_user,
        "192.0.2.1",
    )
    assert record.changes == {"acknowledged_by": [None, "admin"]}


def test_only_one_alert_per_source_and_rule_may_be_open(manager: FabricManager) -> None:
    make_alert(manager)
    make_alert(manager, rule="temperature")  # another rule: fine
    make_alert(manager, source_id=2)  # another source: fine
    with pytest.raises(IntegrityError), transaction.atomic():
        make_alert(manager)
    # Closed ones are history: any number of them.
    Alert.objects.filter(rule="element_failed", source_id=1).update(
        state=AlertState.CLOSED, closed_at=timezone.now()
    )
    make_alert(manager)


def test_a_closed_alert_must_say_when(manager: FabricManager) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_alert(manager, state=AlertState.CLOSED)


def test_alert_list_filters(manager: FabricManager) -> None:
    other = FabricManagerFactory.create(name="fm-2")
    old = timezone.now() - timedelta(hours=3)
    a = make_alert(manager, opened_at=old, last_seen_at=old)
    b = make_alert(manager, source_type="device", source_id=7, severity="warning", rule="temp")
    c = make_alert(other, source_id=9, state=AlertState.CLOSED, closed_at=timezone.now())

    assert list(alert_list()) == [c, b, a]
    assert list(alert_list(state="open")) == [b, a]
    assert list(alert_list(severity="warning")) == [b]
    assert list(alert_list(source_type="switch")) == [c, a]
    assert list(alert_list(manager=other)) == [c]
    assert list(alert_list(since=timezone.now() - timedelta(hours=1))) == [c, b]


class _OnlyTenantOne:
    """A scope like the composer's: alerts whose blast radius names tenant 1."""

    @staticmethod
    def alerts(user: Any, alerts: QuerySet[Alert]) -> QuerySet[Alert]:
        return alerts.filter(
            pk__in=[a.pk for a in alerts if 1 in a.blast_radius.get("tenants", [])]
        )


@pytest.fixture
def scope() -> Iterator[None]:
    before = alert_scope()
    register_alert_scope(AlertScope(alerts=_OnlyTenantOne.alerts))
    yield
    register_alert_scope(before)


def test_without_a_scope_only_operators_see_alerts(
    manager: FabricManager, admin_user: Any, alice: Any, no_scope: None
) -> None:
    alert = make_alert(manager)
    assert list(alerts_visible_to(admin_user)) == [alert]
    assert list(alerts_visible_to(alice)) == []


def test_a_registered_scope_decides_what_others_see(
    manager: FabricManager, admin_user: Any, alice: Any, scope: None
) -> None:
    mine = make_alert(manager)
    make_alert(manager, source_id=2, blast_radius={"tenants": [2]})
    assert list(alerts_visible_to(alice)) == [mine]
    assert alerts_visible_to(admin_user).count() == 2


def test_samples_are_pruned_by_age(manager: FabricManager, settings: Any) -> None:
    settings.COMPOSER_HEALTH_RETENTION_HOURS = 24
    now = timezone.now()
    for hours in (1, 23, 25, 48):
        HealthSample.objects.create(
            manager=manager,
            target_type="device",
            target_id=1,
            taken_at=now - timedelta(hours=hours),
            health="ok",
        )
    assert health_samples_prune() == 2
    assert health_samples_prune() == 0
    kept = list(health_samples_for(target_type="device", target_id=1))
    assert [round((now - s.taken_at).total_seconds() / 3600) for s in kept] == [1, 23]
    assert health_samples_prune(older_than=now) == 2


def test_pruning_works_in_batches(manager: FabricManager, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fabric.services.alerts.PRUNE_BATCH", 3)
    old = timezone.now() - timedelta(days=2)
    HealthSample.objects.bulk_create(
        HealthSample(manager=manager, target_type="link", target_id=i, taken_at=old, health="ok")
        for i in range(7)
    )
    assert health_samples_prune() == 7
    assert not HealthSample.objects.exists()
