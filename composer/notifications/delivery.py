"""Sending deliveries: the worker's attempt, the back-off, and beat's dispatch pass.

A `NotificationDelivery` row is the outbox of its message (as a `Job` row is of its task,
`composer.services.dispatch`):

1. Written PENDING, due at once (`next_attempt_at`), in the transaction of its alert;
   after commit its task is sent to the broker (`deliveries_enqueue`, `dispatched_at`).
2. A worker claims it by compare-and-set (`delivery_attempt`): due, not held by a live
   attempt; the claim counts the attempt and holds the row until `claimed_until` (the
   timeout and a margin). A duplicate message finds it claimed or done and does nothing.
3. The attempt's outcome is recorded only by the claim that made it (its attempt number):
   2xx is DELIVERED; anything else is due again after the next back-off of
   COMPOSER_NOTIFY_RETRY_S (30 s, 2 min, 10 min, ...), or FAILED when those are spent or
   trying again cannot help.
4. `deliveries_dispatch` (beat, every COMPOSER_NOTIFY_DISPATCH_S) sends the due rows whose
   message no worker holds: retries whose back-off is over, rows whose broker refused them
   (Redis away), a message lost with a Redis restart (after COMPOSER_JOB_REDISPATCH_S), and
   an attempt whose worker was killed in the middle (its claim ran out). At least once: a
   receiver de-duplicates by `X-Composer-Delivery`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from composer.models import DeliveryChannel, DeliveryStatus, NotificationDelivery
from composer.notifications.send import Outcome, email_send, webhook_post
from fabric.credentials import BadCredentialsKey, NoCredentialsKey, decrypt_text

logger = logging.getLogger(__name__)

__all__ = [
    "CLAIM_MARGIN_S",
    "deliveries_dispatch",
    "deliveries_due",
    "deliveries_enqueue",
    "deliveries_prune",
    "delivery_attempt",
    "retry_delays",
    "webhook_timeout_s",
]

CLAIM_MARGIN_S = 30  # beyond the timeout, before an attempt's worker is presumed dead
DISPATCH_BATCH = 500
HISTORY_KEPT = 10  # attempts kept on the row, newest last


def retry_delays() -> list[int]:
    """Seconds to wait before each retry (COMPOSER_NOTIFY_RETRY_S); attempts in all: one more."""
    raw = getattr(settings, "COMPOSER_NOTIFY_RETRY_S", None)
    if raw is None:
        raw = [30, 120, 600, 1800, 7200, 21600]
    return [max(1, int(value)) for value in raw]


def webhook_timeout_s() -> float:
    return float(getattr(settings, "COMPOSER_WEBHOOK_TIMEOUT_S", 5))


def _task() -> Any:
    import composer.tasks

    return composer.tasks.notification_deliver_task


def deliveries_enqueue(ids: Iterable[int]) -> int:
    """Send each delivery's task to the broker (after the commit that wrote them); a refusal
    leaves the rest to the dispatch pass. Returns how many the broker took."""
    sent: list[int] = []
    for pk in ids:
        try:
            _task().delay(pk)
        except Exception as exc:  # kombu and redis-py raise several types
            logger.warning(
                "notification %s could not be queued (%s: %s); the dispatch pass sends it",
                pk,
                type(exc).__name__,
                exc,
            )
            break
        sent.append(pk)
    if sent:
        # Only rows no attempt has begun on: an eager or quick worker may be done already.
        NotificationDelivery.objects.filter(pk__in=sent, attempts=0).update(
            dispatched_at=timezone.now()
        )
    return len(sent)


def deliveries_due(*, now: datetime | None = None) -> Any:
    """PENDING deliveries whose attempt is due and whose message no worker holds."""
    moment = now or timezone.now()
    lost = moment - timedelta(seconds=int(getattr(settings, "COMPOSER_JOB_REDISPATCH_S", 60)))
    return NotificationDelivery.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=moment),
        # Never sent for this attempt: not at all, before its back-off began, or so long
        # ago that the broker must have lost the message.
        Q(dispatched_at__isnull=True)
        | Q(dispatched_at__lt=F("next_attempt_at"))
        | Q(dispatched_at__lt=lost),
        status=DeliveryStatus.PENDING,
        next_attempt_at__lte=moment,
    )


def deliveries_dispatch(*, now: datetime | None = None) -> int:
    """Beat: send the due deliveries no worker holds (see the module docstring). Oldest due
    first, at most DISPATCH_BATCH a pass; stops at the broker's first refusal."""
    moment = now or timezone.now()
    due = list(
        deliveries_due(now=moment)
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:DISPATCH_BATCH]
    )
    sent: list[int] = []
    for pk in due:
        try:
            _task().delay(pk)
        except Exception as exc:
            logger.warning(
                "notification dispatch stopped after %d: the task queue refused (%s: %s)",
                len(sent),
                type(exc).__name__,
                exc,
            )
            break
        sent.append(pk)
    if sent:
        NotificationDelivery.objects.filter(pk__in=sent, status=DeliveryStatus.PENDING).filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lt=moment)
        ).update(dispatched_at=moment)
        logger.info("dispatched %d notification(s)", len(sent))
    return len(sent)


