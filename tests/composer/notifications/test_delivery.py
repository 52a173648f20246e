"""Webhooks delivered for real to HTTP servers in the test: signed, retried with back-off
when the receiver fails (on a controlled clock, not by sleeping), picked up again when a
worker dies in the middle, and every attempt logged on the delivery."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

from composer.models import DeliveryStatus, NotificationDelivery
from composer.notifications import (
    Actor,
    deliveries_dispatch,
    deliveries_due,
    delivery_attempt,
    route_create,
    signature_verify,
    webhook_create,
    webhook_test,
    webhook_update,
)
from tests.composer.notifications.conftest import Failure

pytestmark = pytest.mark.django_db


def test_a_webhook_is_delivered_to_a_local_server_with_a_valid_signature(
    failure: Failure, as_admin: Actor, receiver: Any
) -> None:
    server = receiver(204)
    hook, secret = webhook_create(tenant=None, name="noc hook", url=server.url, actor=as_admin)
    assert secret is not None and secret.startswith("whsec_")
    route_create(tenant=None, name="noc", webhook=hook, actor=as_admin)

    alert = failure.fail()

    [request] = server.received
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert request.path == "/hooks/composer"
    assert headers["content-type"] == "application/json"
    assert headers["x-composer-event"] == "alert.opened"
    assert signature_verify(
        header=headers["x-composer-signature"], secret=secret, body=request.body
    )
    delivery = NotificationDelivery.objects.get()
    assert headers["x-composer-delivery"] == str(delivery.uuid)
    body = json.loads(request.body)
    assert body["delivery_id"] == str(delivery.uuid) and body["alert"]["id"] == alert.pk
    assert body["alert"]["source_name"] == alert.source_name  # operators get it in full
    assert (delivery.status, delivery.attempts, delivery.status_code) == (
        DeliveryStatus.DELIVERED,
        1,
        204,
    )
    assert delivery.body_sha256 and delivery.delivered_at is not None
    assert delivery.history[-1]["ok"] is True


def test_a_receiver_answering_500_gets_it_again_after_the_back_off(
    failure: Failure, as_admin: Actor, receiver: Any, settings: Any
) -> None:
    settings.COMPOSER_NOTIFY_RETRY_S = [30, 120]
    server = receiver(500, 500, 200)
    hook, secret = webhook_create(tenant=None, name="flaky", url=server.url, actor=as_admin)
    route_create(tenant=None, name="noc", webhook=hook, actor=as_admin)

    failure.fail()  # the first attempt is made at once, after the poll's commit

    delivery = NotificationDelivery.objects.get()
    first = delivery.last_attempt_at
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("pending", 1, 500)
    assert "HTTP 500" in delivery.error and "down for maintenance" in delivery.error
    assert delivery.next_attempt_at == first + timedelta(seconds=30)

    # Not due before its back-off is over: neither the pass nor a stray message sends it.
    early = first + timedelta(seconds=29)
    assert not deliveries_due(now=early).exists()
    assert delivery_attempt(delivery_id=delivery.pk, now=early) is None
    assert len(server.received) == 1

    # Due at 30 s: beat's pass sends it; the second attempt fails too, then waits 2 min.
    with mock.patch("django.utils.timezone.now", return_value=first + timedelta(seconds=30)):
        assert deliveries_dispatch() == 1
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.status) == (2, "pending")
    assert delivery.next_attempt_at == first + timedelta(seconds=30 + 120)

    with mock.patch("django.utils.timezone.now", return_value=first + timedelta(seconds=150)):
        assert deliveries_dispatch() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("delivered", 3, 200)
    assert [h["status_code"] for h in delivery.history] == [500, 500, 200]
    assert len(server.received) == 3
    # Every attempt sent the same bytes under the same id, each freshly signed.
    assert {r.body for r in server.received} == {delivery.body.encode()}
    assert {r.headers["X-Composer-Delivery"] for r in server.received} == {str(delivery.uuid)}
    for request in server.received:
        assert signature_verify(
            header=request.headers["X-Composer-Signature"], secret=secret, body=request.body
        )


def test_a_delivery_is_given_up_after_its_last_attempt(
    as_admin: Actor, receiver: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.COMPOSER_NOTIFY_RETRY_S = [30]
    server = receiver(503)
    hook, _ = webhook_create(tenant=None, name="down", url=server.url, actor=as_admin)
    with django_capture_on_commit_callbacks(execute=True):
        delivery = webhook_test(webhook=hook, actor=as_admin)
    delivery.refresh_from_db()
    assert delivery.status == "pending"
    later = delivery.next_attempt_at
    assert delivery_attempt(delivery_id=delivery.pk, now=later) is not None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 2, None)
    assert not deliveries_due(now=later + timedelta(days=1)).exists()


def test_a_worker_killed_mid_delivery_loses_nothing(
    as_admin: Actor, receiver: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The broker's message was consumed and the attempt claimed, then the worker died
    before it recorded anything: once the claim runs out, beat's pass sends it again."""
    server = receiver(200)
    hook, _ = webhook_create(tenant=None, name="noc", url=server.url, actor=as_admin)
    with (
        mock.patch("composer.notifications.delivery.deliveries_enqueue"),  # no broker
        django_capture_on_commit_callbacks(execute=True),
    ):
        delivery = webhook_test(webhook=hook, actor=as_admin)
    now = timezone.now()
    with (
        mock.patch("composer.notifications.delivery._send", side_effect=SystemExit("killed")),
        pytest.raises(SystemExit),
    ):
        delivery_attempt(delivery_id=delivery.pk, now=now)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert delivery.claimed_until > now

    # While the claim holds, nobody else sends it (the worker may still be alive).
    assert not deliveries_due(now=now + timedelta(seconds=5)).exists()
    after = delivery.claimed_until + timedelta(seconds=1)
    with mock.patch("django.utils.timezone.now", return_value=after):
        assert deliveries_dispatch() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert len(server.received) == 1


