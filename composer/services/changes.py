"""The audit of the composer's own settings: templates, quotas, tenants, memberships, and the
notification routes, webhooks and silences.

These rows are written by operators through the API and the admin rather than by a state
machine, so they have no trail of their own: each add, change or delete is a fabric
`ChangeRecord` (`fabric.services.history.change_record`, the same shape and the same audit
page as the fabric's changes), with `target_type` the model's name ("template", "quota",
"tenant", "membership", "notificationroute", "webhook", "silence", "servershape"). A change to
a tenant's own thing (a quota, its notification routes, webhooks and silences) also gets a
`ChangeAudience` row naming that tenant, which is how its members may read it.

Callers write the record in the transaction of the change, so neither exists without the
other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

from composer.models import ChangeAudience
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from fabric.services.history import change_record, json_value, target_type_of

__all__ = [
    "AUDITED_KINDS",
    "AUDITED_KIND_LABELS",
    "TENANT_CHANGE_KINDS",
    "audited_values",
    "change_audience_add",
    "changed_fields",
    "composer_change_record",
]

# The composer's kinds in the ChangeRecord trail, and those a tenant's members may read.
AUDITED_KIND_LABELS = {
    "template": "Template",
    "quota": "Quota",
    "tenant": "Tenant",
    "membership": "Membership",
    "notificationroute": "Notification route",
    "webhook": "Webhook",
    "silence": "Silence",
    "booking": "Booking",
    "servershape": "Server shape",
    "user": "User",
}
AUDITED_KINDS = tuple(AUDITED_KIND_LABELS)
TENANT_CHANGE_KINDS = ("quota", "notificationroute", "webhook", "silence", "booking")

# Never in `changes`: bookkeeping, not a setting anyone changed, and secrets (a webhook's
# signing secret, even encrypted: its record says that it changed, never what it is).
_NOT_AUDITED = frozenset({"id", "created_at", "updated_at", "secret_ciphertext"})


def audited_values(obj: models.Model) -> dict[str, Any]:
    """Each audited field of `obj` as the record stores it (a related row by its name)."""
    values: dict[str, Any] = {}
    for f in obj._meta.concrete_fields:
        if f.name in _NOT_AUDITED:
            continue
        if f.is_relation:
            values[f.name] = str(getattr(obj, f.name)) if getattr(obj, f.attname) else None
        else:
            values[f.name] = json_value(getattr(obj, f.attname))
    return values


def changed_fields(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> dict[str, tuple[Any, Any]]:
    """{field: (before, after)} of the fields whose values differ (a field either side)."""
    names = [*before, *(name for name in after if name not in before)]
    return {
        name: (before.get(name), after.get(name))
        for name in names
        if before.get(name) != after.get(name)
    }


def change_audience_add(*, record: ChangeRecord, obj: models.Model) -> None:
    """Let the tenant whose own thing `record` is about read it: a quota's tenant, a
    notification route's, webhook's or silence's. One moved to another tenant is the
    operators' alone (either tenant would read the other's name). Call in the transaction
    that saved the record."""
    tenant_id = getattr(obj, "tenant_id", None)
    if target_type_of(obj) not in TENANT_CHANGE_KINDS or not tenant_id:
        return
    if record.action == ChangeAction.CHANGED and "tenant" in record.changes:
        return
    ChangeAudience.objects.get_or_create(record=record, tenant_id=tenant_id)


def composer_change_record(
    obj: models.Model,
    action: ChangeAction | str,
    changes: Mapping[str, tuple[Any, Any] | list[Any]] | None = None,
    *,
    actor: Any,
    source: str,
    remote_addr: str | None,
    message: str = "",
    label: str | None = None,
    target_id: int | None = None,
) -> ChangeRecord:
    """Save the ChangeRecord of a change to `obj`, and its tenant audience.

    `target_id` is for a deletion (the row no longer has its pk). Call inside the
    transaction of the change."""
    record = change_record(
        obj,
        action,
        changes,
        label=label,
        message=message,
        actor=actor,
        source=source,
        remote_addr=remote_addr,
    )
    if target_id is not None:
        record.target_id = target_id
    record.save()
    change_audience_add(record=record, obj=obj)
    return record
