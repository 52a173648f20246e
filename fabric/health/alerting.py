"""The alerts side of a health poll: open, repeat, escalate and close alerts as the rules
decided, and keep what the rules remember (`HealthCondition` rows) for the next poll.

See fabric/health/poll.py for the whole poll.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import IntegrityError, transaction
from django.db.models import F

from fabric.choices import AlertState
from fabric.health import rules
from fabric.health.blast import BlastRadius
from fabric.models import Alert, FabricManager, HealthCondition

logger = logging.getLogger(__name__)

__all__ = ["AlertsResult", "apply_decisions", "remembered"]

_BATCH = 1000

Key = tuple[str, int, str]  # (target type, target id, rule)


def state_of(row: HealthCondition) -> rules.RuleState:
    """The rules' view of a stored condition row."""
    return rules.RuleState(
        bad_streak=row.bad_streak,
        clean_streak=row.clean_streak,
        is_open=row.alert_id is not None,
        severity=row.severity,
        is_flapping=row.is_flapping,
        flaps=tuple(float(t) for t in row.flaps or ()),
        last_bad_at=row.last_bad_at.timestamp() if row.last_bad_at else None,
    )


def apply_state(row: HealthCondition, state: rules.RuleState, now: datetime) -> None:
    """Copy a RuleState onto a condition row (not saved)."""
    row.updated_at = now  # bulk_update does not apply auto_now
    row.bad_streak = state.bad_streak
    row.clean_streak = state.clean_streak
    row.severity = state.severity if state.is_open else ""
    row.is_flapping = state.is_flapping
    row.flaps = [round(t, 3) for t in state.flaps]
    row.last_bad_at = (
        datetime.fromtimestamp(state.last_bad_at, tz=UTC) if state.last_bad_at is not None else None
    )


def remembered(
    conditions: Mapping[Key, HealthCondition],
) -> dict[tuple[str, int], dict[str, rules.RuleState]]:
    """(target type, id) -> rule -> RuleState, from the manager's condition rows."""
    found: dict[tuple[str, int], dict[str, rules.RuleState]] = {}
    for (target_type, target_id, rule), row in conditions.items():
        found.setdefault((target_type, target_id), {})[rule] = state_of(row)
    return found


@dataclass
class AlertsResult:
    """What the alerts side did: alert ids, and the devices the critical new ones hit."""

    opened: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)
    repeated: int = 0
    devices_affected: set[int] = field(default_factory=set)


