"""The audit of notification settings: every route, webhook and silence added, changed,
ended or deleted is a `ChangeRecord` (who, from where, each field before and after) in the
write's transaction, readable by the owner tenant's members (`ChangeAudience`).

A webhook's secret is never in a record: its record says "secret: changed". Its URL is
recorded with any password and secret-looking query values masked (`fabric.secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

from composer.models import NotificationRoute, Silence, Webhook
from composer.services.changes import changed_fields, composer_change_record
from fabric.choices import ChangeAction
from fabric.secrets import mask_endpoint
from fabric.services.history import json_value

__all__ = ["Actor", "notification_audit", "notification_values"]


class Actor:
    """Who made a change and from where, as every record of it says."""

    def __init__(self, *, user: Any, source: str, remote_addr: str | None = None) -> None:
        self.user = user
        self.source = source
        self.remote_addr = remote_addr


def notification_values(obj: Webhook | NotificationRoute | Silence) -> dict[str, Any]:
    """The audited fields of `obj`, as records store them."""
    owner = obj.tenant.name if obj.tenant_id and obj.tenant else "operators"
    if isinstance(obj, Webhook):
        return {
            "owner": owner,
            "name": obj.name,
            "url": mask_endpoint(obj.url),
            "is_enabled": obj.is_enabled,
        }
    if isinstance(obj, NotificationRoute):
        return {
            "owner": owner,
            "name": obj.name,
            "min_severity": obj.min_severity,
            "rules": list(obj.rules or []),
            "source_types": list(obj.source_types or []),
            "on_close": obj.on_close,
            "emails": list(obj.emails or []),
            "webhook": obj.webhook.name if obj.webhook_id and obj.webhook else None,
            "is_enabled": obj.is_enabled,
        }
    values = {
        "owner": owner,
        "rule": obj.rule or None,
        "source_type": obj.source_type or None,
        # A tenant's records name the element by its alert, never by the console's id.
        "source_id": obj.source_id if obj.tenant_id is None else None,
        "alert": obj.alert_id,
        "starts_at": json_value(obj.starts_at),
        "ends_at": json_value(obj.ends_at),
        "reason": obj.reason,
    }
    return values


def notification_audit(
    obj: models.Model,
    action: ChangeAction,
    *,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    actor: Actor,
    message: str,
    extra: Mapping[str, tuple[Any, Any]] | None = None,
    target_id: int | None = None,
) -> None:
    """Record the change of `obj` from `before` to `after` (and `extra` pairs, such as
    ("set", "changed") for a secret). Call inside the write's transaction."""
    changes: dict[str, Any] = dict(changed_fields(before, after))
    changes.update(extra or {})
    if action == ChangeAction.CHANGED and not changes:
        return
    composer_change_record(
        obj,
        action,
        changes,
        actor=actor.user,
        source=actor.source,
        remote_addr=actor.remote_addr,
        message=message,
        label=str(obj),
        target_id=target_id,
    )