def _claim(pk: int, now: datetime) -> int | None:
    """Take delivery `pk` for one attempt (compare-and-set); its attempt number, or None
    when it is not due, done, or held by a live attempt."""
    lease = now + timedelta(seconds=webhook_timeout_s() + CLAIM_MARGIN_S)
    taken = (
        NotificationDelivery.objects.filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
            pk=pk,
            status=DeliveryStatus.PENDING,
            next_attempt_at__lte=now,
        ).update(
            claimed_until=lease,
            attempts=F("attempts") + 1,
            dispatched_at=None,
            last_attempt_at=now,
        )
        == 1
    )
    if not taken:
        return None
    return int(NotificationDelivery.objects.values_list("attempts", flat=True).get(pk=pk))


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> Outcome | None:
    """One attempt at delivery `delivery_id` (the worker's task). None when there was none
    to make (a duplicate message, not due, done). Never raises for the receiver's sake: its
    failures are the delivery's, recorded and retried."""
    moment = now or timezone.now()
    attempt = _claim(delivery_id, moment)
    if attempt is None:
        return None
    delivery = (
        NotificationDelivery.objects.select_related("webhook", "webhook__tenant")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None:
        return None
    outcome = _send(delivery)
    _record(delivery, attempt=attempt, outcome=outcome, at=moment)
    return outcome


def _send(delivery: NotificationDelivery) -> Outcome:
    if delivery.channel == DeliveryChannel.EMAIL:
        if not delivery.recipients:
            return Outcome(ok=False, error="no recipients", permanent=True)
        return email_send(
            subject=delivery.subject, text=delivery.body, recipients=delivery.recipients
        )
    webhook = delivery.webhook
    if webhook is None:
        return Outcome(ok=False, error="the webhook was deleted", permanent=True)
    if not webhook.is_enabled:
        return Outcome(ok=False, error="the webhook is disabled", permanent=True)
    try:
        secret = decrypt_text(webhook.secret_ciphertext)
    except (NoCredentialsKey, BadCredentialsKey, InvalidToken):
        return Outcome(
            ok=False,
            error="the webhook's secret cannot be decrypted (COMPOSER_CREDENTIALS_KEYS holds "
            "no key that opens it): set a new secret",
            permanent=True,
        )
    return webhook_post(
        url=webhook.url,
        secret=secret,
        body=delivery.body.encode(),
        delivery_id=str(delivery.uuid),
        event=delivery.event_type,
        tenant_owned=webhook.tenant_id is not None,
        timeout_s=webhook_timeout_s(),
    )


def _record(
    delivery: NotificationDelivery, *, attempt: int, outcome: Outcome, at: datetime
) -> None:
    """Write the attempt's outcome, unless another claim has taken the row since."""
    delays = retry_delays()
    done = timezone.now()
    fields: dict[str, Any] = {
        "claimed_until": None,
        "dispatched_at": None,
        "status_code": outcome.status_code,
        "error": outcome.error[:500],
        "history": [
            *(delivery.history or [])[-(HISTORY_KEPT - 1) :],
            {
                "attempt": attempt,
                "at": at.isoformat(),
                "ok": outcome.ok,
                "status_code": outcome.status_code,
                "error": outcome.error[:200],
                "elapsed_ms": outcome.elapsed_ms,
            },
        ],
    }
    if outcome.ok:
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=done, next_attempt_at=None)
    elif outcome.permanent or attempt > len(delays):
        cancelled = delivery.webhook is not None and not delivery.webhook.is_enabled
        fields.update(
            status=DeliveryStatus.CANCELLED if cancelled else DeliveryStatus.FAILED,
            next_attempt_at=None,
        )
    else:
        fields["next_attempt_at"] = at + timedelta(seconds=delays[attempt - 1])
    NotificationDelivery.objects.filter(
        pk=delivery.pk, attempts=attempt, status=DeliveryStatus.PENDING
    ).update(**fields)
    where = (
        urlsplit(delivery.webhook.url).hostname
        if delivery.webhook is not None
        else f"{len(delivery.recipients)} recipient(s)"
    )
    if outcome.ok:
        logger.info(
            "notification %s (%s) delivered to %s on attempt %d (%s ms)",
            delivery.pk,
            delivery.channel,
            where,
            attempt,
            outcome.elapsed_ms,
        )
    else:
        logger.warning(
            "notification %s (%s) to %s failed on attempt %d: %s%s",
            delivery.pk,
            delivery.channel,
            where,
            attempt,
            outcome.error,
            f"; next attempt at {fields['next_attempt_at'].isoformat()}"
            if fields.get("next_attempt_at")
            else "; not retried",
        )


def deliveries_prune(*, now: datetime | None = None) -> int:
    """Delete finished deliveries older than COMPOSER_NOTIFY_RETENTION_DAYS. Returns how
    many."""
    moment = now or timezone.now()
    days = int(getattr(settings, "COMPOSER_NOTIFY_RETENTION_DAYS", 30))
    deleted, _ = (
        NotificationDelivery.objects.exclude(status=DeliveryStatus.PENDING)
        .filter(created_at__lt=moment - timedelta(days=days))
        .delete()
    )
    if deleted:
        logger.info("pruned %d notification deliveries older than %d days", deleted, days)
    return deleted
