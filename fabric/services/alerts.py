"""Alerts and health samples: acknowledge, select, prune; and the hook for tenant visibility.

Alerts are written by the health poller (fabric.health.poll); people only acknowledge them.
Who sees which alert: operators see every one. The fabric cannot tell which alerts hurt a
tenant (compositions are the composer's), so the layer above registers an `AlertScope`
(`register_alert_scope`, from its AppConfig.ready(), like fabric.topology.impact's
contributors): `alerts_visible_to(user)` and the API use it for everyone who is not an
operator, and until one is registered they see none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from fabric.choices import ChangeAction
from fabric.models import Alert, FabricManager, HealthSample
from fabric.permissions import is_operator
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

__all__ = [
    "AlertScope",
    "alert_acknowledge",
    "alert_list",
    "alert_scope",
    "alerts_visible_to",
    "health_samples_for",
    "health_samples_prune",
    "register_alert_scope",
]

PRUNE_BATCH = 5000


# --- acknowledging ----------------------------------------------------------------------------


def alert_acknowledge(
    *, alert: Alert, user: Any, remote_addr: str | None = None, source: str = ""
) -> bool:
    """Record that `user` has seen `alert` (open or closed); it stays open until it recovers.

    Idempotent: the first acknowledgement is kept (who and when), a second one changes
    nothing. Returns True when this call acknowledged it. Audited: a ChangeRecord on the
    alert (target_type "alert") with the user and address. `alert` is refreshed in place.
    """
    now = timezone.now()
    with transaction.atomic():
        # Compare-and-set: two operators clicking at once acknowledge it once.
        done = bool(
            Alert.objects.filter(pk=alert.pk, acknowledged_at__isnull=True).update(
                acknowledged_by=user, acknowledged_at=now
            )
        )
        if done:
            change_record(
                alert,
                ChangeAction.CHANGED,
                {"acknowledged_by": (None, user.get_username())},
                label=f"{alert.source_name}: {alert.rule}",
                message=f"alert acknowledged: {alert.message}",
                actor=user,
                source=source or "console",
                remote_addr=remote_addr,
            ).save()
        alert.refresh_from_db()
        if done:
            for listener in tuple(_ACK_LISTENERS):
                listener(alert)
    if done:
        logger.info("alert %s acknowledged by user %s", alert.pk, user.pk)
    return done


# --- who hears of an acknowledgement ----------------------------------------------------------

_ACK_LISTENERS: list[Callable[[Alert], None]] = []


def register_ack_listener(fn: Callable[[Alert], None]) -> None:
    """Call `fn(alert)` inside the transaction of every acknowledgement (once per `fn`).

    The layer that pushes events to browsers registers here (fabric never imports it), so
    the acknowledgement and its event commit together.
    """
    if fn not in _ACK_LISTENERS:
        _ACK_LISTENERS.append(fn)


# --- who sees which alert ---------------------------------------------------------------------


@dataclass(frozen=True)
class AlertScope:
    """How non-operators see alerts; registered by the layer that knows the tenants.

    `alerts(user, queryset)` narrows `queryset` to the alerts `user` may see (those whose
    blast radius holds one of their tenants' compositions). `blast_radius(user, radius)`
    cuts a stored blast radius down to what `user` may know (their own compositions, no
    other tenant); the default shows them nothing of it.
    """

    alerts: Callable[[Any, QuerySet[Alert]], QuerySet[Alert]]
    blast_radius: Callable[[Any, Mapping[str, Any]], Mapping[str, Any]] = lambda _u, _r: {}


_SCOPE: list[AlertScope] = []


def register_alert_scope(scope: AlertScope | None) -> None:
    """Set (or with None, remove) the one scope for non-operators."""
    _SCOPE.clear()
    if scope is not None:
        _SCOPE.append(scope)


def alert_scope() -> AlertScope | None:
    """The registered scope, or None."""
    return _SCOPE[0] if _SCOPE else None


def alerts_visible_to(user: Any) -> QuerySet[Alert]:
    """Every alert for operators; for anyone else what the registered scope allows (none
    without a scope, and none for anonymous users)."""
    alerts = Alert.objects.all()
    if is_operator(user):
        return alerts
    scope = alert_scope()
    if scope is None or not getattr(user, "is_authenticated", False):
        return alerts.none()
    return scope.alerts(user, alerts)


def alert_list(
    *,
    alerts: QuerySet[Alert] | None = None,
    state: str | None = None,
    severity: str | None = None,
    source_type: str | None = None,
    manager: FabricManager | int | None = None,
    since: datetime | None = None,
) -> QuerySet[Alert]:
    """Alerts (of `alerts`, or all), newest first, filtered.

    `since`: alerts that opened, were seen again or closed at or after that time (what a
    client that last looked then has missed).
    """
    rows = (alerts if alerts is not None else Alert.objects.all()).select_related(
        "manager", "acknowledged_by"
    )
    if state:
        rows = rows.filter(state=state)
    if severity:
        rows = rows.filter(severity=severity)
    if source_type:
        rows = rows.filter(source_type=source_type)
    if manager is not None:
        rows = rows.filter(manager=manager)
    if since is not None:
        rows = rows.filter(
            Q(opened_at__gte=since) | Q(last_seen_at__gte=since) | Q(closed_at__gte=since)
        )
    return rows.order_by("-opened_at", "-id")


# --- samples ----------------------------------------------------------------------------------


def health_samples_for(
    *,
    target_type: str,
    target_id: int,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[HealthSample]:
    """The samples of one element, newest first (the (type, id, -taken_at) index)."""
    rows = HealthSample.objects.filter(target_type=target_type, target_id=target_id)
    if since is not None:
        rows = rows.filter(taken_at__gte=since)
    if until is not None:
        rows = rows.filter(taken_at__lt=until)
    return rows.order_by("-taken_at", "-id")


def health_samples_prune(*, older_than: datetime | None = None) -> int:
    """Delete the samples taken before `older_than` (default: now less
    COMPOSER_HEALTH_RETENTION_HOURS). Returns how many were deleted.

    In batches of 5,000 ids, each its own short statement, so pruning a day of samples
    never holds a long lock against the poller's inserts.
    """
    if older_than is None:
        hours = int(getattr(settings, "COMPOSER_HEALTH_RETENTION_HOURS", 24))
        older_than = timezone.now() - timedelta(hours=hours)
    total = 0
    while True:
        batch = (
            HealthSample.objects.filter(taken_at__lt=older_than)
            .order_by()
            .values("pk")[:PRUNE_BATCH]
        )
        deleted, _ = HealthSample.objects.filter(pk__in=batch).delete()
        total += deleted
        if deleted < PRUNE_BATCH:
            break
    if total:
        logger.info("pruned %d health samples taken before %s", total, older_than.isoformat())
    return total
