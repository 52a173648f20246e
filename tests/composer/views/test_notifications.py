"""The notification pages for each persona: who sees which routes, webhooks and silences,
who may change them, forms that say what is wrong next to the field, a secret shown once,
"Send a test", and silencing from the alert list."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from composer.models import (
    AlertAudience,
    ChangeAudience,
    NotificationDelivery,
    NotificationRoute,
    Silence,
    Webhook,
)
from composer.notifications import Actor, route_create, silence_create, webhook_create
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert, ChangeRecord
from tests.factories.fabric import SmallFabric
from tests.support.http_receiver import receiver  # noqa: F401

pytestmark = pytest.mark.django_db

ROUTES = reverse("composer:route_list")
WEBHOOKS = reverse("composer:webhook_list")
SILENCES = reverse("composer:silence_list")


@pytest.fixture
def setup(admin_user: Any, alice: Any, acme: Any, globex: Any) -> dict[str, Any]:
    admin = Actor(user=admin_user, source="test")
    acme_hook, _ = webhook_create(
        tenant=acme, name="acme-hook", url="https://hooks.acme.example/composer", actor=admin
    )
    noc_hook, _ = webhook_create(
        tenant=None, name="noc-hook", url="http://noc.internal:8080/alerts", actor=admin
    )
    return {
        "acme_hook": acme_hook,
        "noc_hook": noc_hook,
        "acme_route": route_create(
            tenant=acme, name="acme-oncall", emails=["oncall@acme.example"], actor=admin
        ),
        "noc_route": route_create(tenant=None, name="noc-route", webhook=noc_hook, actor=admin),
        "globex_route": route_create(
            tenant=globex, name="globex-route", emails=["ops@globex.example"], actor=admin
        ),
    }


@pytest.fixture
def alert(small: SmallFabric, acme: Any) -> Alert:
    now = timezone.now()
    alert = Alert.objects.create(
        manager=small.manager,
        source_type=AlertSource.SWITCH,
        source_id=small.switches[0].pk,
        source_name=small.switches[0].name,
        rule=rules.ELEMENT_FAILED,
        severity=AlertSeverity.CRITICAL,
        message=f"{small.switches[0].name} failed",
        opened_at=now,
        last_seen_at=now,
    )
    AlertAudience.objects.create(alert=alert, tenant=acme)
    return alert


@pytest.mark.parametrize(
    ("who", "sees", "hidden"),
    [
        ("admin_user", ["acme-oncall", "noc-route", "globex-route"], []),
        ("alice", ["acme-oncall"], ["noc-route", "globex-route", "noc-hook"]),
        ("bob", ["acme-oncall"], ["noc-route", "globex-route"]),
        ("carol", ["globex-route"], ["acme-oncall", "noc-route", "acme-hook"]),
    ],
)
def test_each_persona_lists_its_own_routes_and_webhooks(
    client_as: Any,
    persona: Any,
    setup: dict[str, Any],
    who: str,
    sees: list[str],
    hidden: list[str],
) -> None:
    client = client_as(persona(who))
    routes = client.get(ROUTES).content.decode()
    hooks = client.get(WEBHOOKS).content.decode()
    for name in sees:
        assert name in routes
    for name in hidden:
        assert name not in routes and name not in hooks


def test_read_only_and_other_tenants_cannot_change_anything(
    client_as: Any, bob: Any, carol: Any, setup: dict[str, Any]
) -> None:
    hook, route = setup["acme_hook"], setup["acme_route"]
    bob_client = client_as(bob)
    assert "route-add" not in bob_client.get(ROUTES).content.decode()
    assert bob_client.get(reverse("composer:route_create")).status_code == 403
    assert bob_client.get(reverse("composer:route_edit", args=[route.pk])).status_code == 403
    assert bob_client.post(reverse("composer:webhook_test", args=[hook.pk])).status_code == 403
    carol_client = client_as(carol)
    assert carol_client.get(reverse("composer:webhook_detail", args=[hook.pk])).status_code == 404
    assert carol_client.post(reverse("composer:webhook_delete", args=[hook.pk])).status_code == 404
    assert carol_client.get(reverse("composer:route_edit", args=[route.pk])).status_code == 404
    assert Webhook.objects.filter(pk=hook.pk).exists()


def test_alice_adds_a_webhook_and_reads_its_secret_once(
    client_as: Any, alice: Any, acme: Any
) -> None:
    client = client_as(alice)
    response = client.post(
        reverse("composer:webhook_create"),
        {
            "owner": "acme",
            "name": "pager",
            "url": "https://pager.acme.example/in",
            "is_enabled": "on",
        },
    )
    assert response.status_code == 201 and response["Cache-Control"] == "no-store"
    hook = Webhook.objects.get(name="pager")
    secret = response.context["secret"]
    assert secret.startswith("whsec_") and secret in response.content.decode()
    assert secret not in hook.secret_ciphertext
    detail = client.get(reverse("composer:webhook_detail", args=[hook.pk])).content.decode()
    assert secret not in detail and hook.secret_ciphertext not in detail
    record = ChangeRecord.objects.get(target_type="webhook", target_id=hook.pk)
    assert record.changes["secret"] == [None, "set"] and secret not in str(record.changes)
    assert record.actor == alice and record.source == "console"
    assert ChangeAudience.objects.filter(record=record, tenant=acme).exists()


def test_bad_input_is_named_next_to_its_field_never_a_500(
    client_as: Any, alice: Any, acme: Any
) -> None:
    client = client_as(alice)
    response = client.post(
        reverse("composer:webhook_create"),
        {"owner": "acme", "name": "x", "url": "ftp://files.acme.example/", "secret": "short"},
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "Only http:// and https:// addresses are accepted." in body
    assert "at least 16 characters" in body
    response = client.post(
        reverse("composer:route_create"),
        {"owner": "acme", "name": "r", "min_severity": "warning", "emails": "not-an-address"},
    )
    assert response.status_code == 400
    assert "is not an e-mail address" in response.content.decode()
    response = client.post(
        reverse("composer:route_create"), {"owner": "globex", "name": "r", "min_severity": "loud"}
    )
    assert response.status_code == 400 and not NotificationRoute.objects.filter(name="r").exists()


def test_a_route_is_changed_and_deleted_each_audited(
    client_as: Any, alice: Any, setup: dict[str, Any]
) -> None:
    client = client_as(alice)
    route = setup["acme_route"]
    response = client.post(
        reverse("composer:route_edit", args=[route.pk]),
        {
            "name": "acme-oncall",
            "min_severity": "critical",
            "emails": "oncall@acme.example\nlead@acme.example",
            "webhook": setup["acme_hook"].pk,
            "on_close": "on",
            "is_enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    route.refresh_from_db()
    assert route.min_severity == "critical" and route.webhook == setup["acme_hook"]
    changed = ChangeRecord.objects.filter(target_type="notificationroute", action="changed").get()
    assert changed.changes["min_severity"] == ["warning", "critical"]
    assert client.post(reverse("composer:route_delete", args=[route.pk])).status_code == 302
    assert not NotificationRoute.objects.filter(pk=route.pk).exists()
    deleted = ChangeRecord.objects.get(target_type="notificationroute", action="deleted")
    assert deleted.target_id == route.pk and deleted.actor == alice


def test_a_webhook_routes_use_is_not_deleted(
    client_as: Any, admin_user: Any, setup: dict[str, Any]
) -> None:
    response = client_as(admin_user).post(
        reverse("composer:webhook_delete", args=[setup["noc_hook"].pk])
    )
    assert response.status_code == 409 and "noc-route" in response.content.decode()


def test_send_a_test_reaches_the_receiver_and_shows_in_the_log(
    client_as: Any,
    admin_user: Any,
    receiver: Any,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    server = receiver(200)
    hook, _ = webhook_create(
        tenant=None, name="lab", url=server.url, actor=Actor(user=admin_user, source="test")
    )
    client = client_as(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("composer:webhook_test", args=[hook.pk]))
    assert response.status_code == 302
    assert len(server.received) == 1
    page = client.get(reverse("composer:webhook_detail", args=[hook.pk])).content.decode()
    assert 'data-status="delivered"' in page and "test" in page


def test_the_alert_list_offers_silence_to_those_who_manage(
    client_as: Any, persona: Any, alert: Alert, admin_user: Any, alice: Any, bob: Any
) -> None:
    url = reverse("composer:alert_list") + "?state=all"
    assert "silence-link" in client_as(admin_user).get(url).content.decode()
    assert "silence-link" in client_as(alice).get(url).content.decode()
    assert "silence-link" not in client_as(bob).get(url).content.decode()


def test_an_operator_silences_a_rule_from_an_alert(
    client_as: Any, admin_user: Any, alert: Alert
) -> None:
    client = client_as(admin_user)
    form = client.get(reverse("composer:silence_create") + f"?alert={alert.pk}")
    assert form.status_code == 200 and alert.message in form.content.decode()
    response = client.post(
        reverse("composer:silence_create"),
        {
            "owner": "operators",
            "alert": alert.pk,
            "match": "rule",
            "hours": "8",
            "reason": "firmware",
        },
    )
    assert response.status_code == 302
    silence = Silence.objects.get()
    assert (silence.tenant, silence.rule, silence.source_id) == (None, "element_failed", None)
    assert (
        timedelta(hours=7, minutes=59) < silence.ends_at - silence.starts_at <= timedelta(hours=8)
    )
    listed = client.get(SILENCES).content.decode()
    assert f'data-silence="{silence.pk}"' in listed and "firmware" in listed
    ChangeRecord.objects.get(target_type="silence", action="added")


def test_alice_silences_the_element_of_her_alert_without_learning_its_name(
    client_as: Any, alice: Any, acme: Any, alert: Alert
) -> None:
    client = client_as(alice)
    form = client.get(reverse("composer:silence_create") + f"?alert={alert.pk}").content.decode()
    assert alert.source_name not in form
    response = client.post(
        reverse("composer:silence_create"),
        {"owner": "acme", "alert": alert.pk, "match": "element", "hours": "4", "reason": "known"},
    )
    assert response.status_code == 302
    silence = Silence.objects.get()
    assert (silence.tenant, silence.rule, silence.source_type) == (acme, "", "switch")
    listed = client.get(SILENCES).content.decode()
    assert f"the switch of alert #{alert.pk}" in listed and alert.source_name not in listed
    record = ChangeRecord.objects.get(target_type="silence")
    assert "source_id" not in record.changes  # a tenant never reads the element's id
    assert str(alert.source_id) not in record.target_label


def test_an_alert_the_viewer_cannot_see_is_a_404(client_as: Any, carol: Any, alert: Alert) -> None:
    client = client_as(carol)
    assert client.get(reverse("composer:silence_create") + f"?alert={alert.pk}").status_code == 404
    assert client.get(reverse("composer:silence_create") + "?alert=x").status_code == 404


def test_ending_a_silence_early(client_as: Any, admin_user: Any, alert: Alert) -> None:
    silence = silence_create(
        tenant=None,
        rule="element_failed",
        duration=timedelta(hours=2),
        reason="work",
        actor=Actor(user=admin_user, source="test"),
    )
    client = client_as(admin_user)
    assert client.post(reverse("composer:silence_end", args=[silence.pk])).status_code == 302
    silence.refresh_from_db()
    assert not silence.is_active() and silence.ended_by == admin_user
    assert (
        f'data-silence="{silence.pk}"' in client.get(SILENCES + "?state=expired").content.decode()
    )
    assert f'data-silence="{silence.pk}"' not in client.get(SILENCES).content.decode()


def test_the_user_menu_links_the_notification_pages(client_as: Any, alice: Any) -> None:
    page = client_as(alice).get("/").content.decode()
    for url in (ROUTES, WEBHOOKS, SILENCES):
        assert f'href="{url}"' in page


def test_deliveries_of_another_tenant_are_not_in_a_webhook_log(
    client_as: Any, admin_user: Any, alice: Any, setup: dict[str, Any]
) -> None:
    assert NotificationDelivery.objects.count() == 0
    assert (
        client_as(alice)
        .get(reverse("composer:webhook_detail", args=[setup["noc_hook"].pk]))
        .status_code
        == 404
    )