def test_a_message_the_broker_refused_is_sent_by_the_dispatch_pass(
    as_admin: Actor, receiver: Any, django_capture_on_commit_callbacks: Any
) -> None:
    server = receiver(200)
    hook, _ = webhook_create(tenant=None, name="noc", url=server.url, actor=as_admin)
    with mock.patch(
        "composer.tasks.notification_deliver_task.delay", side_effect=ConnectionError("no redis")
    ):
        with django_capture_on_commit_callbacks(execute=True):
            delivery = webhook_test(webhook=hook, actor=as_admin)
        assert deliveries_dispatch() == 0  # still away: nothing lost, nothing sent
    delivery.refresh_from_db()
    assert (delivery.status, delivery.dispatched_at) == ("pending", None)
    assert deliveries_dispatch() == 1
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and len(server.received) == 1


def test_a_disabled_webhook_is_not_posted_to(
    as_admin: Actor, receiver: Any, django_capture_on_commit_callbacks: Any
) -> None:
    server = receiver(200)
    hook, _ = webhook_create(tenant=None, name="noc", url=server.url, actor=as_admin)
    with (
        mock.patch("composer.notifications.delivery.deliveries_enqueue"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        delivery = webhook_test(webhook=hook, actor=as_admin)
    webhook_update(webhook=hook, is_enabled=False, actor=as_admin)
    delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.error) == ("cancelled", "the webhook is disabled")
    assert server.received == []


def test_a_redirect_is_not_followed(
    as_admin: Actor, receiver: Any, django_capture_on_commit_callbacks: Any
) -> None:
    server = receiver(302)
    hook, _ = webhook_create(tenant=None, name="moved", url=server.url, actor=as_admin)
    with django_capture_on_commit_callbacks(execute=True):
        delivery = webhook_test(webhook=hook, actor=as_admin)
    delivery.refresh_from_db()
    assert delivery.status_code == 302 and "redirects are not followed" in delivery.error
    assert len(server.received) == 1


def test_a_tenant_s_webhook_may_not_reach_a_private_address(
    acme: Any,
    as_alice: Actor,
    receiver: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    server = receiver(200)
    settings.COMPOSER_WEBHOOK_ALLOW_PRIVATE = True
    hook, _ = webhook_create(
        tenant=acme, name="acme", url=server.url.replace("127.0.0.1", "localhost"), actor=as_alice
    )
    settings.COMPOSER_WEBHOOK_ALLOW_PRIVATE = False
    with django_capture_on_commit_callbacks(execute=True):
        delivery = webhook_test(webhook=hook, actor=as_alice)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and "private or reserved address" in delivery.error
    assert server.received == []


def test_an_unanswering_receiver_is_a_network_error_retried(
    as_admin: Actor, django_capture_on_commit_callbacks: Any
) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    hook, _ = webhook_create(
        tenant=None, name="gone", url=f"http://127.0.0.1:{port}/", actor=as_admin
    )
    with django_capture_on_commit_callbacks(execute=True):
        delivery = webhook_test(webhook=hook, actor=as_admin)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.error.startswith("network error:")
    assert delivery.status_code is None and delivery.next_attempt_at is not None


class BrokenMailServer(BaseEmailBackend):
    """A mail backend whose server refuses the connection."""

    def send_messages(self, email_messages: Any) -> int:
        raise ConnectionRefusedError("[Errno 111] Connection refused")


def test_an_e_mail_the_mail_server_refused_is_sent_again_after_the_back_off(
    failure: Failure, as_admin: Actor, settings: Any
) -> None:
    settings.EMAIL_BACKEND = f"{__name__}.BrokenMailServer"
    route_create(tenant=None, name="noc", emails=["noc@example.com"], actor=as_admin)

    failure.fail()

    delivery = NotificationDelivery.objects.get()
    assert (delivery.channel, delivery.status, delivery.attempts) == ("email", "pending", 1)
    assert (
        delivery.error
        == "mail server error: ConnectionRefusedError: [Errno 111] Connection refused"
    )
    assert mail.outbox == []
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with mock.patch("django.utils.timezone.now", return_value=delivery.next_attempt_at):
        assert deliveries_dispatch() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    [sent] = mail.outbox
    assert sent.to == ["noc@example.com"] and sent.subject == delivery.subject


def test_a_tenant_s_webhook_connects_to_the_address_it_checked(
    receiver: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: a name that answers a public address to the check and a private one a
    moment later still gets the POST at the public address, resolved once. The public
    address is played by the local receiver (the connection to it is redirected there)."""
    import socket

    from composer.notifications.send import webhook_post

    server = receiver(200)
    port = int(server.url.split(":")[2].split("/")[0])
    settings.COMPOSER_WEBHOOK_ALLOW_PRIVATE = False
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.create_connection
    asked: list[str] = []
    dialled: list[str] = []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "hooks.example":
            return real_getaddrinfo(host, *args, **kwargs)
        asked.append(host)
        address = "93.184.216.34" if len(asked) == 1 else "127.0.0.1"  # rebound after
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, 0))]

    def create_connection(where: tuple[str, int], *args: Any, **kwargs: Any) -> Any:
        dialled.append(where[0])
        return real_connect(("127.0.0.1", port), *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    outcome = webhook_post(
        url=f"http://hooks.example:{port}/hooks/composer",
        secret="s" * 32,
        body=b"{}",
        delivery_id="1",
        event="alert.raised",
        tenant_owned=True,
        timeout_s=5,
    )
    assert outcome.ok, outcome.error
    assert asked == ["hooks.example"] and dialled == ["93.184.216.34"]
    assert server.received[0].headers["Host"] == f"hooks.example:{port}"


def test_a_tenant_s_webhook_whose_name_does_not_resolve_is_retried(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from composer.notifications.send import webhook_post

    settings.COMPOSER_WEBHOOK_ALLOW_PRIVATE = False

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    outcome = webhook_post(
        url="https://nowhere.example/hook",
        secret="s" * 32,
        body=b"{}",
        delivery_id="1",
        event="alert.raised",
        tenant_owned=True,
        timeout_s=5,
    )
    assert not outcome.ok and not outcome.permanent
    assert outcome.error.startswith("network error: nowhere.example does not resolve")
