"""Notifications: alerts sent by e-mail and to webhooks, per tenant and for operators.

- `routing`: which routes want an alert, which silences hold it back (pure rules);
- `evaluate`: in a health poll's transaction, the deliveries its alerts call for;
- `payloads`: what a message says (a tenant's in its own words), `signing`: the
  `X-Composer-Signature` HMAC scheme;
- `send`: one attempt (a webhook POST, an e-mail), `delivery`: claiming, back-off, and
  beat's dispatch pass that makes the delivery rows an outbox;
- `access`: who reads and who manages; `routes`, `webhooks`, `silences`: the audited
  writes (`audit`).

See docs/notifications.md.
"""

from __future__ import annotations

from composer.notifications.access import (
    can_manage,
    can_manage_any,
    deliveries_for,
    manage_check,
    manageable_tenants,
    routes_for,
    silences_for,
    webhooks_for,
)
from composer.notifications.audit import Actor
from composer.notifications.delivery import (
    deliveries_dispatch,
    deliveries_due,
    deliveries_enqueue,
    deliveries_prune,
    delivery_attempt,
    retry_delays,
)
from composer.notifications.evaluate import notifications_for_alerts
from composer.notifications.routes import route_create, route_delete, route_update
from composer.notifications.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    new_secret,
    signature_header,
    signature_verify,
)
from composer.notifications.silences import silence_create, silence_delete, silence_end
from composer.notifications.webhooks import (
    KEEP,
    TestPending,
    WebhookInUse,
    webhook_create,
    webhook_delete,
    webhook_secret_rotate,
    webhook_test,
    webhook_update,
)

__all__ = [
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "KEEP",
    "SIGNATURE_HEADER",
    "Actor",
    "TestPending",
    "WebhookInUse",
    "can_manage",
    "can_manage_any",
    "deliveries_dispatch",
    "deliveries_due",
    "deliveries_enqueue",
    "deliveries_for",
    "deliveries_prune",
    "delivery_attempt",
    "manage_check",
    "manageable_tenants",
    "new_secret",
    "notifications_for_alerts",
    "retry_delays",
    "route_create",
    "route_delete",
    "route_update",
    "routes_for",
    "signature_header",
    "signature_verify",
    "silence_create",
    "silence_delete",
    "silence_end",
    "silences_for",
    "webhook_create",
    "webhook_delete",
    "webhook_secret_rotate",
    "webhook_test",
    "webhook_update",
    "webhooks_for",
]
