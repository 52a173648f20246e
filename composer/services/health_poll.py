"""One health poll as the console lives it: fabric's poll, then what it means for tenants.

`fabric.health.poll.health_poll` reads a manager's health, stores samples and opens or
closes alerts with their blast radius. Fabric knows nothing of compositions or browsers, so
this module does the rest, in the same transaction as the poll (DESIGN: events are
written to the database first and published after commit, so an alert and its event
commit together or not at all):

1. compositions that lose a device become DEGRADED, those whose devices are all back
   become READY again, and a heal job starts where the composition opted in
   (`composer.services.health.compositions_react_to_health`);
2. each alert opened, changed or closed becomes a `fabric.alert` event for the operators
   and for every tenant in its blast radius (each tenant sees only its own compositions),
   and the e-mails and webhooks its notification routes ask for are written, to be sent
   after commit (`composer.notifications`);
3. the poll's health changes become one `device.health` event (coalesced: a failed power
   feed changes a hundred elements at once, and a browser wants one message, not a hundred),
   heard by operators and by every tenant whose compositions hold a changed device (each
   tenant holding a slice of a memory device included).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from composer.choices import EventType
from composer.events import event_record
from composer.events.payloads import HealthChange as HealthChangeRow
from composer.models import AlertAudience, Allocation, Tenant
from composer.services.health import compositions_react_to_health
from fabric.health.blast import stored_counts
from fabric.health.poll import HealthChange, PollOutcome, health_poll
from fabric.models import Alert, Device, FabricManager

logger = logging.getLogger(__name__)

__all__ = [
    "alert_acknowledged_record",
    "alert_event_payload",
    "alert_event_record",
    "health_poll_request",
    "health_poll_run",
]


def health_poll_request(*, manager: FabricManager) -> None:
    """Poll `manager` soon (after a fault injection, say): record the request
    (`FabricManager.poll_requested_at`, which beat's health tick treats as due and the poll
    clears), then queue the poll at once.

    A broker that refuses is logged, not raised: the request stays recorded, and the first
    health tick once Redis is back polls the manager (the outbox of polls), so a fault
    injected during an outage is seen as soon as the task queue returns.
    """
    from composer.tasks import health_poll_task

    FabricManager.objects.filter(pk=manager.pk).update(poll_requested_at=timezone.now())
    try:
        health_poll_task.delay(manager.pk)
    except Exception as exc:  # kombu raises several types; none must undo the caller's work
        logger.warning(
            "could not queue a health poll of manager %s (%s: %s); the next health tick "
            "after the task queue is back polls it",
            manager.pk,
            type(exc).__name__,
            exc,
        )


def health_poll_run(*, manager: FabricManager) -> PollOutcome:
    """Poll `manager` and act on the outcome; one transaction for all of it."""
    with transaction.atomic():
        outcome = health_poll(manager=manager)
        if outcome.stale:
            return outcome
        alerts = {
            alert.pk: alert
            for alert in Alert.objects.filter(
                pk__in={*outcome.opened, *outcome.updated, *outcome.closed}
            ).select_related("acknowledged_by")
        }
        _compositions_react(outcome, alerts)
        for alert_id in (*outcome.opened, *outcome.updated, *outcome.closed):
            alert = alerts.get(alert_id)
            if alert is not None:
                alert_event_record(alert)
        _notifications(outcome, alerts)
        if outcome.health_changes:
            _health_event_record(outcome.health_changes)
    if outcome.opened or outcome.closed:
        logger.info(
            "health poll of manager %s: %d alert(s) opened, %d closed, %d change(s)",
            manager.pk,
            len(outcome.opened),
            len(outcome.closed),
            len(outcome.health_changes),
        )
    return outcome


def _notifications(outcome: PollOutcome, alerts: dict[int, Alert]) -> None:
    """The e-mails and webhooks the notification routes ask for (`composer.notifications`),
    sent after commit. After the events, which let the tenants each alert hurt see it
    (AlertAudience). In a savepoint of its own: whatever goes wrong with a notification
    never undoes the poll, which keeps the alerts and the compositions' states."""
    from composer.notifications import notifications_for_alerts

    try:
        with transaction.atomic():
            notifications_for_alerts(
                opened=[alerts[i] for i in outcome.opened if i in alerts],
                updated=[alerts[i] for i in outcome.updated if i in alerts],
                closed=[alerts[i] for i in outcome.closed if i in alerts],
            )
    except Exception:
        logger.exception("the notifications of alerts %s failed", sorted(alerts))


