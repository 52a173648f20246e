"""health_poll(): read a fabric manager's health through its driver and act on it.

One poll, in one transaction under the manager's lock:

1. `driver.health()`: a reading for every element, its own health as the manager sees it.
   A DriverError instead feeds the `manager_unreachable` rule (a critical alert about the
   fabric manager, closed when polls succeed again); nothing else changes then.
2. What the reported faults take with them is derived from the topology the console holds
   (fabric.health.propagation, along the failure domains every blast radius is measured
   on): a failed rack, power feed or enclosure fails its devices, a failed switch, host or
   link takes its links down, a port follows its owner, a degraded domain degrades its
   gear and devices. An element the manager could not read at all gets what it inherits.
   The health columns follow the readings (`health` of racks, power feeds, switches,
   hosts, enclosures, devices, ports and links; a link's `state` up/degraded/down too),
   each change written as a ChangeRecord (source "health poll"), in a few grouped
   UPDATEs. A device's `state` follows from two states only
   (`readings.device_states_follow`, compare-and-set): FREE -> FAILED when it fails, and
   FAILED -> what holds it when it recovers (BOUND or RESERVED, as its bound host, its
   slices and the compositions' claims say; FREE when nothing does). A RESERVED or BOUND
   device that fails keeps its state: it belongs to the composer's compare-and-set claims
   and to inventory sync (which knows the bindings and sets FAILED from the same health at
   the next sync); a critical device is out of placement by its health alone, and a poll
   never overwrites a claim in flight or an operator's MAINTENANCE.
3. Samples are stored (bulk_create): every sampled element (devices, links, switches,
   hosts, enclosures, power feeds) once per COMPOSER_HEALTH_SAMPLE_INTERVAL_S, and in
   between only the elements that are unwell or whose health just changed. A healthy
   demo fabric (about 300 sampled elements) polled every 5 s thus writes 300 rows a
   minute rather than 3,600, while every change and every unwell reading is kept.
4. The rules (fabric/health/rules.py, pure) decide per element and rule, with what they
   remembered (`HealthCondition` rows); alerts open, repeat (duplicates fold into
   `occurrences`), escalate, de-escalate and close. An element whose trouble it inherited
   (a device in a failed enclosure, an enclosure on a failed power feed, a link whose switch
   failed) opens no alert of its own: it folds into the cause's, whose blast radius lists
   it. Elements in maintenance (or behind an enclosure or switch in
   maintenance) open no new alerts either; their open ones still close on recovery.
5. A new alert's blast radius is computed with fabric.topology (the graph loaded once per
   poll, only when something opens), including what the registered impact contributors
   add (compositions and tenants, from the composer).

Two polls of one manager at once: the manager's row lock serialises them, and a poll whose
readings are older than the last applied poll is dropped (`stale`); the unique constraints
on open alerts and on conditions are the last line of defence.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from fabric.choices import AlertSource, Health
from fabric.drivers.base import DriverError, HealthReading
from fabric.drivers.registry import get_driver
from fabric.health import rules
from fabric.health.alerting import AlertsResult, apply_decisions, remembered
from fabric.health.readings import HealthChange, ReadingsResult, apply_readings
from fabric.models import FabricManager, HealthCondition
from fabric.services.sync.diff import lock_manager

logger = logging.getLogger(__name__)

__all__ = ["HealthChange", "PollOutcome", "health_poll", "managers_due"]

_UNHEALTHY = frozenset({Health.WARNING, Health.CRITICAL})


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """What one poll did; ids are console primary keys.

    `opened` / `updated` / `closed`: alerts opened, changed (severity up or down, marked
    flapping) and closed. `repeated`: open alerts seen again (duplicates suppressed into
    `occurrences`). `devices_unhealthy`: devices whose health became warning or critical;
    `devices_recovered`: devices back to ok from warning or critical. `devices_affected`: the
    devices in the blast radius of the critical alerts opened now: they fail, or some host
    can no longer reach them although their own health reads ok (a failed switch); which
    compositions actually lose them is in each alert's blast radius. `stale`: dropped, a
    newer poll was applied first. `ok` false: the driver failed (`error`), and only the
    manager's alert was updated.
    """

    manager_id: int
    taken_at: datetime
    ok: bool = True
    error: str = ""
    stale: bool = False
    readings: int = 0
    samples: int = 0
    opened: tuple[int, ...] = ()
    updated: tuple[int, ...] = ()
    closed: tuple[int, ...] = ()
    repeated: int = 0
    health_changes: tuple[HealthChange, ...] = ()
    devices_unhealthy: tuple[int, ...] = ()
    devices_recovered: tuple[int, ...] = ()
    devices_affected: tuple[int, ...] = ()
    duration_s: float = 0.0


def managers_due(now: datetime | None = None) -> list[FabricManager]:
    """The enabled managers whose health poll is due: never polled, polled at least
    `health_poll_interval_s` ago (less half a second so a beat tick a hair early does not
    skip a whole interval), or with a poll requested that has not run yet
    (`poll_requested_at`: a request made while the task queue was away waits there). One
    query; the periodic task polls each of them."""
    now = now or timezone.now()
    due = []
    for manager in FabricManager.objects.filter(is_enabled=True).order_by("pk"):
        last = manager.last_health_poll_at
        if (
            last is None
            or manager.poll_requested_at is not None
            or (now - last).total_seconds() >= manager.health_poll_interval_s - 0.5
        ):
            due.append(manager)
    return due


def health_poll(*, manager: FabricManager, now: datetime | None = None) -> PollOutcome:
    """Poll `manager`'s health once (see the module docstring for everything it writes).

    Side effects, in one transaction: health columns and ChangeRecords, HealthSample rows,
    Alert and HealthCondition rows, and the manager's `last_health_poll_at` /
    `last_health_poll_error` / `last_health_sample_at`. Never raises what the driver
    raises: an unreachable manager (or a driver that failed otherwise, its type named) is an
    alert, and `PollOutcome.ok` is false. `now` is for tests.
    """
    started = time.monotonic()
    now = now or timezone.now()
    try:
        readings = get_driver(manager).health()
    except DriverError as exc:
        error = str(exc) or type(exc).__name__
        logger.warning("health poll of %s failed: %s", manager.name, error)
        return _apply(manager, now, started, readings=None, error=error)
    except Exception as exc:  # a driver's bug: recorded on the manager, not a lost task
        logger.exception("health poll of %s: its driver failed", manager.name)
        error = (
            f"its driver failed reading health ({type(exc).__name__}); the worker's log "
            "has the details"
        )
        return _apply(manager, now, started, readings=None, error=error)
    return _apply(manager, now, started, readings=readings, error="")


def _apply(
    manager: FabricManager,
    now: datetime,
    started: float,
    *,
    readings: list[HealthReading] | None,
    error: str,
) -> PollOutcome:
    """Everything after the driver call, in one transaction under the manager's lock."""
    with transaction.atomic():
        lock_manager(manager)
        fresh = (
            FabricManager.objects.filter(pk=manager.pk)
            .values_list("last_health_poll_at", "last_health_sample_at")
            .first()
        )
        last_poll, last_sample = fresh if fresh else (None, None)
        if last_poll is not None and last_poll >= now:
            logger.info("health poll of %s at %s is stale; dropped", manager.name, now)
            return PollOutcome(
                manager_id=manager.pk,
                taken_at=now,
                ok=readings is not None,
                error=error,
                stale=True,
                duration_s=time.monotonic() - started,
            )
        conditions = {
            (c.target_type, c.target_id, c.rule): c
            for c in HealthCondition.objects.filter(manager=manager)
        }
        full = last_sample is None or (now - last_sample) >= timedelta(
            seconds=int(getattr(settings, "COMPOSER_HEALTH_SAMPLE_INTERVAL_S", 60))
        )
        previous = remembered(conditions)
        seen = ReadingsResult()
        ts = now.timestamp()
        if readings is not None:
            seen = apply_readings(manager, readings, previous, now=now, full=full)
            # Elements with an alert or a memory that the manager no longer reports (gone,
            # or absent from the console) count as clean: their alerts close, not linger.
            for key, states in previous.items():
                if key[0] != AlertSource.FABRIC_MANAGER and key not in seen.seen:
                    for rule, state in states.items():
                        seen.decisions[(*key, rule)] = rules.decide(rule, state, None, now=ts)
        # The manager itself: unreachable when the driver failed, back when it answered.
        manager_key = (AlertSource.FABRIC_MANAGER.value, manager.pk)
        seen.names[manager_key] = manager.name
        previous_manager = previous.get(manager_key, {})
        condition = rules.manager_condition(error or None, name=manager.name)
        for rule in {*previous_manager, *([condition.rule] if condition else [])}:
            seen.decisions[(*manager_key, rule)] = rules.decide(
                rule,
                previous_manager.get(rule, rules.RuleState()),
                condition if condition is not None and condition.rule == rule else None,
                now=ts,
            )
        acted = apply_decisions(manager, seen.decisions, seen.names, conditions, now=now)
        updates: dict[str, Any] = {"last_health_poll_at": now, "last_health_poll_error": error}
        if readings is not None and full:
            updates["last_health_sample_at"] = now
        # This poll answers the requests made before its readings; a later one stays.
        answered = Case(
            When(poll_requested_at__lte=now, then=Value(None)),
            default=F("poll_requested_at"),
        )
        FabricManager.objects.filter(pk=manager.pk).update(**updates, poll_requested_at=answered)
        for name, value in updates.items():
            setattr(manager, name, value)
        if manager.poll_requested_at is not None and manager.poll_requested_at <= now:
            manager.poll_requested_at = None
    outcome = _outcome(manager, now, seen, acted, ok=readings is not None, error=error)
    outcome = replace(outcome, duration_s=time.monotonic() - started)
    logger.info(
        "health poll of %s: %d readings, %d samples, alerts +%d ~%d -%d, %d health changes "
        "in %.3f s",
        manager.name,
        outcome.readings,
        outcome.samples,
        len(outcome.opened),
        len(outcome.updated),
        len(outcome.closed),
        len(outcome.health_changes),
        outcome.duration_s,
    )
    return outcome


def _outcome(
    manager: FabricManager,
    now: datetime,
    seen: ReadingsResult,
    acted: AlertsResult,
    *,
    ok: bool,
    error: str,
) -> PollOutcome:
    devices = [c for c in seen.changes if c.target_type == "device"]
    return PollOutcome(
        manager_id=manager.pk,
        taken_at=now,
        ok=ok,
        error=error,
        readings=seen.readings,
        samples=seen.samples,
        opened=tuple(acted.opened),
        updated=tuple(acted.updated),
        closed=tuple(acted.closed),
        repeated=acted.repeated,
        health_changes=tuple(seen.changes),
        devices_unhealthy=tuple(c.target_id for c in devices if c.after in _UNHEALTHY),
        devices_recovered=tuple(
            c.target_id for c in devices if c.after == Health.OK and c.before in _UNHEALTHY
        ),
        devices_affected=tuple(sorted(acted.devices_affected)),
    )
