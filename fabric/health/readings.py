"""The readings side of a health poll: match readings to console rows, keep the health
columns current (with ChangeRecords), store samples, and ask the rules for decisions.

See fabric/health/poll.py for the whole poll and why a device's state is not touched.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from fabric.capacity import held_state
from fabric.choices import ChangeAction, DeviceState, Health, LinkState
from fabric.drivers.base import HealthReading
from fabric.health import rules
from fabric.health.derived import effects_of, reading_derived, unreported
from fabric.health.rows import ElementRow, in_maintenance, inventory_rows
from fabric.holders import held_states
from fabric.models import (
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    HealthSample,
    Host,
    Link,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.models.base import DiscoveredModel

__all__ = ["METRIC_COLUMNS", "SAMPLED", "HealthChange", "ReadingsResult", "apply_readings"]

SOURCE = "health poll"
_CHUNK = 900  # ids per WHERE id IN (...)
_BATCH = 1000

MODELS: dict[str, type[DiscoveredModel]] = {
    "rack": Rack,
    "power_feed": PowerFeed,
    "switch": Switch,
    "host": Host,
    "enclosure": Enclosure,
    "device": Device,
    "port": Port,
    "link": Link,
}
SAMPLED = frozenset({"device", "link", "switch", "host", "enclosure", "power_feed"})
# What the rules read (and may raise an alert about): the sampled elements, and racks, which
# a manager may report failed (no sample: a rack has no sensors of its own).
RULED = SAMPLED | {"rack"}
# The metric vocabulary of HealthReading.metrics: these have their own HealthSample columns;
# `power_on` (1 or 0) becomes `power_state`; `link_width_max` and `link_speed_max_gts` are the
# link's nominal width and speed; anything else is kept in `HealthSample.metrics` (JSON).
METRIC_COLUMNS = (
    "temperature_c",
    "correctable_errors",
    "uncorrectable_errors",
    "poison_count",
    "link_errors",
    "link_retrains",
    "link_width",
    "link_speed_gts",
    "utilisation_pct",
)
_NOT_EXTRA = frozenset({*METRIC_COLUMNS, "power_on"})
_HEALTH_VALUES = frozenset(Health.values)
_LINK_STATES = frozenset(LinkState.values)

Key = tuple[str, int, str]  # (target type, target id, rule)


class HealthChange(NamedTuple):
    """One element whose health column this poll changed: a tuple (target_type, target_id,
    name, before, after), so callers may unpack it."""

    target_type: str
    target_id: int
    name: str
    before: str
    after: str


@dataclass
class ReadingsResult:
    """What the readings side did, and the rules' decisions for the alerts side."""

    readings: int = 0
    samples: int = 0
    changes: list[HealthChange] = field(default_factory=list)
    decisions: dict[Key, rules.Decision] = field(default_factory=dict)
    names: dict[tuple[str, int], str] = field(default_factory=dict)
    seen: set[tuple[str, int]] = field(default_factory=set)  # elements read this poll


def metric(metrics: Mapping[str, float], name: str) -> float | None:
    """A reported number, or None when it is missing or not a finite number (a driver's
    NaN must not reach the rules, nor PostgreSQL's JSON)."""
    value = metrics.get(name)
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def power_state(metrics: Mapping[str, float]) -> str:
    """ "on" / "off" from the `power_on` metric (1 / 0); "" when it was not reported."""
    value = metric(metrics, "power_on")
    if value is None:
        return ""
    return "on" if value else "off"


def temperature(metrics: Mapping[str, float]) -> float | None:
    """The temperature read, or None: also when the element is powered off, whose sensor
    reads nothing (a manager may still send 0 °C, which is no reading)."""
    if power_state(metrics) == "off":
        return None
    return metric(metrics, "temperature_c")


def observation(
    row: ElementRow, reading: HealthReading, health: str, quiet: bool
) -> rules.Observation:
    """What the rules read of one reading; `quiet`: in maintenance, power may be off."""
    m = reading.metrics or {}
    return rules.Observation(
        target_type=row.kind,
        name=row.name,
        health=health,
        state=reading.state,
        detail=reading.detail,
        temperature_c=temperature(m),
        correctable_errors=metric(m, "correctable_errors"),
        uncorrectable_errors=metric(m, "uncorrectable_errors"),
        poison_count=metric(m, "poison_count"),
        link_errors=metric(m, "link_errors"),
        link_retrains=metric(m, "link_retrains"),
        link_width=metric(m, "link_width"),
        link_width_nominal=metric(m, "link_width_max") or row.width_nominal,
        link_speed_gts=metric(m, "link_speed_gts"),
        link_speed_nominal_gts=metric(m, "link_speed_max_gts") or row.speed_nominal,
        power_state=power_state(m),
        utilisation_pct=metric(m, "utilisation_pct"),
        expected_on=not quiet,
    )


