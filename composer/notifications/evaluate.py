"""From alerts to deliveries: run in the health poll's transaction, after its events.

For each alert the poll opened, escalated or closed, the enabled routes are asked
(`composer.notifications.routing`): a tenant's route only for an alert that hurt the tenant
(`AlertAudience`, written with the alert's event just before), an operators' route for
every alert; what a silence of the route's owner covers is held back. Each (route,
destination) that is to hear of it gets a `NotificationDelivery` row with its body fixed;
after commit the rows are handed to workers (`delivery.deliveries_enqueue`), and beat's
dispatch pass sends any the broker did not take. So an alert and its notifications commit
together, or neither does.

- *opened*: routes whose severity floor, rules and sources match;
- *escalated*: an alert whose severity changed now matches a route it had not been sent to
  (a warning that became critical reaches the critical-only route then);
- *closed*: routes that announced the alert (a delivery for its opening or escalation
  exists) and ask to hear of closings (`on_close`): never "resolved" for an alert a route
  was not told of.

A fixed number of queries per poll, whatever the number of alerts and routes.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db import transaction
from django.utils import timezone

from composer.models import (
    AlertAudience,
    DeliveryChannel,
    DeliveryEvent,
    NotificationDelivery,
    NotificationRoute,
    Silence,
    Tenant,
)
from composer.notifications.payloads import alert_body, alert_email, body_digest, body_text
from composer.notifications.routing import AlertFacts, route_hears, route_matches, silenced
from fabric.models import Alert

logger = logging.getLogger(__name__)

__all__ = ["notifications_for_alerts"]

ANNOUNCING = (DeliveryEvent.OPENED, DeliveryEvent.ESCALATED)


@dataclass(frozen=True)
class _Wanted:
    route: NotificationRoute
    alert: Alert
    event: str


def _facts(alert: Alert) -> AlertFacts:
    return AlertFacts(
        severity=alert.severity,
        rule=alert.rule,
        source_type=alert.source_type,
        source_id=alert.source_id,
    )


def notifications_for_alerts(
    *,
    opened: Sequence[Alert] = (),
    updated: Sequence[Alert] = (),
    closed: Sequence[Alert] = (),
    now: datetime | None = None,
) -> list[int]:
    """Write the deliveries the poll's alerts call for; return their ids. Call inside the
    transaction that changed the alerts, after their events (which write the audiences)."""
    if not (opened or updated or closed):
        return []
    routes = list(
        NotificationRoute.objects.filter(is_enabled=True)
        .select_related("tenant", "webhook")
        .order_by("pk")
    )
    if not routes:
        return []
    moment = now or timezone.now()
    alerts = [*opened, *updated, *closed]
    ids = [a.pk for a in alerts]
    audience: dict[int, set[int]] = defaultdict(set)
    for alert_id, tenant_id in AlertAudience.objects.filter(alert_id__in=ids).values_list(
        "alert_id", "tenant_id"
    ):
        audience[alert_id].add(tenant_id)
    silences = list(Silence.objects.active(moment))
    announced: set[tuple[int, int]] = set()  # (route, alert) already told of the alert
    if updated or closed:
        announced = set(
            NotificationDelivery.objects.filter(
                alert_id__in=[a.pk for a in (*updated, *closed)],
                route__isnull=False,
                event__in=ANNOUNCING,
            ).values_list("route_id", "alert_id")
        )
    wanted: list[_Wanted] = []
    for event, group in (
        (DeliveryEvent.OPENED, opened),
        (DeliveryEvent.ESCALATED, updated),
        (DeliveryEvent.CLOSED, closed),
    ):
        for alert in group:
            facts = _facts(alert)
            for route in routes:
                if not route_hears(route, audience=audience.get(alert.pk, ())):
                    continue
                if event == DeliveryEvent.CLOSED:
                    if not route.on_close or (route.pk, alert.pk) not in announced:
                        continue
                elif not route_matches(route, facts) or (
                    event == DeliveryEvent.ESCALATED and (route.pk, alert.pk) in announced
                ):
                    continue
                if silenced(facts, silences, owner=route.tenant_id, at=moment):
                    continue
                wanted.append(_Wanted(route=route, alert=alert, event=event))
    return _write(wanted, moment)


def _write(wanted: Iterable[_Wanted], now: datetime) -> list[int]:
    """One row per destination of each wanted (route, alert, event); conflicts (written by
    a twin poll) are skipped. Enqueued after commit."""
    rows: list[NotificationDelivery] = []
    bodies: dict[tuple[int | None, int], dict[str, object]] = {}
    for item in wanted:
        route, alert = item.route, item.alert
        tenant: Tenant | None = route.tenant
        destinations: list[tuple[str, list[str]]] = []
        if route.emails:
            destinations.append((DeliveryChannel.EMAIL, list(route.emails)))
        if route.webhook is not None and route.webhook.is_enabled:
            destinations.append((DeliveryChannel.WEBHOOK, []))
        for channel, recipients in destinations:
            delivery_id = uuid.uuid4()
            key = (route.tenant_id, alert.pk)
            # One body per owner and alert (its delivery id aside): built once, cut once.
            if key not in bodies:
                bodies[key] = alert_body(
                    alert, event=item.event, tenant=tenant, delivery_id="", created_at=now
                )
            body = {**bodies[key], "type": f"alert.{item.event}", "delivery_id": str(delivery_id)}
            text = body_text(body)
            subject = ""
            if channel == DeliveryChannel.EMAIL:
                subject, text = alert_email(body, route=route, event=item.event)
            rows.append(
                NotificationDelivery(
                    uuid=delivery_id,
                    tenant_id=route.tenant_id,
                    route=route,
                    webhook=route.webhook if channel == DeliveryChannel.WEBHOOK else None,
                    channel=channel,
                    recipients=recipients,
                    alert=alert,
                    event=item.event,
                    subject=subject,
                    body=text,
                    body_sha256=body_digest(text),
                    next_attempt_at=now,
                    created_at=now,
                )
            )
    if not rows:
        return []
    NotificationDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    ids = list(
        NotificationDelivery.objects.filter(uuid__in=[r.uuid for r in rows]).values_list(
            "pk", flat=True
        )
    )
    if ids:
        from composer.notifications.delivery import deliveries_enqueue

        transaction.on_commit(partial(deliveries_enqueue, ids), robust=True)
        logger.info("%d notification(s) to send", len(ids))
    return ids
