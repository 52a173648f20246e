"""An alert that grows worse reaches the routes it now matches once ("escalated"), and its
closing reaches the routes that were told of it; a tenant deleted takes its notification
settings with it."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from composer.models import AlertAudience, NotificationDelivery, NotificationRoute, Webhook
from composer.notifications import Actor, notifications_for_alerts, route_create, webhook_create
from fabric.choices import AlertSeverity, AlertSource, AlertState
from fabric.health import rules
from fabric.models import Alert
from tests.factories.fabric import SmallFabric

pytestmark = pytest.mark.django_db


@pytest.fixture
def warning(small: SmallFabric, acme: Any) -> Alert:
    now = timezone.now()
    alert = Alert.objects.create(
        manager=small.manager,
        source_type=AlertSource.DEVICE,
        source_id=small.gpus[0].pk,
        source_name=small.gpus[0].name,
        rule=rules.TEMPERATURE,
        severity=AlertSeverity.WARNING,
        message=f"{small.gpus[0].name} runs at 88 °C",
        opened_at=now,
        last_seen_at=now,
    )
    AlertAudience.objects.create(alert=alert, tenant=acme)
    return alert


def _notify(capture: Any, **alerts: Any) -> list[int]:
    with capture(execute=True):
        return notifications_for_alerts(**alerts)


def test_a_warning_that_turns_critical_reaches_the_critical_route_once(
    warning: Alert, acme: Any, as_admin: Actor, django_capture_on_commit_callbacks: Any
) -> None:
    route_create(tenant=None, name="all", emails=["all@x.example"], actor=as_admin)
    route_create(
        tenant=acme,
        name="acme-critical",
        min_severity="critical",
        emails=["pager@acme.example"],
        actor=as_admin,
    )
    capture = django_capture_on_commit_callbacks
    assert len(_notify(capture, opened=[warning])) == 1  # the operators' route only

    warning.severity = AlertSeverity.CRITICAL
    warning.save()
    assert len(_notify(capture, updated=[warning])) == 1  # acme's, now; "all" was told
    assert _notify(capture, updated=[warning]) == []  # seen again: nothing new

    warning.state, warning.closed_at = AlertState.CLOSED, timezone.now()
    warning.save()
    assert len(_notify(capture, closed=[warning])) == 2

    subjects = sorted((m.to[0], m.subject.split(":")[0]) for m in mail.outbox)
    assert subjects == [
        ("all@x.example", "[Composer] Critical alert closed"),
        ("all@x.example", "[Composer] Warning alert opened"),
        ("pager@acme.example", "[Composer] Critical alert closed"),
        ("pager@acme.example", "[Composer] Critical alert escalated"),
    ]
    assert all(warning.source_name not in m.body for m in mail.outbox if "acme" in m.to[0])


def test_a_deleted_tenant_takes_its_routes_webhooks_and_deliveries_along(
    acme: Any, as_admin: Actor
) -> None:
    hook, _ = webhook_create(tenant=acme, name="h", url="https://h.example/", actor=as_admin)
    route_create(tenant=acme, name="r", webhook=hook, actor=as_admin)
    acme.delete()
    assert not Webhook.objects.exists() and not NotificationRoute.objects.exists()
    assert not NotificationDelivery.objects.exists()