def sample(
    manager: FabricManager, row: ElementRow, reading: HealthReading, health: str, now: datetime
) -> HealthSample:
    """The HealthSample row of one reading (unsaved: the poll bulk-creates them)."""
    m = reading.metrics or {}
    values = {name: metric(m, name) for name in METRIC_COLUMNS}
    values["temperature_c"] = temperature(m)
    if values["link_width"] is not None:
        values["link_width"] = max(0, int(values["link_width"]))
    return HealthSample(
        manager=manager,
        target_type=row.kind,
        target_id=row.pk,
        taken_at=now,
        health=health,
        state=(reading.state or "")[:30],
        detail=(reading.detail or "")[:300] if health != Health.OK else "",
        power_state=power_state(m),
        metrics={
            k: v
            for k, v in m.items()
            if k not in _NOT_EXTRA and (metric(m, k) is not None or isinstance(v, str))
        },
        **values,
    )


def device_states_follow(
    changes: Sequence[HealthChange], records: Mapping[int, ChangeRecord], *, now: datetime
) -> None:
    """A device that fails while FREE becomes FAILED (it is not free: nothing can use it),
    and a FAILED one that recovers goes back to what holds it (`fabric.capacity.held_state`:
    BOUND when bound to a host or a composition bound it, RESERVED while a composition only
    claimed it) or FREE when nothing does; each change goes into the device's ChangeRecord
    of this poll.

    Compare-and-set from FREE and from FAILED only: a claim in flight (FREE -> RESERVED),
    a held device that fails (the inventory sync sets FAILED from the same health) and an
    operator's MAINTENANCE are never overwritten. What holds a device comes from its row
    (`bound_host`, `allocated_gib`) and from the compositions' claims (`fabric.holders`),
    read after this transaction's UPDATE of their health locked the rows, so a claim or a
    release of them waits for this poll. No query when no device changed health.
    """
    failed = [
        c.target_id for c in changes if c.target_type == "device" and c.after == Health.CRITICAL
    ]
    recovered = [
        c.target_id
        for c in changes
        if c.target_type == "device" and c.before == Health.CRITICAL and c.after != Health.CRITICAL
    ]
    moves: dict[tuple[str, str], list[int]] = defaultdict(list)
    for start in range(0, len(failed), _CHUNK):
        rows = Device.objects.filter(pk__in=failed[start : start + _CHUNK], state=DeviceState.FREE)
        moves[DeviceState.FREE, DeviceState.FAILED] += rows.values_list("pk", flat=True)
    for start in range(0, len(recovered), _CHUNK):
        back = Device.objects.filter(
            pk__in=recovered[start : start + _CHUNK], state=DeviceState.FAILED
        ).values_list("pk", "bound_host_id", "allocated_gib")
        claimed = held_states([pk for pk, _, _ in back])
        for pk, host, gib in back:
            held = held_state(claimed=claimed.get(pk), bound=host is not None, allocated_gib=gib)
            moves[DeviceState.FAILED, held or DeviceState.FREE].append(pk)
    for (before, after), ids in moves.items():
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            Device.objects.filter(pk__in=chunk, state=before).update(state=after, updated_at=now)
        for pk in ids:
            if pk in records:
                records[pk].changes["state"] = [before, after]


def _link_state(state: str, health: str) -> str:
    """A link's state: as the manager reports it, down whenever it failed (a failed link
    carries nothing); where the manager gives none, what its health says ("" for unknown:
    the column keeps what it had)."""
    if health == Health.CRITICAL:
        return LinkState.DOWN
    if state in _LINK_STATES:
        return state
    by_health: dict[str, str] = {Health.OK: LinkState.UP, Health.WARNING: LinkState.DEGRADED}
    return by_health.get(health, "")