def _compositions_react(outcome: PollOutcome, alerts: dict[int, Alert]) -> None:
    """Hand the devices the poll found lost (or back) to the composition layer.

    The ids are hints of where to look; `compositions_react_to_health` reads the tables to
    decide. Each opened alert goes with the devices of its own blast radius, so that a
    composition's reason names the alert that hurt it — and no other tenant's (an alert's
    audience is the tenants of its blast radius). What no alert covers (a device that only
    turned warning) gets a plain reason. A closed alert's blast radius names the devices a
    switch or enclosure cut off: they come back with it although their own health never
    changed.
    """
    covered: set[int] = set()
    for alert in (alerts[i] for i in outcome.opened if i in alerts):
        devices = _radius_devices([alert])
        if alert.source_type == "device":
            devices.add(alert.source_id)
        if devices:
            compositions_react_to_health(
                unhealthy_device_ids=devices,
                healthy_device_ids=(),
                # The composition is the tenant's: its reason is in the tenant's words.
                reason=f"{alert.get_severity_display()} alert: {alert.tenant_message}",
                alert_id=alert.pk,
            )
            covered |= devices
    rest = {*outcome.devices_unhealthy, *outcome.devices_affected} - covered
    closed = [alerts[i] for i in outcome.closed if i in alerts]
    healthy = {*outcome.devices_recovered, *_radius_devices(closed)} - covered - rest
    if rest or healthy:
        compositions_react_to_health(
            unhealthy_device_ids=rest,
            healthy_device_ids=healthy,
            reason="health poll",
            alert_id=None,
        )


def _radius_devices(alerts: Iterable[Alert]) -> set[int]:
    """Where to look: the devices an alert's blast radius loses or degrades (a device some
    host no longer reaches is degraded, not lost, yet lost to compositions on that host),
    and the devices held on the hosts it loses. One query when it loses hosts."""
    devices: set[int] = set()
    hosts: set[int] = set()
    for alert in alerts:
        radius = alert.blast_radius or {}
        for key, found in (("devices", devices), ("devices_degraded", devices), ("hosts", hosts)):
            found.update(pk for pk in radius.get(key) or () if isinstance(pk, int))
    if hosts:
        devices.update(
            Allocation.objects.filter(
                released_at__isnull=True, composition__host_id__in=hosts
            ).values_list("device_id", flat=True)
        )
    return devices


# --- events ---------------------------------------------------------------------------------


def alert_event_payload(alert: Alert) -> dict[str, Any]:
    """The `fabric.alert` payload: the alert, and its blast radius with counts and ids
    (lost and degraded, fabric.topology.radius), the headline the pages show, and the
    compositions it hits and those it degrades.

    Compositions carry their `tenant_id`, so `composer.events.payload_for` keeps each
    tenant's own and drops the rest; `tenants` (of the compositions hit) is for operators
    only.
    """
    radius = alert.blast_radius or {}
    counts = stored_counts(radius)
    return {
        "alert": {
            "id": alert.pk,
            "severity": alert.severity,
            "state": alert.state,
            "source_type": alert.source_type,
            "source_id": alert.source_id,
            "source_name": alert.source_name,
            "rule": alert.rule,
            "message": alert.message,
            "opened_at": alert.opened_at.isoformat() if alert.opened_at else None,
            "closed_at": alert.closed_at.isoformat() if alert.closed_at else None,
            "occurrences": alert.occurrences,
            "is_flapping": alert.is_flapping,
            "acknowledged_by": (
                alert.acknowledged_by.get_username() if alert.acknowledged_by else None
            ),
            "acknowledged_at": (
                alert.acknowledged_at.isoformat() if alert.acknowledged_at else None
            ),
        },
        "blast_radius": {
            "effect": radius.get("effect", ""),
            "devices": counts.devices_lost,
            "hosts": counts.hosts_lost,
            "devices_degraded": counts.devices_degraded,
            "hosts_degraded": counts.hosts_degraded,
            "headline": counts.headline(),
            "compositions": _composition_refs(radius.get("compositions")),
            "compositions_degraded": _composition_refs(radius.get("compositions_degraded")),
            "tenants": [t for t in radius.get("tenants") or () if isinstance(t, int)],
        },
    }


