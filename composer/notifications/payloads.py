"""What a notification says: the webhook's JSON body and the e-mail's subject and text.

Operators are told everything the console's `fabric.alert` event carries (the element's
name, the fabric manager's words, the tenants hurt). A tenant is told the same event cut by
`composer.events.payload_for`, the one rule that cuts every event for tenants: the alert in
the tenant's words (`Alert.tenant_message`), no element name or console id of it, only the
tenant's own compositions of the blast radius, no other tenant. A body is built once, when
the delivery is written, and every retry sends the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder

from composer.events import payload_for
from composer.models import Event, NotificationRoute, Tenant, Webhook
from composer.services.health_poll import alert_event_payload
from fabric.health.rules import RULES
from fabric.models import Alert

__all__ = [
    "alert_body",
    "alert_email",
    "body_digest",
    "body_text",
    "console_link",
    "test_body",
]

_EVENT_WORDS = {
    "opened": "opened",
    "escalated": "escalated",
    "closed": "closed",
}


def console_link(path: str) -> str:
    """`path` on the console's public address (COMPOSER_CONSOLE_URL), or "" when unset."""
    base = str(getattr(settings, "COMPOSER_CONSOLE_URL", "") or "").rstrip("/")
    return f"{base}{path}" if base else ""


def body_text(body: Mapping[str, Any]) -> str:
    """The JSON text of a body, as it is stored, digested, signed and sent."""
    return json.dumps(body, cls=DjangoJSONEncoder, sort_keys=True, separators=(",", ":"))


def body_digest(text: str) -> str:
    """SHA-256 of the text sent (hex): what the delivery log shows of it."""
    return hashlib.sha256(text.encode()).hexdigest()


def alert_body(
    alert: Alert, *, event: str, tenant: Tenant | None, delivery_id: str, created_at: datetime
) -> dict[str, Any]:
    """The JSON body of a notification about `alert` for `tenant`'s routes (None: the
    operators'). `event` is "opened", "escalated" or "closed"."""
    full = alert_event_payload(alert)
    if tenant is None:
        scoped: dict[str, Any] = full
        audience = "operators"
    else:
        scoped = payload_for(Event(payload=full), tenant_id=tenant.pk) or {}
        audience = "tenant"
    body: dict[str, Any] = {
        "type": f"alert.{event}",
        "delivery_id": delivery_id,
        "created_at": created_at.isoformat(),
        "audience": audience,
        "alert": scoped.get("alert") or {},
        "blast_radius": scoped.get("blast_radius") or {},
    }
    if tenant is not None:
        body["tenant"] = {"slug": tenant.slug, "name": tenant.name}
    link = console_link("/alerts/?state=all")
    if link:
        body["url"] = link
    return body


def test_body(webhook: Webhook, *, delivery_id: str, created_at: datetime) -> dict[str, Any]:
    """The body of "Send a test": says what it is and names no alert."""
    body: dict[str, Any] = {
        "type": "test",
        "delivery_id": delivery_id,
        "created_at": created_at.isoformat(),
        "audience": "operators" if webhook.tenant_id is None else "tenant",
        "webhook": {"id": webhook.pk, "name": webhook.name},
        "message": "A test from Composer: this webhook is reachable and its signature verifies.",
    }
    if webhook.tenant is not None:
        body["tenant"] = {"slug": webhook.tenant.slug, "name": webhook.tenant.name}
    return body


def alert_email(
    body: Mapping[str, Any], *, route: NotificationRoute, event: str
) -> tuple[str, str]:
    """(subject, text) of the e-mail about an alert, from its (already scoped) body: a
    tenant's e-mail says what the tenant's webhook would, and nothing more."""
    alert = body.get("alert") or {}
    radius = body.get("blast_radius") or {}
    severity = str(alert.get("severity") or "").capitalize()
    message = str(alert.get("message") or "")
    what = _EVENT_WORDS.get(event, event)
    subject = f"[Composer] {severity} alert {what}: {message}"
    if len(subject) > 200:
        subject = subject[:199] + "…"
    lines = [f"{severity} alert {what}.", "", message, ""]
    if body.get("audience") == "operators":
        lines.append(
            f"Source: {alert.get('source_type', '')} {alert.get('source_name', '')}".rstrip()
        )
    else:
        lines.append(f"Kind of element: {alert.get('source_type', '')}")
    rule = str(alert.get("rule") or "")
    lines.append(f"Rule: {RULES.get(rule, rule)}")
    lines.append(f"Opened: {alert.get('opened_at') or ''}")
    if alert.get("closed_at"):
        lines.append(f"Closed: {alert['closed_at']}")
    headline = radius.get("headline")
    if headline:
        lines.append(f"Blast radius: {headline}")
    hit = [str(c.get("name")) for c in radius.get("compositions") or () if isinstance(c, dict)]
    degraded = [
        str(c.get("name")) for c in radius.get("compositions_degraded") or () if isinstance(c, dict)
    ]
    mine = "Your compositions" if body.get("audience") == "tenant" else "Compositions"
    if hit:
        lines.append(f"{mine} hit: {', '.join(hit)}")
    if degraded:
        lines.append(f"{mine} degraded: {', '.join(degraded)}")
    if body.get("url"):
        lines += ["", f"See {body['url']}"]
    owner = route.owner_label if route.tenant_id is None else f"tenant {route.owner_label}"
    lines += [
        "",
        "--",
        f'Sent by the notification route "{route.name}" of {owner}.',
    ]
    manage = console_link("/notifications/routes/")
    if manage:
        lines.append(f"Manage it at {manage}")
    return subject, "\n".join(lines) + "\n"
