"""Webhooks: add, change, set a new secret, delete, and "Send a test"; each audited.

The signing secret is made here (`signing.new_secret`) unless the caller gives one, stored
only encrypted (`fabric.credentials.encrypt_text`), and handed back to the caller once,
when it is made; nothing reads it again but the worker that signs a delivery.
"""

from __future__ import annotations

import ipaddress
import logging
import uuid
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from cryptography.fernet import InvalidToken
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from composer.errors import ComposerError
from composer.models import (
    DeliveryChannel,
    DeliveryEvent,
    DeliveryStatus,
    NotificationDelivery,
    Tenant,
    Webhook,
)
from composer.notifications.access import manage_check
from composer.notifications.audit import Actor, notification_audit, notification_values
from composer.notifications.checks import raise_with_model_checks, save_named
from composer.notifications.payloads import body_digest, body_text, test_body
from composer.notifications.signing import new_secret
from fabric.choices import ChangeAction
from fabric.credentials import BadCredentialsKey, NoCredentialsKey, encrypt_text, reencrypt
from fabric.services.managers.rotate import RotationResult
from fabric.validators import text_problem

logger = logging.getLogger(__name__)

__all__ = [
    "KEEP",
    "SECRET_MAX",
    "SECRET_MIN",
    "TestPending",
    "WebhookInUse",
    "secret_problem",
    "url_problem",
    "webhook_create",
    "webhook_delete",
    "webhook_secret_rotate",
    "webhook_test",
    "webhook_update",
    "webhooks_secrets_rotate",
]

SECRET_MIN = 16
SECRET_MAX = 200


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()  # "leave this field as it is" in an update


class WebhookInUse(ComposerError):
    """A webhook that routes still send to cannot be deleted (409, field `routes`)."""

    code = "webhook_in_use"
    status_code = 409


class TestPending(ComposerError):
    """A test of this webhook is still on its way (409)."""

    code = "test_pending"
    status_code = 409


