"""Building ChangeRecords, the fabric's audit trail, in one consistent shape.

Every service that changes the fabric records who, what, when and from where through
these helpers, so history pages can rely on one `target_type` vocabulary and on
JSON-friendly [before, after] values.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import models

from fabric.choices import ChangeAction
from fabric.models import (
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Pool,
    Port,
    PowerFeed,
    Rack,
    Switch,
)

# The `target_type` written for each model (FaultTarget uses the same words).
TARGET_TYPES: dict[type[models.Model], str] = {
    Rack: "rack",
    PowerFeed: "power_feed",
    Switch: "switch",
    Host: "host",
    Enclosure: "enclosure",
    Device: "device",
    Port: "port",
    Link: "link",
    Pool: "pool",
    FabricManager: "fabric_manager",
}


def target_type_of(obj: models.Model | type[models.Model]) -> str:
    """The ChangeRecord `target_type` of a fabric model or instance. `__class__`, not
    `type()`: a request's user is a lazy object that passes for the model it wraps."""
    model = obj if isinstance(obj, type) else obj.__class__
    return TARGET_TYPES.get(model, model._meta.model_name or model.__name__.lower())


def json_value(value: Any) -> Any:
    """A value as it is stored in `ChangeRecord.changes` (JSON: no datetimes, no models)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_value(v) for v in value]
    if isinstance(value, models.Model):
        return str(value)
    return str(value)


def change_record(
    obj: models.Model,
    action: ChangeAction | str,
    changes: Mapping[str, tuple[Any, Any] | list[Any]] | None = None,
    *,
    label: str | None = None,
    message: str = "",
    actor: Any = None,
    source: str = "",
    remote_addr: str | None = None,
) -> ChangeRecord:
    """An unsaved ChangeRecord for `obj` (callers bulk-create them)."""
    return ChangeRecord(
        target_type=target_type_of(obj),
        target_id=obj.pk,
        target_label=(label if label is not None else str(obj))[:200],
        action=action,
        changes={
            field: [json_value(before), json_value(after)]
            for field, (before, after) in (changes or {}).items()
        },
        message=message[:300],
        actor=actor if getattr(actor, "pk", None) else None,
        source=source[:100],
        remote_addr=remote_addr or None,
    )