def apply_decisions(
    manager: FabricManager,
    decisions: Mapping[Key, rules.Decision],
    names: Mapping[tuple[str, int], str],
    conditions: Mapping[Key, HealthCondition],
    *,
    now: datetime,
) -> AlertsResult:
    """Act on the rules' decisions: write the alerts and the condition rows.

    Opens (with the blast radius, the graph loaded once and only then), repeats (one
    UPDATE for every suppressed duplicate), escalates, de-escalates, marks flapping and
    closes alerts; creates, updates or deletes the condition rows. `names`: the elements'
    names, for new alerts. A decision about an alert that is no longer open (closed by
    hand, deleted) starts afresh.
    """
    result = AlertsResult()
    blast: BlastRadius | None = None

    def open_alert(target_type: str, target_id: int, rule: str, decision: rules.Decision) -> Alert:
        nonlocal blast
        if blast is None:
            blast = BlastRadius(manager)
        name = names.get((target_type, target_id), "") or f"{target_type} {target_id}"
        return _open(manager, blast, result, (target_type, target_id, rule), decision, name, now)

    open_alerts = {
        (a.source_type, a.source_id, a.rule): a
        for a in Alert.objects.filter(manager=manager, state=AlertState.OPEN)
    }
    repeat: list[int] = []
    close: list[int] = []
    condition_creates: list[HealthCondition] = []
    condition_updates: list[HealthCondition] = []
    condition_deletes: list[int] = []
    ts = now.timestamp()
    for key, decision in decisions.items():
        target_type, target_id, rule = key
        alert = open_alerts.get(key)
        action = decision.action
        if action == rules.Action.OPEN:
            if alert is None:
                alert = open_alert(target_type, target_id, rule, decision)
                open_alerts[key] = alert
            else:  # remembered state was lost but the alert is open: a repeat
                repeat.append(alert.pk)
        elif alert is None:
            if action not in (rules.Action.NONE, rules.Action.PENDING):
                # The rules remember an alert that is gone (closed by hand, deleted):
                # forget it and start again.
                decision = rules.Decision(rules.Action.NONE, rules.RuleState())
        elif action == rules.Action.REPEAT:
            repeat.append(alert.pk)
        elif action in (rules.Action.ESCALATE, rules.Action.DEESCALATE, rules.Action.FLAPPING):
            Alert.objects.filter(pk=alert.pk).update(
                severity=decision.severity,
                message=decision.message[:500],
                is_flapping=decision.state.is_flapping,
                occurrences=F("occurrences") + 1,
                last_seen_at=now,
            )
            result.updated.append(alert.pk)
        elif action == rules.Action.CLOSE:
            close.append(alert.pk)
            result.closed.append(alert.pk)
            alert = None

        state = decision.state
        row = conditions.get(key)
        if state.is_forgettable(ts):
            if row is not None:
                condition_deletes.append(row.pk)
            continue
        if row is None:
            row = HealthCondition(
                manager=manager, target_type=target_type, target_id=target_id, rule=rule
            )
            condition_creates.append(row)
        else:
            condition_updates.append(row)
        apply_state(row, state, now)
        row.alert_id = alert.pk if alert is not None and state.is_open else None

    if repeat:
        Alert.objects.filter(pk__in=repeat).update(
            occurrences=F("occurrences") + 1, last_seen_at=now
        )
        result.repeated += len(repeat)
    if close:
        Alert.objects.filter(pk__in=close).update(
            state=AlertState.CLOSED, closed_at=now, is_flapping=False
        )
    if condition_deletes:
        HealthCondition.objects.filter(pk__in=condition_deletes).delete()
    if condition_updates:
        HealthCondition.objects.bulk_update(
            condition_updates,
            [
                "bad_streak",
                "clean_streak",
                "severity",
                "is_flapping",
                "flaps",
                "last_bad_at",
                "alert",
                "updated_at",
            ],
            batch_size=_BATCH,
        )
    if condition_creates:
        HealthCondition.objects.bulk_create(condition_creates, batch_size=_BATCH)
    return result


def _open(
    manager: FabricManager,
    blast: BlastRadius,
    result: AlertsResult,
    key: Key,
    decision: rules.Decision,
    name: str,
    now: datetime,
) -> Alert:
    """Create the alert, with its blast radius; a concurrent twin is reused."""
    target_type, target_id, rule = key
    radius = blast.of(target_type, target_id, severity=decision.severity)
    alert = Alert(
        manager=manager,
        source_type=target_type,
        source_id=target_id,
        source_name=name[:200],
        rule=rule,
        severity=decision.severity,
        message=decision.message[:500],
        state=AlertState.OPEN,
        opened_at=now,
        last_seen_at=now,
        is_flapping=decision.state.is_flapping,
        blast_radius=radius,
    )
    try:
        with transaction.atomic():
            alert.save()
    except IntegrityError:
        # Another poll opened it (the lock makes this rare): one open alert, seen again.
        alert = Alert.objects.get(
            source_type=target_type, source_id=target_id, rule=rule, state=AlertState.OPEN
        )
        Alert.objects.filter(pk=alert.pk).update(occurrences=F("occurrences") + 1, last_seen_at=now)
        result.repeated += 1
        return alert
    result.opened.append(alert.pk)
    if radius.get("effect") == "lost":
        result.devices_affected.update(radius.get("devices", ()))
    logger.warning(
        "alert %s opened: %s %s on %s %s", alert.pk, decision.severity, rule, target_type, name
    )
    return alert