def apply_readings(
    manager: FabricManager,
    readings: Sequence[HealthReading],
    previous: Mapping[tuple[str, int], Mapping[str, rules.RuleState]],
    *,
    now: datetime,
    full: bool,
) -> ReadingsResult:
    """Write what `readings` change (health columns, ChangeRecords, samples) and return the
    rules' decisions for every element that has a condition or a remembered state.

    `previous`: (target type, id) -> rule -> RuleState. `full`: store every sampled
    element, not only the unwell and the changed. About ten queries, whatever the size.
    """
    inventory = inventory_rows(manager)
    by_key = {(row.kind, row.pk): row for row in inventory.values()}
    # What the reported faults take with them, from the topology the console holds: the
    # driver reports each element's own health only (fabric.health.propagation).
    effects = effects_of(
        manager, ((r.target_kind, r.external_id, r.health) for r in readings), inventory
    )
    if effects:
        reported: set[tuple[str, str]] = {(r.target_kind, r.external_id) for r in readings}
        readings = [*readings, *unreported(effects, reported)]
    matched: list[tuple[ElementRow, HealthReading, str]] = []
    health_now: dict[tuple[str, int], str] = {}
    inherited: dict[tuple[str, int], str] = {}
    for reading in readings:
        row = inventory.get((reading.target_kind, reading.external_id))
        if row is None:
            continue  # not in the console yet (or absent): the next sync adds it
        effect = effects.get((reading.target_kind, reading.external_id))
        if effect is not None:
            reading = reading_derived(reading, effect)
            inherited[row.kind, row.pk] = effect.health
        health: str = reading.health if reading.health in _HEALTH_VALUES else Health.UNKNOWN
        matched.append((row, reading, health))
        health_now[row.kind, row.pk] = health
    result = ReadingsResult(readings=len(matched), seen=set(health_now))

    column_updates: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    records: list[ChangeRecord] = []
    device_records: dict[int, ChangeRecord] = {}  # device -> its record of this poll
    samples: list[HealthSample] = []
    ts = now.timestamp()
    for row, reading, health in matched:
        link_state = ""
        if row.kind == "link":
            link_state = _link_state(reading.state, health)
        changed = health != row.health or (link_state and link_state != row.state)
        if changed:
            column_updates[row.kind, health, link_state].append(row.pk)
            diff: dict[str, list[str]] = {}
            if health != row.health:
                diff["health"] = [row.health, health]
                result.changes.append(HealthChange(row.kind, row.pk, row.name, row.health, health))
            if link_state and link_state != row.state:
                diff["state"] = [row.state, link_state]
            record = ChangeRecord(
                target_type=row.kind,
                target_id=row.pk,
                target_label=row.name[:200],
                action=ChangeAction.CHANGED,
                changes=diff,
                message=(reading.detail or f"reported {health}")[:300],
                source=SOURCE,
            )
            records.append(record)
            if row.kind == "device":
                device_records[row.pk] = record
        if row.kind not in RULED:
            continue
        if row.kind in SAMPLED and (full or changed or health != Health.OK):
            samples.append(sample(manager, row, reading, health, now))
        quiet = in_maintenance(row, by_key)
        # Trouble it inherited from a reported fault folds into that fault's alert.
        cause = inherited.get((row.kind, row.pk))
        folded = rules.explained_by_ancestor(health, [cause] if cause else [])
        remembered = previous.get((row.kind, row.pk), {})
        if health == Health.OK and not remembered and not reading.metrics:
            continue  # nothing can hold and nothing is remembered: skip the rules
        decisions = rules.evaluate(
            observation(row, reading, health, quiet),
            remembered,
            now=ts,
            may_open=not (quiet or folded),
        )
        for rule, decision in decisions.items():
            result.decisions[(row.kind, row.pk, rule)] = decision
        if decisions:
            result.names[row.kind, row.pk] = row.name

    for (kind, health, link_state), pks in column_updates.items():
        values: dict[str, Any] = {"health": health, "updated_at": now}
        if link_state:
            values["state"] = link_state
        model = MODELS[kind]
        for start in range(0, len(pks), _CHUNK):
            model._default_manager.filter(pk__in=pks[start : start + _CHUNK]).update(**values)
    device_states_follow(result.changes, device_records, now=now)
    ChangeRecord.objects.bulk_create(records, batch_size=_BATCH)
    HealthSample.objects.bulk_create(samples, batch_size=_BATCH)
    result.samples = len(samples)
    return result
