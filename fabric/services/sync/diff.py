"""The diff engine of inventory sync: one kind of row at a time, in bulk, audited.

`sync_kind` matches reported items to existing rows by (manager, external_id), adds,
updates, marks absent and returns rows, and writes a ChangeRecord per changed row, in a
fixed number of queries whatever the number of rows.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone

from fabric.choices import ChangeAction, ComponentState, DeviceState, Health
from fabric.models import ChangeRecord, FabricManager
from fabric.models.base import DiscoveredModel
from fabric.services.history import change_record, json_value
from fabric.services.sync.result import KindCounts, SyncResult

logger = logging.getLogger(__name__)

_BATCH = 1000
_CHUNK = 900  # ids per WHERE id IN (...): under every database's parameter limit


@dataclass(frozen=True, slots=True)
class Presence:
    """How a kind says "absent": a state value, or an is_present flag."""

    field: str
    present: Any
    absent: Any

    def is_absent(self, obj: models.Model) -> bool:
        return getattr(obj, self.field) == self.absent


COMPONENT_PRESENCE = Presence("state", ComponentState.ACTIVE, ComponentState.ABSENT)
DEVICE_PRESENCE = Presence("state", DeviceState.FREE, DeviceState.ABSENT)
FLAG_PRESENCE = Presence("is_present", True, False)


@dataclass
class SyncContext:
    """Shared by the steps of one sync: who, when, and external id -> pk maps so far."""

    manager: FabricManager
    now: datetime
    actor: Any
    source: str
    result: SyncResult
    pks: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> ext id -> pk
    labels: dict[str, dict[int, str]] = field(default_factory=dict)  # kind -> pk -> label
    enclosure_racks: dict[int, int | None] = field(default_factory=dict)
    warned: set[str] = field(default_factory=set)

    def ref(self, kind: str, external_id: str | None, what: str) -> int | None:
        """The pk of a reported reference, or None (with a warning) when it is unknown."""
        if not external_id:
            return None
        pk = self.pks.get(kind, {}).get(external_id)
        if pk is None:
            self.warn(f"{what}: unknown {kind} {external_id!r}")
        return pk

    def warn(self, message: str) -> None:
        if message in self.warned:
            return
        self.warned.add(message)
        self.result.warnings.append(message)
        logger.warning("sync of %s: %s", self.manager.name, message)


# What a ChangeRecord shows for a foreign key: the related row's label, not its pk.
_FK_LABELS = {
    "rack_id": "racks",
    "power_feed_id": "power_feeds",
    "enclosure_id": "enclosures",
    "bound_host_id": "hosts",
    "switch_id": "switches",
    "host_id": "hosts",
    "a_port_id": "ports",
    "b_port_id": "ports",
    "pool_id": "pools",
}


def _display(ctx: SyncContext, field_name: str, value: Any) -> tuple[str, Any]:
    kind = _FK_LABELS.get(field_name)
    if kind is None:
        return field_name, value
    return field_name.removesuffix("_id"), (
        None if value is None else ctx.labels.get(kind, {}).get(value, value)
    )


def lock_manager(manager: FabricManager) -> None:
    """Serialise concurrent syncs of one manager, step by step.

    PostgreSQL: a row lock on the manager. SQLite ignores FOR UPDATE, so there a no-op
    write takes the database's write lock at the start of the step instead.
    """
    rows = FabricManager.objects.filter(pk=manager.pk)
    if connection.vendor == "sqlite":
        rows.update(poll_interval_s=F("poll_interval_s"))
    else:
        list(rows.select_for_update().values_list("pk", flat=True))


_MESSAGES = {
    ChangeAction.RETURNED: "reported again by discovery",
    ChangeAction.VANISHED: "no longer reported by discovery; marked absent",
}


def _differs(obj: models.Model, values: dict[str, Any]) -> bool:
    return any(getattr(obj, name) != value for name, value in values.items())


def locked_rows(model: type[models.Model], pks: list[int]) -> Iterator[Any]:
    """The rows `pks`, locked until the end of the transaction (PostgreSQL) and re-read."""
    for start in range(0, len(pks), _CHUNK):
        yield from model._default_manager.select_for_update().filter(
            pk__in=pks[start : start + _CHUNK]
        )


def write_updates(model: type[models.Model], updates: list[tuple[Any, dict[str, Any]]]) -> None:
    """Save changed rows in few statements.

    Rows that change the same fields to the same values (a power feed fails: 400 devices
    go critical) share one `UPDATE ... WHERE id IN (...)`; the rest go through
    `bulk_update`, whose CASE expressions cost far more per row in Django.
    """
    if not updates:
        return
    stamp = timezone.now()
    groups: dict[str, list[Any]] = defaultdict(list)
    for obj, changed in updates:
        obj.updated_at = stamp
        key = json.dumps(
            sorted((name, json_value(value)) for name, value in changed.items()), default=str
        )
        groups[key].append((obj, changed))
    singles: list[Any] = []
    single_fields: set[str] = set()
    for members in groups.values():
        if len(members) == 1:
            obj, changed = members[0]
            singles.append(obj)
            single_fields.update(changed)
            continue
        values = {**members[0][1], "updated_at": stamp}
        pks = [obj.pk for obj, _ in members]
        for start in range(0, len(pks), _CHUNK):
            model._default_manager.filter(pk__in=pks[start : start + _CHUNK]).update(**values)
    if singles:
        model._default_manager.bulk_update(
            singles, sorted({*single_fields, "updated_at"}), batch_size=_BATCH
        )


def sync_kind(
    ctx: SyncContext,
    *,
    key: str,
    model: type[DiscoveredModel],
    presence: Presence,
    infos: Sequence[Any],
    desired: Callable[[Any, Any], dict[str, Any] | None],
    label: Callable[[Any], str],
    vanish_extra: Callable[[Any], dict[str, Any]] | None = None,
    on_locked: Callable[[list[Any]], None] | None = None,
) -> None:
    """Diff one kind: add, update, mark absent, return; write the ChangeRecords.

    `desired(info, existing_or_None)` gives the model field values the row must have (or
    None to skip a report that cannot be stored, e.g. a port whose owner is unknown).
    `on_locked(rows)`, when given, is called with the rows about to change (a chunk at a
    time) once they are locked, before `desired` is asked about them again: a kind whose
    values depend on other tables reads them there, where no writer that locks the rows
    first can change them until this sync commits.
    """
    counts = ctx.result.kinds.setdefault(key, KindCounts())
    counts.reported = len(infos)
    manager = ctx.manager
    with transaction.atomic():
        lock_manager(manager)
        existing = {obj.external_id: obj for obj in model._default_manager.filter(manager=manager)}
        creates: list[Any] = []
        reported: dict[str, Any] = {}  # external id -> info, for rows that exist already
        candidates: list[str] = []  # rows that (probably) change
        seen: set[str] = set()

        for info in infos:
            if info.external_id in seen:
                ctx.warn(f"{key}: {info.external_id!r} reported twice; the first report counts")
                continue
            obj = existing.get(info.external_id)
            values = desired(info, obj)
            if values is None:
                continue
            seen.add(info.external_id)
            if obj is None:
                creates.append(
                    model(
                        manager=manager,
                        external_id=info.external_id,
                        first_seen_at=ctx.now,
                        last_seen_at=ctx.now,
                        **values,
                    )
                )
                continue
            reported[info.external_id] = info
            if _differs(obj, values):
                candidates.append(info.external_id)
        candidates += [
            external_id
            for external_id, obj in existing.items()
            if external_id not in reported and not presence.is_absent(obj)
        ]

        # Lock the rows about to change and re-read them: the composer may have reserved a
        # device since the read above, and its compare-and-set must not be overwritten.
        fresh_rows = list(locked_rows(model, [existing[c].pk for c in candidates]))
        for fresh in fresh_rows:
            existing[fresh.external_id] = fresh
        if on_locked is not None:
            for start in range(0, len(fresh_rows), _CHUNK):
                on_locked(fresh_rows[start : start + _CHUNK])

        updates: list[tuple[Any, dict[str, Any]]] = []  # (row, its changed field values)
        records: list[ChangeRecord] = []
        for external_id in candidates:
            obj = existing[external_id]
            info = reported.get(external_id)
            if info is not None:
                values = desired(info, obj) or {}
                action = ChangeAction.RETURNED if presence.is_absent(obj) else ChangeAction.CHANGED
            elif presence.is_absent(obj):
                continue  # marked absent meanwhile
            else:
                values = {presence.field: presence.absent, "health": Health.UNKNOWN}
                if vanish_extra is not None:
                    values.update(vanish_extra(obj))
                action = ChangeAction.VANISHED
            diff: dict[str, tuple[Any, Any]] = {}
            changed: dict[str, Any] = {}
            for name, value in values.items():
                before = getattr(obj, name)
                if before != value:
                    shown, old = _display(ctx, name, before)
                    diff[shown] = (old, _display(ctx, name, value)[1])
                    setattr(obj, name, value)
                    changed[name] = value
            if not diff:
                continue
            updates.append((obj, changed))
            if action == ChangeAction.RETURNED:
                counts.returned += 1
            elif action == ChangeAction.VANISHED:
                counts.vanished += 1
            else:
                counts.changed += 1
            records.append(
                change_record(
                    obj,
                    action,
                    diff,
                    label=label(obj),
                    message=_MESSAGES.get(action, ""),
                    actor=ctx.actor,
                    source=ctx.source,
                )
            )

        if creates:
            model._default_manager.bulk_create(creates, batch_size=_BATCH)
            if any(obj.pk is None for obj in creates):  # databases that cannot RETURNING
                pks = dict(
                    model._default_manager.filter(
                        manager=manager, external_id__in=[o.external_id for o in creates]
                    ).values_list("external_id", "pk")
                )
                for obj in creates:
                    obj.pk = pks[obj.external_id]
            counts.added = len(creates)
        write_updates(model, updates)
        # Everything still reported was seen now: one UPDATE, not one per row (rows added
        # just now already carry the time).
        model._default_manager.filter(
            Q(last_seen_at__lt=ctx.now) | Q(last_seen_at__isnull=True), manager=manager
        ).exclude(**{presence.field: presence.absent}).update(last_seen_at=ctx.now)

        pks = ctx.pks.setdefault(key, {})
        labels = ctx.labels.setdefault(key, {})
        for obj in [*existing.values(), *creates]:
            pks[obj.external_id] = obj.pk
            labels[obj.pk] = label(obj)
        for obj in creates:
            records.append(
                change_record(
                    obj,
                    ChangeAction.ADDED,
                    {
                        _display(ctx, name, None)[0]: (None, _display(ctx, name, value)[1])
                        for name, value in desired_snapshot(obj, model).items()
                    },
                    label=label(obj),
                    message="first reported by discovery",
                    actor=ctx.actor,
                    source=ctx.source,
                )
            )
        ChangeRecord.objects.bulk_create(records, batch_size=_BATCH)
        ctx.result.change_records += len(records)
    if counts.changes:
        logger.info(
            "sync of %s: %s added %d, changed %d, vanished %d, returned %d",
            manager.name,
            key,
            counts.added,
            counts.changed,
            counts.vanished,
            counts.returned,
        )


# Fields shown in an ADDED record: what the row was first seen as. Not timestamps, and not
# the free-form attributes (the row has them; repeating them made a first sync of 10,000
# devices twice as slow for no reader's benefit).
_SNAPSHOT_SKIP = frozenset(
    {
        "id",
        "manager",
        "external_id",
        "created_at",
        "updated_at",
        "first_seen_at",
        "last_seen_at",
        "attributes",
    }
)


def desired_snapshot(obj: models.Model, model: type[models.Model]) -> dict[str, Any]:
    """The stored values of a new row, keyed by attname (`rack_id`), for its ADDED record."""
    return {
        f.attname: getattr(obj, f.attname)
        for f in model._meta.concrete_fields
        if f.name not in _SNAPSHOT_SKIP
    }
