"""A webhook's signing secret: encrypted at rest, rotated with the managers' keys, never in a
log line or an audit record, and a clear failure when no key opens it."""

from __future__ import annotations

import logging
from io import StringIO
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from composer.models import Webhook
from composer.notifications import Actor, delivery_attempt, signature_verify, webhook_create
from composer.notifications import webhook_test as send_test
from fabric.credentials import decrypt_text
from fabric.models import ChangeRecord

pytestmark = pytest.mark.django_db

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()


def test_the_secret_is_stored_encrypted_and_never_logged(
    as_admin: Actor, receiver: Any, caplog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    server = receiver(200)
    hook, secret = webhook_create(tenant=None, name="noc", url=server.url, actor=as_admin)
    assert secret is not None
    stored = Webhook.objects.get(pk=hook.pk).secret_ciphertext
    assert secret not in stored and decrypt_text(stored) == secret
    with django_capture_on_commit_callbacks(execute=True):
        send_test(webhook=hook, actor=as_admin)
    assert len(server.received) == 1
    assert secret not in caplog.text and stored not in caplog.text
    records = ChangeRecord.objects.filter(target_type="webhook")
    assert all(secret not in str(r.changes) + r.message for r in records)


def test_rotate_credentials_re_encrypts_webhook_secrets_too(
    as_admin: Actor, settings: Any, receiver: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = [OLD_KEY]
    server = receiver(200)
    hook, secret = webhook_create(tenant=None, name="noc", url=server.url, actor=as_admin)
    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY, OLD_KEY]
    out = StringIO()
    call_command("rotate_credentials", stdout=out)
    assert "Re-encrypted 1 webhook signing secret(s)." in out.getvalue()
    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY]  # the old key dropped after the rotation
    with django_capture_on_commit_callbacks(execute=True):
        send_test(webhook=hook, actor=as_admin)
    [request] = server.received
    assert signature_verify(
        header=request.headers["X-Composer-Signature"], secret=str(secret), body=request.body
    )
    record = ChangeRecord.objects.filter(target_type="webhook", source="rotate_credentials").get()
    assert str(secret) not in str(record.changes)


def test_a_secret_no_key_opens_fails_the_delivery_saying_why(
    as_admin: Actor, settings: Any, receiver: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = [OLD_KEY]
    server = receiver(200)
    hook, _ = webhook_create(tenant=None, name="noc", url=server.url, actor=as_admin)
    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY]
    with django_capture_on_commit_callbacks(execute=True):
        delivery = send_test(webhook=hook, actor=as_admin)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and "cannot be decrypted" in delivery.error
    assert server.received == []
    assert delivery_attempt(delivery_id=delivery.pk) is None  # given up: nothing more