def url_problem(url: str, *, tenant_owned: bool) -> str | None:
    """Why `url` cannot be a webhook's address, or None: http or https, a host, no user or
    password in it (the signature authenticates), at most 500 characters; a tenant's not a
    literal private or loopback address (a name is checked when it is sent to)."""
    if not url:
        return "Enter the address the alerts are posted to."
    if len(url) > 500:
        return "At most 500 characters."
    problem = text_problem(url)
    if problem is not None or any(ch.isspace() for ch in url):
        return "An address has no spaces or control characters."
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "This is not a web address."
    if parts.scheme not in ("http", "https"):
        return "Only http:// and https:// addresses are accepted."
    if not parts.hostname:
        return "The address names no host."
    if parts.username is not None or parts.password is not None:
        return (
            "Put no user name or password in the address: receivers check the "
            "X-Composer-Signature header instead."
        )
    if port == 0:
        return "Port 0 is not a port to post to."
    if tenant_owned:
        try:
            address = ipaddress.ip_address(parts.hostname)
        except ValueError:
            return None
        from django.conf import settings

        if not address.is_global and not getattr(settings, "COMPOSER_WEBHOOK_ALLOW_PRIVATE", False):
            return "A tenant's webhook must reach a public address, not a private or loopback one."
    return None


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot sign, or None."""
    if len(secret) < SECRET_MIN:
        return f"A secret has at least {SECRET_MIN} characters (leave it empty to get one made)."
    if len(secret) > SECRET_MAX:
        return f"A secret has at most {SECRET_MAX} characters."
    if any(ch.isspace() or not ch.isprintable() for ch in secret):
        return "A secret is printable characters without spaces."
    return None


def _encrypt(secret: str) -> str:
    try:
        return encrypt_text(secret)
    except (NoCredentialsKey, BadCredentialsKey) as exc:
        raise ValidationError({"secret": f"The secret cannot be stored: {exc}."}) from None


def _check(webhook: Webhook, *, secret: str | None) -> None:
    errors: dict[str, str] = {}
    problem = url_problem(webhook.url, tenant_owned=webhook.tenant_id is not None)
    if problem:
        errors["url"] = problem
    if secret is not None and (problem := secret_problem(secret)):
        errors["secret"] = problem
    if not webhook.name.strip():
        errors["name"] = "Give the webhook a name."
    raise_with_model_checks(webhook, errors, exclude=["url", "secret_ciphertext"])


def _save(webhook: Webhook) -> None:
    save_named(webhook, "webhook")


def webhook_create(
    *,
    tenant: Tenant | None,
    name: str,
    url: str,
    secret: str | None = None,
    is_enabled: bool = True,
    actor: Actor,
) -> tuple[Webhook, str | None]:
    """Add a webhook for `tenant` (None: the operators). Returns it and the secret made for
    it (None when the caller gave one): the only time it is shown."""
    manage_check(actor.user, tenant)
    made = None
    if not secret:
        secret = made = new_secret()
    webhook = Webhook(
        tenant=tenant,
        name=name.strip(),
        url=url.strip(),
        is_enabled=is_enabled,
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
    )
    _check(webhook, secret=secret)
    webhook.secret_ciphertext = _encrypt(secret)
    with transaction.atomic():
        _save(webhook)
        notification_audit(
            webhook,
            ChangeAction.ADDED,
            before={},
            after=notification_values(webhook),
            actor=actor,
            message="webhook added",
            extra={"secret": (None, "set")},
        )
    return webhook, made


def webhook_update(
    *,
    webhook: Webhook,
    name: Any = KEEP,
    url: Any = KEEP,
    is_enabled: Any = KEEP,
    secret: str | None = None,
    actor: Actor,
) -> Webhook:
    """Change a webhook (KEEP: leave a field); `secret`, when given, replaces the stored
    one. Its owner never changes."""
    manage_check(actor.user, webhook.tenant_id)
    with transaction.atomic():
        stored = (
            Webhook.objects.select_for_update(of=("self",))
            .select_related("tenant")
            .get(pk=webhook.pk)
        )
        before = notification_values(stored)
        if name is not KEEP:
            stored.name = str(name).strip()
        if url is not KEEP:
            stored.url = str(url).strip()
        if is_enabled is not KEEP:
            stored.is_enabled = bool(is_enabled)
        _check(stored, secret=secret or None)
        extra = {}
        if secret:
            stored.secret_ciphertext = _encrypt(secret)
            extra["secret"] = ("set", "changed")
        _save(stored)
        notification_audit(
            stored,
            ChangeAction.CHANGED,
            before=before,
            after=notification_values(stored),
            actor=actor,
            message="webhook changed",
            extra=extra,
        )
    return stored


def webhook_secret_rotate(*, webhook: Webhook, actor: Actor) -> str:
    """Give `webhook` a new secret, made here; returns it (shown once). Deliveries signed
    from now on use it, retries included."""
    secret = new_secret()
    webhook_update(webhook=webhook, secret=secret, actor=actor)
    return secret


def webhook_delete(*, webhook: Webhook, actor: Actor) -> None:
    """Delete a webhook and its delivery log. Refused while a route sends to it."""
    manage_check(actor.user, webhook.tenant_id)
    with transaction.atomic():
        stored = (
            Webhook.objects.select_for_update(of=("self",))
            .select_related("tenant")
            .get(pk=webhook.pk)
        )
        names = list(stored.routes.order_by("name").values_list("name", flat=True))
        if names:
            raise WebhookInUse(
                f"Routes still send to this webhook: {', '.join(names)}. Change or delete "
                "them first.",
                field="routes",
            )
        pk, before = stored.pk, notification_values(stored)
        stored.delete()
        notification_audit(
            stored,
            ChangeAction.DELETED,
            before=before,
            after={},
            actor=actor,
            message="webhook deleted",
            target_id=pk,
        )


def webhook_test(*, webhook: Webhook, actor: Actor) -> NotificationDelivery:
    """ "Send a test": a delivery of a test body, sent like any other (signed, retried,
    logged). One at a time per webhook."""
    manage_check(actor.user, webhook.tenant_id)
    now = timezone.now()
    with transaction.atomic():
        Webhook.objects.select_for_update(of=("self",)).filter(pk=webhook.pk).first()
        if NotificationDelivery.objects.filter(
            webhook=webhook, event=DeliveryEvent.TEST, status=DeliveryStatus.PENDING
        ).exists():
            raise TestPending("A test of this webhook is still on its way: see its delivery log.")
        delivery_id = uuid.uuid4()
        text = body_text(test_body(webhook, delivery_id=str(delivery_id), created_at=now))
        delivery = NotificationDelivery.objects.create(
            uuid=delivery_id,
            tenant_id=webhook.tenant_id,
            webhook=webhook,
            channel=DeliveryChannel.WEBHOOK,
            event=DeliveryEvent.TEST,
            body=text,
            body_sha256=body_digest(text),
            next_attempt_at=now,
            created_at=now,
            created_by=actor.user if getattr(actor.user, "pk", None) else None,
        )
        from composer.notifications.delivery import deliveries_enqueue

        transaction.on_commit(partial(deliveries_enqueue, [delivery.pk]), robust=True)
    return delivery


def webhooks_secrets_rotate() -> RotationResult:
    """Re-encrypt every webhook's signing secret with the newest key (`manage.py
    rotate_credentials` runs it after the managers' credentials); one row lock each, audited
    without the secret. A secret no configured key opens is left and named in the result."""
    result = RotationResult()
    for pk in Webhook.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            hook = Webhook.objects.select_for_update(of=("self",)).filter(pk=pk).first()
            if hook is None:
                continue
            try:
                hook.secret_ciphertext = reencrypt(hook.secret_ciphertext)
            except InvalidToken:
                result.unreadable.append(f"webhook {hook.name}")
                logger.warning("the secret of webhook %s: no configured key opens it", pk)
                continue
            hook.save(update_fields=["secret_ciphertext", "updated_at"])
            notification_audit(
                hook,
                ChangeAction.CHANGED,
                before={},
                after={},
                actor=Actor(user=None, source="rotate_credentials"),
                message="signing secret re-encrypted with the newest key",
                extra={"secret": ("stored", "re-encrypted with the newest key")},
            )
            result.rotated.append(hook.name)
    return result
