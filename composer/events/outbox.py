"""Publishing events: the fan-out to groups, after commit, and the outbox sweep."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone

from composer import fanout
from composer.events.payloads import (
    OPERATORS_GROUP,
    LayerMessage,
    composition_group,
    event_message_text,
    job_group,
    payload_for,
    tenant_group,
)
from composer.models import Event, EventAudience
from composer.monitoring.metrics import EVENTS_PUBLISHED

logger = logging.getLogger(__name__)


def _subject_tenant(event: Event) -> int | None:
    """The tenant that owns what the event is about (its job's, else its composition's)."""
    if event.job is not None:
        return event.job.tenant_id
    if event.composition is not None:
        return event.composition.tenant_id
    return None


def event_layer_messages(
    event: Event, tenant_ids: Collection[int]
) -> list[tuple[str, LayerMessage]]:
    """(group, message) pairs that fan `event` out.

    `operators` get the full payload; each audience tenant's group its own cut. The
    composition and job groups get the cut of the tenant that owns them (when that tenant
    is in the audience), or the full payload for operators when nobody owns them.
    """

    def message(tenant: int | None, payload: dict[str, Any]) -> LayerMessage:
        text = event_message_text(event, payload=payload)
        return {"type": "event.message", "id": event.pk, "tenant_id": tenant, "text": text}

    full = message(None, dict(event.payload))
    pairs: list[tuple[str, LayerMessage]] = [(OPERATORS_GROUP, full)]
    cut: dict[int, LayerMessage] = {}
    for tenant in tenant_ids:
        scoped = payload_for(event, tenant_id=tenant)
        if scoped is not None:
            cut[tenant] = message(tenant, scoped)
            pairs.append((tenant_group(tenant), cut[tenant]))
    subject = _subject_tenant(event) if (event.composition_id or event.job_id) else None
    routed = full if subject is None else cut.get(subject)
    if routed is not None:
        if event.composition_id:
            pairs.append((composition_group(event.composition_id), routed))
        if event.job_id:
            pairs.append((job_group(event.job_id), routed))
    return pairs


def event_publish(event: Event, *, tenant_ids: Collection[int] | None = None) -> bool:
    """Fan `event` out now; False (logged, not raised) on failure.

    Runs after commit (`event_record`). `tenant_ids` is the audience; read from the
    database when not given. Through Redis the event joins the published ledger in the
    same round trip and the sweep marks it published later, many at once, so publishing
    writes nothing to the database on the path of the change; through the channel layer
    (no Redis) it is marked now.
    """
    try:
        if tenant_ids is None:
            tenant_ids = list(event.audience.values_list("tenant_id", flat=True))
        if publish_many(event_layer_messages(event, tenant_ids), ledger=(ledger_token(event),)):
            EVENTS_PUBLISHED.labels(path="after_commit").inc()
            return True
    except Exception as exc:  # Redis down, a broken layer: the sweep sends it later
        logger.warning("event %s not published (%s); the sweep will retry", event.pk, exc)
        return False
    EVENTS_PUBLISHED.labels(path="after_commit").inc()
    try:
        Event.objects.filter(pk=event.pk, published_at__isnull=True).update(
            published_at=timezone.now()
        )
    except Exception as exc:  # sent, but not marked: the sweep sends it again (de-duplicated)
        logger.warning("event %s published but not marked (%s)", event.pk, exc)
    return True


def ledger_token(event: Event) -> str:
    """The event in the published ledger: its id and its time, so that a ledger outliving
    its database (a test run, a restore) never vouches for another event of that id."""
    return f"{event.pk}@{int(event.at.timestamp() * 1_000_000)}"


REPUBLISH_AFTER_S = 2.0
SWEEP_BATCH = 500


def events_publish_pending(
    *, older_than_s: float = REPUBLISH_AFTER_S, limit: int = SWEEP_BATCH, rounds: int = 20
) -> int:
    """The outbox sweep: mark what went out, publish what did not.

    Events still unmarked `older_than_s` after they happened are either in the published
    ledger (sent after commit: marked now, in one UPDATE) or not: their publish failed
    (Redis down) or their process died before it ran, and they are published now. Oldest
    first, `limit` at a time, up to `rounds` batches while batches come full; stops at the
    first failure (Redis still down) and leaves the rest for the next run. An event may so
    go out twice (a ledger lost with a Redis restart); clients de-duplicate by id. Returns
    how many were published now. A fixed number of queries per batch.
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    total = 0
    for _ in range(max(1, rounds)):
        published, more = _sweep_batch(cutoff, limit)
        total += published
        if not more:
            break
    return total


def _sweep_batch(cutoff: datetime, limit: int) -> tuple[int, bool]:
    """One batch of the sweep: (events published now, whether another batch may follow)."""
    events = list(
        Event.objects.filter(published_at__isnull=True, at__lte=cutoff)
        .select_related("job", "composition")
        .order_by("id")[:limit]
    )
    if not events:
        return 0, False
    tokens = {event.pk: ledger_token(event) for event in events}
    sent = fanout.ledger_published(list(tokens.values()))
    missed = [event for event in events if tokens[event.pk] not in sent]
    audience: dict[int, list[int]] = {event.pk: [] for event in missed}
    if missed:
        for event_id, tenant in EventAudience.objects.filter(event_id__in=audience).values_list(
            "event_id", "tenant_id"
        ):
            audience[event_id].append(tenant)
    published: set[int] = set()
    failed = False
    try:
        for event in missed:
            publish_many(event_layer_messages(event, audience[event.pk]))
            published.add(event.pk)
    except Exception as exc:
        failed = True
        logger.warning("outbox sweep stopped after %d events: %s", len(published), exc)
    done = [pk for pk, token in tokens.items() if pk in published or token in sent]
    if done:
        Event.objects.filter(pk__in=done, published_at__isnull=True).update(
            published_at=timezone.now()
        )
        fanout.ledger_forget([tokens[pk] for pk in done])
    if published:
        EVENTS_PUBLISHED.labels(path="sweep").inc(len(published))
        logger.info("outbox sweep published %d events", len(published))
    return len(published), len(events) == limit and not failed


def publish(group: str, message: Mapping[str, Any]) -> None:
    """Send `message` to every connection in `group` (the one way to send).

    Synchronous: called after commit by web processes and Celery workers. Raises when the
    channel layer cannot be reached; `event_publish` turns that into a later retry.
    """
    publish_many([(group, message)])


def publish_many(
    items: Sequence[tuple[str, Mapping[str, Any]]], *, ledger: Sequence[str] = ()
) -> bool:
    """`publish` several (group, message) pairs in one round trip.

    On Redis, through `composer.fanout` (one PUBLISH per group of the pre-encoded frame;
    each web process fans it out to its connections), with the `ledger` tokens
    added to the published ledger: returns True. With the in-memory layer of a test run
    without Redis, through the layer's `group_send`: returns False (no ledger).
    """
    if not items:
        return False
    frames = [(group, m["id"], m["tenant_id"], m["text"]) for group, m in items]
    if fanout.publish_many(frames, ledger=ledger):
        return True
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(_group_send_all)(layer, items)
    return False


async def _group_send_all(layer: Any, items: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    for group, message in items:
        await layer.group_send(group, dict(message))
