"""Alerts reach the routes that want them, through real health polls: operators in full,
a tenant only for an alert that hurt it and only in its own words, nobody through a
silence; e-mail through Django's mail backend (locmem here)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.core import mail
from django.utils import timezone

from composer.models import DeliveryEvent, DeliveryStatus, NotificationDelivery
from composer.notifications import Actor, route_create, silence_create, silence_end
from fabric.models import Enclosure
from tests.composer.notifications.conftest import Failure

pytestmark = pytest.mark.django_db


def _mails_to(address: str) -> list[Any]:
    return [m for m in mail.outbox if address in m.to]


def test_operators_get_the_alert_in_full_and_the_tenant_it_hurt_in_its_own_words(
    failure: Failure, acme: Any, globex: Any, as_admin: Actor, as_alice: Actor
) -> None:
    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)
    route_create(tenant=acme, name="acme on call", emails=["oncall@acme.example"], actor=as_alice)
    route_create(tenant=globex, name="globex", emails=["ops@globex.example"], actor=as_admin)

    alert = failure.fail()

    [noc] = _mails_to("noc@example.com")
    assert alert.source_name in noc.body and alert.message in noc.body
    assert noc.subject.startswith("[Composer] Critical alert opened:")
    [acme_mail] = _mails_to("oncall@acme.example")
    assert alert.source_name not in acme_mail.body + acme_mail.subject
    assert "An enclosure your compositions depend on failed." in acme_mail.subject
    assert "Your compositions hit: c1" in acme_mail.body
    assert _mails_to("ops@globex.example") == []
    assert set(NotificationDelivery.objects.values_list("status", flat=True)) == {
        DeliveryStatus.DELIVERED
    }


def test_a_tenant_s_webhook_body_is_the_event_cut_for_the_tenant(
    failure: Failure, acme: Any, as_alice: Actor, receiver: Any, settings: Any
) -> None:
    settings.COMPOSER_WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on 127.0.0.1
    from composer.notifications import webhook_create

    server = receiver(200)
    hook, _secret = webhook_create(tenant=acme, name="acme hook", url=server.url, actor=as_alice)
    route_create(tenant=acme, name="to the hook", webhook=hook, actor=as_alice)

    alert = failure.fail()

    [request] = server.received
    body = json.loads(request.body)
    assert body["type"] == "alert.opened" and body["audience"] == "tenant"
    assert body["tenant"] == {"slug": "acme", "name": "Acme"}
    assert body["alert"]["message"] == "An enclosure your compositions depend on failed."
    assert "source_name" not in body["alert"] and "source_id" not in body["alert"]
    assert set(body["blast_radius"]) <= {
        "effect",
        "compositions",
        "composition_count",
        "compositions_degraded",
        "compositions_degraded_count",
    }
    assert [c["name"] for c in body["blast_radius"]["compositions"]] == ["c1"]
    assert alert.source_name not in request.body.decode()


def test_the_severity_floor_and_the_rules_of_a_route_decide(
    failure: Failure, as_admin: Actor
) -> None:
    route_create(
        tenant=None,
        name="critical",
        min_severity="critical",
        emails=["a@x.example"],
        actor=as_admin,
    )
    route_create(
        tenant=None, name="hot only", rules=["temperature"], emails=["b@x.example"], actor=as_admin
    )
    route_create(
        tenant=None,
        name="switches",
        source_types=["switch"],
        emails=["c@x.example"],
        actor=as_admin,
    )
    route_create(tenant=None, name="off", is_enabled=False, emails=["d@x.example"], actor=as_admin)

    failure.fail()

    assert [m.to for m in mail.outbox] == [["a@x.example"]]


def test_a_rule_silence_mutes_its_owner_only(
    failure: Failure, acme: Any, as_admin: Actor, as_alice: Actor
) -> None:
    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)
    route_create(tenant=acme, name="acme", emails=["oncall@acme.example"], actor=as_alice)
    silence_create(
        tenant=None,
        rule="element_failed",
        duration=timedelta(hours=2),
        reason="planned work",
        actor=as_admin,
    )

    failure.fail()

    assert _mails_to("noc@example.com") == []
    assert len(_mails_to("oncall@acme.example")) == 1


def test_an_element_silence_from_an_alert_mutes_that_element_next_time(
    failure: Failure, acme: Any, as_alice: Actor
) -> None:
    route_create(tenant=acme, name="acme", emails=["oncall@acme.example"], actor=as_alice)
    first = failure.fail()
    failure.recover(first)
    assert len(_mails_to("oncall@acme.example")) == 2  # opened, closed
    silence_create(
        tenant=acme,
        alert=first,
        match_element=True,
        duration=timedelta(hours=4),
        reason="the enclosure is being replaced",
        actor=as_alice,
    )

    again = failure.fail()

    assert again.pk != first.pk
    assert len(_mails_to("oncall@acme.example")) == 2
    assert not NotificationDelivery.objects.filter(alert=again).exists()


def test_an_expired_or_ended_silence_stops_applying(failure: Failure, as_admin: Actor) -> None:
    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)
    three_hours_ago = timezone.now() - timedelta(hours=3)
    silence_create(
        tenant=None,
        rule="element_failed",
        duration=timedelta(hours=2),
        reason="last night's work",
        actor=as_admin,
        now=three_hours_ago,
    )
    enclosure = Enclosure.objects.get(name=failure.enclosure)
    ended = silence_create(
        tenant=None,
        source_type="enclosure",
        source_id=enclosure.pk,
        duration=timedelta(hours=8),
        reason="replacing a fan",
        actor=as_admin,
    )
    assert silence_end(silence=ended, actor=as_admin)

    failure.fail()

    assert len(_mails_to("noc@example.com")) == 1


def test_closing_is_told_to_the_routes_that_announced_the_alert_and_want_it(
    failure: Failure, acme: Any, as_admin: Actor, as_alice: Actor
) -> None:
    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)
    route_create(
        tenant=None, name="quiet", on_close=False, emails=["quiet@example.com"], actor=as_admin
    )
    alert = failure.fail()
    # A route made after the alert opened was never told of it: no "closed" either.
    route_create(tenant=None, name="late", emails=["late@example.com"], actor=as_admin)

    failure.recover(alert)

    assert [m.subject.split(":")[0] for m in _mails_to("noc@example.com")] == [
        "[Composer] Critical alert opened",
        "[Composer] Critical alert closed",
    ]
    assert len(_mails_to("quiet@example.com")) == 1
    assert _mails_to("late@example.com") == []
    events = NotificationDelivery.objects.filter(alert=alert).values_list("event", flat=True)
    assert sorted(events) == sorted(
        [DeliveryEvent.OPENED, DeliveryEvent.CLOSED, DeliveryEvent.OPENED]
    )


def test_a_poll_seen_twice_sends_once(failure: Failure, as_admin: Actor) -> None:
    from composer.notifications import notifications_for_alerts

    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)
    alert = failure.fail()
    assert notifications_for_alerts(opened=[alert]) == []
    assert NotificationDelivery.objects.filter(alert=alert).count() == 1


def test_a_failing_notification_never_undoes_the_poll(failure: Failure, as_admin: Actor) -> None:
    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)
    with mock.patch(
        "composer.notifications.notifications_for_alerts", side_effect=RuntimeError("a bug")
    ):
        alert = failure.fail()
    assert alert.is_open and not NotificationDelivery.objects.exists()
