"""Which alerts a tenant sees, and how much of their blast radius (rule 3).

An alert belongs to the fabric; a tenant sees it when it hurt one of the tenant's
compositions as it opened (an AlertAudience row, written with the alert's event), and
sees of its blast radius only its own compositions — the same generic rule that cuts
event payloads (`composer.events.payload_for`). Registered with
`fabric.services.alerts.register_alert_scope` in ComposerConfig.ready().
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from composer.events import payload_for
from composer.models import Event, Membership
from fabric.models import Alert
from fabric.services.alerts import AlertScope

__all__ = ["TENANT_ALERT_SCOPE", "tenant_alerts", "tenant_blast_radius"]


def _tenant_ids(user: Any) -> list[int]:
    return list(Membership.objects.filter(user=user).values_list("tenant_id", flat=True))


def tenant_alerts(user: Any, alerts: QuerySet[Alert]) -> QuerySet[Alert]:
    """The alerts of `alerts` that hurt one of `user`'s tenants."""
    return alerts.filter(audience__tenant__memberships__user=user).distinct()


# What a tenant may know of a blast radius: how much it takes (counts, not the fabric's
# ids) and which of its own compositions it hurts.
_TENANT_RADIUS_KEYS = ("effect", "device_count", "host_count", "compositions")


def tenant_blast_radius(user: Any, radius: Mapping[str, Any]) -> Mapping[str, Any]:
    """`radius` as `user` may know it: counts, and their tenants' compositions only."""
    kept = {key: radius[key] for key in _TENANT_RADIUS_KEYS if key in radius}
    scoped = payload_for(Event(payload=kept), tenant_id=_tenant_ids(user)) or {}
    scoped["composition_count"] = len(scoped.get("compositions") or ())
    return scoped


TENANT_ALERT_SCOPE = AlertScope(alerts=tenant_alerts, blast_radius=tenant_blast_radius)
