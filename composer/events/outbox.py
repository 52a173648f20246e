"""Publishing events: the fan-out to groups, after commit, and the outbox sweep."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
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

logger = logging.getLogger(__name__)


def _subject_tenant(event: Event) -> int | None:
    """The tenant that owns what the event is about (its job's, else its composition's)."""
    if event.job_id:
        return event.job.tenant_id
    if event.composition_id:
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
    """Fan `event` out now and mark it published; False (logged, not raised) on failure.

    Runs after commit (`event_record`) and from the outbox sweep. `tenant_ids` is the
    audience; read from the database when not given.
    """
    try:
        if tenant_ids is None:
            tenant_ids = list(event.audience.values_list("tenant_id", flat=True))
        publish_many(event_layer_messages(event, tenant_ids))
    except Exception as exc:  # Redis down, a broken layer: the sweep sends it later
        logger.warning("event %s not published (%s); the sweep will retry", event.pk, exc)
        return False
    try:
        Event.objects.filter(pk=event.pk, published_at__isnull=True).update(
            published_at=timezone.now()
        )
    except Exception as exc:  # sent, but not marked: the sweep sends it again (de-duplicated)
        logger.warning("event %s published but not marked (%s)", event.pk, exc)
    return True


REPUBLISH_AFTER_S = 2.0
SWEEP_BATCH = 500


def events_publish_pending(
    *, older_than_s: float = REPUBLISH_AFTER_S, limit: int = SWEEP_BATCH
) -> int:
    """The outbox sweep: publish events still unpublished `older_than_s` after they happened.

    Their after-commit publish failed (Redis down) or their process died before it ran.
    Oldest first; stops at the first failure (Redis still down) and leaves the rest for
    the next run. An event may so go out twice; clients de-duplicate by id. Returns how
    many were published. A fixed number of queries per batch.
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    events = list(
        Event.objects.filter(published_at__isnull=True, at__lte=cutoff)
        .select_related("job", "composition")
        .order_by("id")[:limit]
    )
    if not events:
        return 0
    audience: dict[int, list[int]] = {event.pk: [] for event in events}
    for event_id, tenant in EventAudience.objects.filter(event_id__in=audience).values_list(
        "event_id", "tenant_id"
    ):
        audience[event_id].append(tenant)
    published: list[int] = []
    try:
        for event in events:
            publish_many(event_layer_messages(event, audience[event.pk]))
            published.append(event.pk)
    except Exception as exc:
        logger.warning("outbox sweep stopped after %d events: %s", len(published), exc)
    if published:
        Event.objects.filter(pk__in=published, published_at__isnull=True).update(
            published_at=timezone.now()
        )
        logger.info("outbox sweep published %d events", len(published))
    return len(published)


def publish(group: str, message: Mapping[str, Any]) -> None:
    """Send `message` to every connection in `group` (STYLE §7: the one way to send).

    Synchronous: called after commit by web processes and Celery workers. Raises when the
    channel layer cannot be reached; `event_publish` turns that into a later retry.
    """
    publish_many([(group, message)])


def publish_many(items: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """`publish` several (group, message) pairs in one round trip.

    On Redis, through `composer.fanout` (one PUBLISH per group of the pre-encoded frame;
    each web process fans it out to its connections); with the in-memory layer of a test
    run without Redis, through the layer's `group_send`.
    """
    if not items:
        return
    frames = [(group, m["id"], m["tenant_id"], m["text"]) for group, m in items]
    if fanout.publish_many(frames):
        return
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(_group_send_all)(layer, items)


async def _group_send_all(layer: Any, items: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    for group, message in items:
        await layer.group_send(group, dict(message))
