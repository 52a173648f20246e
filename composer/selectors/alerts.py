"""Which alerts a tenant sees, and how much of their blast radius (rule 3).

An alert belongs to the fabric; a tenant sees it when it hurt one of the tenant's
compositions as it opened (an AlertAudience row, written with the alert's event), and
sees of its blast radius only its own compositions — the same rule that cuts event
payloads (`composer.events.payload_for`); its message is the alert's `tenant_message`.
Registered with `fabric.services.alerts.register_alert_scope` in ComposerConfig.ready().
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from composer.events import blast_radius_for
from composer.models import Membership
from fabric.models import Alert
from fabric.services.alerts import AlertScope

__all__ = ["TENANT_ALERT_SCOPE", "tenant_alerts", "tenant_blast_radius"]


def _tenant_ids(user: Any) -> list[int]:
    return list(Membership.objects.filter(user=user).values_list("tenant_id", flat=True))


def tenant_alerts(user: Any, alerts: QuerySet[Alert]) -> QuerySet[Alert]:
    """The alerts of `alerts` that hurt one of `user`'s tenants."""
    return alerts.filter(audience__tenant__memberships__user=user).distinct()


def tenant_blast_radius(user: Any, radius: Mapping[str, Any]) -> Mapping[str, Any]:
    """`radius` as `user` may know it: its effect and their tenants' compositions only
    (`composer.events.blast_radius_for`, the rule of the live events)."""
    return blast_radius_for(dict(radius), tenant_id=_tenant_ids(user))


TENANT_ALERT_SCOPE = AlertScope(alerts=tenant_alerts, blast_radius=tenant_blast_radius)