def _composition_refs(rows: Any) -> list[dict[str, Any]]:
    """A blast radius's composition rows as events carry them: each with its `tenant_id`,
    so that `composer.events.payload_for` keeps a tenant's own and drops the rest."""
    return [
        {
            "id": row.get("id"),
            "name": row.get("name", ""),
            "tenant_id": row.get("tenant_id"),
            "state": row.get("state", ""),
        }
        for row in rows or ()
        if isinstance(row, dict)
    ]


def alert_event_record(alert: Alert, *, type: EventType = EventType.FABRIC_ALERT) -> Any:
    """Record an event about `alert` for operators and the tenants its blast radius hurts
    (a composition of theirs hit or degraded), and let those tenants see the alert itself
    (AlertAudience)."""
    payload = alert_event_payload(alert)
    radius = payload["blast_radius"]
    degraded = [row["tenant_id"] for row in radius["compositions_degraded"]]
    named = {*radius["tenants"], *(t for t in degraded if isinstance(t, int))}
    # Only tenants that still exist (one may have been deleted since the alert opened).
    tenants = (
        sorted(Tenant.objects.filter(pk__in=named).values_list("pk", flat=True)) if named else []
    )
    if tenants:
        AlertAudience.objects.bulk_create(
            [AlertAudience(alert=alert, tenant_id=tenant) for tenant in tenants],
            ignore_conflicts=True,
        )
    return event_record(type, payload, tenant_ids=tenants)


def alert_acknowledged_record(alert: Alert) -> None:
    """The `alert.acknowledged` event (registered with fabric as an acknowledgement
    listener: it runs inside the acknowledgement's transaction)."""
    alert_event_record(alert, type=EventType.ALERT_ACKNOWLEDGED)


def _health_event_record(changes: Iterable[HealthChange]) -> None:
    """One `device.health` event for the poll's changes. A change of a device that
    compositions hold is one row per holding composition, each with its tenant: a memory
    device sliced between tenants reaches every one of them, and each hears of its own
    compositions' devices only. Other changes are one row, for operators."""
    changes = list(changes)
    device_ids = [c.target_id for c in changes if c.target_type == "device"]
    holders: dict[int, list[tuple[int | None, int | None]]] = defaultdict(list)
    for device_id, tenant_id, composition_id in (
        Allocation.objects.filter(device_id__in=device_ids, released_at__isnull=True)
        .values_list("device_id", "composition__tenant_id", "composition_id")
        .distinct()
        .order_by("device_id", "composition_id")
    ):
        holders[device_id].append((tenant_id, composition_id))
    kinds = dict(Device.objects.filter(pk__in=device_ids).values_list("pk", "kind"))
    rows: list[HealthChangeRow] = []
    for change in changes:
        held = holders.get(change.target_id) if change.target_type == "device" else None
        for tenant_id, composition_id in held or [(None, None)]:
            rows.append(
                {
                    "target_type": change.target_type,
                    "kind": kinds.get(change.target_id, change.target_type)
                    if change.target_type == "device"
                    else change.target_type,
                    "id": change.target_id,
                    "name": change.name,
                    "health": change.after,
                    "previous_health": change.before,
                    "composition_id": composition_id,
                    "tenant_id": tenant_id,
                }
            )
    tenants = {row["tenant_id"] for row in rows if row["tenant_id"] is not None}
    event_record(
        EventType.DEVICE_HEALTH,
        {"changes": rows, "change_count": len(rows)},
        tenant_ids=tenants,
    )
