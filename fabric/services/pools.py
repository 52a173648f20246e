"""Pool membership: every device belongs to the most specific pool that matches it.

A pool is a rule (kind, optionally model, optionally rack), not a list, so membership is
recomputed whenever devices are discovered or pools change. Inventory sync uses
`PoolMatcher` for the devices it writes; `pools_assign` re-applies the rules to every
device after an operator creates or edits pools.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from fabric import kinds
from fabric.choices import ChangeAction, DeviceState
from fabric.models import ChangeRecord, Device, FabricManager, Pool, Rack
from fabric.services.history import change_record

logger = logging.getLogger(__name__)

_CHUNK = 900  # ids per UPDATE ... WHERE id IN (...): under every database's parameter limit


@dataclass(frozen=True, slots=True)
class PoolRule:
    """What a pool matches; `model` "" and `rack_id` None match anything."""

    pool_id: int
    name: str
    kind: str
    model: str
    rack_id: int | None

    @property
    def specificity(self) -> int:
        """Model and rack: 3, model only: 2, rack only: 1, kind only: 0."""
        return (2 if self.model else 0) + (1 if self.rack_id is not None else 0)


class PoolMatcher:
    """Finds a device's pool among a fixed set of rules, without touching the database."""

    def __init__(self, rules: Iterable[PoolRule]) -> None:
        self._by_kind: dict[str, list[PoolRule]] = defaultdict(list)
        for rule in rules:
            self._by_kind[rule.kind].append(rule)
        for candidates in self._by_kind.values():
            # Most specific first; among equals the first by name, so the choice is stable.
            candidates.sort(key=lambda r: (-r.specificity, r.name))
        self.names = {r.pool_id: r.name for rules_ in self._by_kind.values() for r in rules_}

    @classmethod
    def load(cls) -> PoolMatcher:
        """All pools, in one query."""
        return cls(
            PoolRule(p["pk"], p["name"], p["kind"], p["model"], p["rack_id"])
            for p in Pool.objects.values("pk", "name", "kind", "model", "rack_id")
        )

    def match(self, *, kind: str, model: str, rack_id: int | None) -> int | None:
        """The id of the most specific pool for a device, or None when none matches."""
        for rule in self._by_kind.get(kind, ()):
            if rule.model and rule.model != model:
                continue
            if rule.rack_id is not None and rule.rack_id != rack_id:
                continue
            return rule.pool_id
        return None


def pools_assign(
    *,
    manager: FabricManager | None = None,
    actor: Any = None,
    source: str = "pool assignment",
) -> int:
    """Put every present device (of `manager`, or of all managers) in its matching pool.

    Writes one ChangeRecord per device whose pool changed; absent devices keep the pool
    they had, for their history. Returns how many devices moved. A fixed number of
    queries: one read of pools, one of devices, one UPDATE per (pool, 900 devices).
    """
    matcher = PoolMatcher.load()
    devices = Device.objects.exclude(state=DeviceState.ABSENT)
    if manager is not None:
        devices = devices.filter(manager=manager)
    moves: dict[int | None, list[int]] = defaultdict(list)
    records: list[ChangeRecord] = []
    for pk, name, kind, model, rack_id, pool_id in devices.values_list(
        "pk", "name", "kind", "model", "enclosure__rack_id", "pool_id"
    ):
        wanted = matcher.match(kind=kind, model=model, rack_id=rack_id)
        if wanted == pool_id:
            continue
        moves[wanted].append(pk)
        wanted_name = matcher.names.get(wanted) if wanted is not None else None
        records.append(
            change_record(
                Device(pk=pk),
                ChangeAction.CHANGED,
                {"pool": (matcher.names.get(pool_id), wanted_name)},
                label=name,
                message="pool membership recomputed",
                actor=actor,
                source=source,
            )
        )
    with transaction.atomic():
        for target, pks in moves.items():
            for start in range(0, len(pks), _CHUNK):
                Device.objects.filter(pk__in=pks[start : start + _CHUNK]).update(pool_id=target)
        ChangeRecord.objects.bulk_create(records, batch_size=500)
    moved = sum(len(pks) for pks in moves.values())
    if moved:
        logger.info("pool assignment moved %d devices", moved)
    return moved


def pool_default_name(*, kind: str, model: str, rack_name: str | None, by_model: bool) -> str:
    """A human name such as "H100 GPUs, rack A" or "CXL memory, rack B"."""
    plural = kinds.plural(kind)
    short = model.split()[0] if model else ""
    label = f"{short} {plural}" if (by_model and short) else plural
    if rack_name:
        prefix, _, letter = rack_name.rpartition("-")
        rack_label = f"{prefix} {letter.upper()}" if prefix else rack_name
        return f"{label}, {rack_label}"
    return label


def pools_ensure_defaults(*, manager: FabricManager, actor: Any = None) -> list[Pool]:
    """Create a pool per (kind, model, rack) among the manager's present devices.

    Used by the demo seeding; existing pools (matched by slug) are left as they are, so an
    operator's edits survive. Returns the pools created.
    """
    rows = (
        Device.objects.filter(manager=manager)
        .exclude(state=DeviceState.ABSENT)
        .values_list("kind", "model", "enclosure__rack_id")
        .distinct()
    )
    combos = sorted(set(rows), key=lambda r: (r[0], r[1], r[2] or 0))
    models_per_kind: dict[str, set[str]] = defaultdict(set)
    for kind, model, _ in combos:
        models_per_kind[kind].add(model)
    racks = dict(Rack.objects.filter(manager=manager).values_list("pk", "name"))
    existing = set(Pool.objects.values_list("slug", flat=True))
    created: list[Pool] = []
    with transaction.atomic():
        for kind, model, rack_id in combos:
            declared = kinds.find(kind)
            by_model = bool(declared and declared.by_model) or len(models_per_kind[kind]) > 1
            name = pool_default_name(
                kind=kind, model=model, rack_name=racks.get(rack_id), by_model=by_model
            )
            slug = slugify(name)[:100]
            if slug in existing:
                continue
            pool = Pool(
                name=name,
                slug=slug,
                kind=kind,
                model=model if by_model else "",
                rack_id=rack_id,
                description=f"{kinds.label(kind)} devices"
                + (f" of model {model}" if by_model else "")
                + (f" in {racks[rack_id]}" if rack_id in racks else "")
                + ".",
            )
            pool.full_clean()
            pool.save()
            existing.add(slug)
            created.append(pool)
        if created:
            ChangeRecord.objects.bulk_create(
                [
                    change_record(
                        pool,
                        ChangeAction.ADDED,
                        {"kind": (None, pool.kind), "model": (None, pool.model)},
                        message="default pool created",
                        actor=actor,
                        source="seed_demo",
                    )
                    for pool in created
                ]
            )
    return created
