"""/api/v1/ notification routes, webhooks, silences and deliveries: scoped per tenant like
the rest, writes audited, the secret write-only, bad input a 400 naming the field."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.models import AlertAudience, NotificationDelivery, Silence, Webhook
from composer.notifications import Actor, route_create, webhook_create
from fabric.choices import AlertSeverity, AlertSource
from fabric.health import rules
from fabric.models import Alert, ChangeRecord
from tests.factories.fabric import SmallFabric
from tests.support.api import assert_error, count_queries, results

pytestmark = pytest.mark.django_db

HOOKS = "/api/v1/webhooks/"
ROUTES = "/api/v1/notification-routes/"
SILENCES = "/api/v1/silences/"
DELIVERIES = "/api/v1/notification-deliveries/"


@pytest.fixture
def hooks(admin_user: Any, acme: Any, globex: Any) -> dict[str, Webhook]:
    admin = Actor(user=admin_user, source="test")
    return {
        "acme": webhook_create(
            tenant=acme, name="acme", url="https://hooks.acme.example/", actor=admin
        )[0],
        "globex": webhook_create(
            tenant=globex, name="globex", url="https://hooks.globex.example/", actor=admin
        )[0],
        "noc": webhook_create(tenant=None, name="noc", url="http://noc.local/", actor=admin)[0],
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
        message="sw-a failed",
        opened_at=now,
        last_seen_at=now,
    )
    AlertAudience.objects.create(alert=alert, tenant=acme)
    return alert


def test_a_member_never_sees_another_tenant_s_webhooks(
    api_as: Any, carol: Any, alice: Any, bob: Any, admin_user: Any, hooks: dict[str, Webhook]
) -> None:
    assert [r["name"] for r in results(api_as(carol).get(HOOKS))] == ["globex"]
    assert api_as(carol).get(f"{HOOKS}{hooks['acme'].pk}/").status_code == 404
    assert api_as(carol).get(f"{HOOKS}{hooks['noc'].pk}/").status_code == 404
    assert [r["name"] for r in results(api_as(bob).get(HOOKS))] == ["acme"]
    assert {r["name"] for r in results(api_as(admin_user).get(HOOKS))} == {"acme", "globex", "noc"}


def test_the_secret_is_write_only_and_a_made_one_is_returned_once(
    api_as: Any, alice: Any, acme: Any
) -> None:
    client = api_as(alice)
    made = client.post(HOOKS, {"tenant": "acme", "name": "pager", "url": "https://p.acme.example/"})
    assert made.status_code == 201, made.content
    secret = made.json()["new_secret"]
    assert secret and secret.startswith("whsec_") and made["Cache-Control"] == "no-store"
    assert "secret" not in made.json()
    again = client.get(f"{HOOKS}{made.json()['id']}/").json()
    assert again["new_secret"] is None and secret not in str(again)
    given = client.post(
        HOOKS,
        {"tenant": "acme", "name": "own", "url": "https://o.acme.example/", "secret": "x" * 24},
    )
    assert given.status_code == 201 and given.json()["new_secret"] is None
    record = ChangeRecord.objects.get(target_type="webhook", target_id=given.json()["id"])
    assert "x" * 24 not in str(record.changes) and record.source == "api"


def test_rotating_the_secret_returns_the_new_one_once(
    api_as: Any, admin_user: Any, hooks: dict[str, Webhook]
) -> None:
    hook = hooks["noc"]
    before = hook.secret_ciphertext
    response = api_as(admin_user).post(f"{HOOKS}{hook.pk}/rotate-secret/")
    assert response.status_code == 200 and response.json()["new_secret"].startswith("whsec_")
    hook.refresh_from_db()
    assert hook.secret_ciphertext != before
    record = (
        ChangeRecord.objects.filter(target_type="webhook", target_id=hook.pk).order_by("pk").last()
    )
    assert record.changes == {"secret": ["set", "changed"]}


def test_who_may_write(
    api_as: Any, alice: Any, bob: Any, carol: Any, hooks: dict[str, Webhook]
) -> None:
    body = {"tenant": "acme", "name": "r", "emails": ["a@acme.example"]}
    assert_error(api_as(bob).post(ROUTES, body), 403, "permission_denied")
    assert_error(api_as(carol).post(ROUTES, body), 400, "invalid", field="tenant")
    assert_error(api_as(alice).post(ROUTES, {**body, "tenant": None}), 403, "permission_denied")
    assert api_as(alice).post(ROUTES, body).status_code == 201
    assert_error(api_as(bob).post(f"{HOOKS}{hooks['acme'].pk}/test/"), 403, "permission_denied")
    assert api_as(carol).delete(f"{HOOKS}{hooks['acme'].pk}/").status_code == 404


def test_a_route_sends_only_to_its_own_owner_s_webhook(
    api_as: Any, admin_user: Any, hooks: dict[str, Webhook]
) -> None:
    assert_error(
        api_as(admin_user).post(
            ROUTES, {"tenant": "acme", "name": "r", "webhook": hooks["globex"].pk}
        ),
        400,
        "invalid",
        field="webhook",
    )


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        (HOOKS, {"tenant": "acme", "name": "x", "url": "ftp://a.example/"}, "url"),
        (HOOKS, {"tenant": "acme", "name": "x", "url": "https://u:p@a.example/"}, "url"),
        (HOOKS, {"tenant": "acme", "name": "x", "url": "http://10.0.0.8/"}, "url"),
        (
            HOOKS,
            {"tenant": "acme", "name": "x", "url": "https://a.example/", "secret": "s"},
            "secret",
        ),
        (
            HOOKS,
            {"tenant": "acme", "name": "x", "url": "https://a.example/", "is_enabled": "yes"},
            "is_enabled",
        ),
        (HOOKS, {"tenant": 3, "name": "x", "url": "https://a.example/"}, "tenant"),
        (ROUTES, {"tenant": "", "name": "r", "emails": ["a@b.example"]}, "tenant"),
        (ROUTES, {"tenant": "acme", "name": "r", "emails": "a@b.example"}, "emails"),
        (ROUTES, {"tenant": "acme", "name": "r", "emails": ["not an address"]}, "emails"),
        (ROUTES, {"tenant": "acme", "name": "r", "emails": []}, "emails"),
        (
            ROUTES,
            {"tenant": "acme", "name": "r", "rules": ["nope"], "emails": ["a@b.example"]},
            "rules.0",
        ),
        (ROUTES, {"tenant": "acme", "name": "r", "min_severity": "loud"}, "min_severity"),
        (ROUTES, {"tenant": "acme", "name": "r\x1b[31m", "emails": ["a@b.example"]}, "name"),
        (
            SILENCES,
            {"tenant": "acme", "rule": "element_failed", "duration_s": 10, "reason": "r"},
            "duration_s",
        ),
        (SILENCES, {"tenant": "acme", "duration_s": 3600, "reason": "r"}, "rule"),
        (
            SILENCES,
            {
                "tenant": "acme",
                "source_type": "switch",
                "source_id": 1,
                "duration_s": 3600,
                "reason": "r",
            },
            "source_id",
        ),
        (SILENCES, {"tenant": "acme", "alert": 99999, "duration_s": 3600, "reason": "r"}, "alert"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    api_as: Any, alice: Any, url: str, body: dict[str, Any], field: str
) -> None:
    assert_error(api_as(alice).post(url, body), 400, "invalid", field=field)


def test_routes_are_changed_and_deleted_through_the_api_audited(
    api_as: Any, alice: Any, acme: Any, admin_user: Any
) -> None:
    route = route_create(
        tenant=acme,
        name="acme",
        emails=["a@acme.example"],
        actor=Actor(user=admin_user, source="t"),
    )
    client = api_as(alice)
    response = client.patch(f"{ROUTES}{route.pk}/", {"min_severity": "critical", "on_close": False})
    assert response.status_code == 200, response.content
    assert response.json()["min_severity"] == "critical" and response.json()["on_close"] is False
    assert_error(
        client.patch(f"{ROUTES}{route.pk}/", {"tenant": None}), 400, "invalid", field="tenant"
    )
    assert client.delete(f"{ROUTES}{route.pk}/").status_code == 204
    actions = list(
        ChangeRecord.objects.filter(target_type="notificationroute", target_id=route.pk)
        .order_by("pk")
        .values_list("action", "source")
    )
    assert actions == [("added", "t"), ("changed", "api"), ("deleted", "api")]


def test_a_tenant_silences_its_alert_s_element_and_never_reads_its_id(
    api_as: Any, alice: Any, admin_user: Any, alert: Alert
) -> None:
    response = api_as(alice).post(
        SILENCES,
        {
            "tenant": "acme",
            "alert": alert.pk,
            "match_element": True,
            "duration_s": 3600,
            "reason": "known",
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["source_type"] == "switch" and body["source_id"] is None and body["is_active"]
    assert body["description"] == f"Silence: Every rule on the switch of alert #{alert.pk}"
    operator_view = api_as(admin_user).get(f"{SILENCES}{body['id']}/").json()
    assert operator_view["source_id"] == alert.source_id
    ended = api_as(alice).post(f"{SILENCES}{body['id']}/end/")
    assert ended.status_code == 200 and ended.json()["is_active"] is False
    assert results(api_as(alice).get(SILENCES, {"active": "true"})) == []
    assert len(results(api_as(alice).get(SILENCES, {"active": "false"}))) == 1


def test_a_tenant_cannot_silence_from_an_alert_it_cannot_see(
    api_as: Any, carol: Any, globex: Any, alert: Alert
) -> None:
    from composer.choices import Role
    from composer.models import Membership

    Membership.objects.filter(user=carol).update(role=Role.ADMIN)
    assert_error(
        api_as(carol).post(
            SILENCES,
            {"tenant": "globex", "alert": alert.pk, "duration_s": 3600, "reason": "x"},
        ),
        400,
        "invalid",
        field="alert",
    )
    assert not Silence.objects.exists()


def test_deliveries_are_read_only_and_scoped(
    api_as: Any, admin_user: Any, alice: Any, carol: Any, hooks: dict[str, Webhook]
) -> None:
    api_as(admin_user)
    with_mock = pytest.MonkeyPatch()
    with_mock.setattr("composer.notifications.delivery.deliveries_enqueue", lambda ids: 0)
    try:
        assert api_as(alice).post(f"{HOOKS}{hooks['acme'].pk}/test/").status_code == 202
        assert api_as(admin_user).post(f"{HOOKS}{hooks['noc'].pk}/test/").status_code == 202
        assert_error(
            api_as(admin_user).post(f"{HOOKS}{hooks['noc'].pk}/test/"), 409, "test_pending"
        )
    finally:
        with_mock.undo()
    mine = results(api_as(alice).get(DELIVERIES))
    assert [(d["webhook"], d["event"], d["status"]) for d in mine] == [
        (hooks["acme"].pk, "test", "pending")
    ]
    assert results(api_as(carol).get(DELIVERIES)) == []
    assert len(results(api_as(admin_user).get(DELIVERIES, {"webhook": hooks["noc"].pk}))) == 1
    delivery = NotificationDelivery.objects.get(webhook=hooks["acme"])
    assert api_as(carol).get(f"{DELIVERIES}{delivery.pk}/").status_code == 404
    assert api_as(alice).delete(f"{DELIVERIES}{delivery.pk}/").status_code == 405
    assert api_as(alice).get(f"{DELIVERIES}{delivery.pk}/").json()["delivery_id"] == str(
        delivery.uuid
    )


@pytest.mark.parametrize("url", [HOOKS, ROUTES, SILENCES, DELIVERIES])
def test_each_list_costs_the_same_whatever_it_holds(
    api_as: Any, admin_user: Any, acme: Any, url: str
) -> None:
    client = api_as(admin_user)
    admin = Actor(user=admin_user, source="t")

    def add(n: int) -> None:
        for i in range(n):
            hook, _ = webhook_create(
                tenant=acme,
                name=f"h{url}{i}{timezone.now().timestamp()}",
                url="https://h.example/",
                actor=admin,
            )
            route_create(tenant=acme, name=f"r{hook.pk}", webhook=hook, actor=admin)
            Silence.objects.create(
                tenant=acme,
                rule="temperature",
                ends_at=timezone.now() + timedelta(hours=1),
                reason="x",
            )
            NotificationDelivery.objects.create(
                tenant=acme,
                webhook=hook,
                channel="webhook",
                event="test",
                body="{}",
                body_sha256="0" * 64,
            )

    add(1)
    few = count_queries(lambda: client.get(url))
    add(4)
    assert count_queries(lambda: client.get(url)) == few
