"""inventory_sync(): discover a manager's fabric and write it into the console tables."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from fabric.choices import ChangeAction
from fabric.drivers.base import DriverError
from fabric.drivers.registry import get_driver
from fabric.health.derived import inventory_derived
from fabric.models import FabricManager
from fabric.services.domains import domains_refresh
from fabric.services.history import change_record
from fabric.services.sync.diff import SyncContext
from fabric.services.sync.kinds import apply_inventory
from fabric.services.sync.result import SyncResult

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int, str], None]

# Sync steps reported through on_progress: discovery, eight kinds, failure domains, the summary.
_STEPS = (
    "discover",
    "racks",
    "power_feeds",
    "switches",
    "hosts",
    "enclosures",
    "devices",
    "ports",
    "links",
    "domains",
    "finish",
)


def inventory_sync(
    *,
    manager: FabricManager,
    on_progress: ProgressCallback | None = None,
    actor: Any = None,
    source: str = "",
) -> SyncResult:
    """Discover `manager`'s fabric through its driver and write it into the console tables.

    Side effects: adds/updates/marks absent inventory rows, writes ChangeRecords (one per
    changed row, plus a SYNCED record on the manager when anything changed), sets
    `manager.last_synced_at` / `last_sync_error`. Calls `on_progress(done, total, message)`
    after each step. Health is the manager's, with the effects of the faults it reports
    (fabric.health.derived: a failed enclosure's devices are written failed). Raises
    DriverError (recorded as the manager's last_sync_error) when the manager cannot be read;
    nothing is written then. Last, the manager's failure domains are derived again from the
    new topology (`domains_refresh`). Each kind is written in its own
    transaction, so progress and log lines are visible while a large sync runs; an error
    while writing leaves the kinds before it synchronised, and the next sync converges.
    """
    started = time.monotonic()
    source = source or "inventory sync"
    result = SyncResult(manager_id=manager.pk, manager_name=manager.name)
    total = len(_STEPS)
    done = 0

    def step(name: str, message: str = "") -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total, message or f"{name.replace('_', ' ')} synchronised")

    logger.info("inventory sync of %s started", manager.name)
    try:
        driver = get_driver(manager)
        inventory = driver.discover()
        bindings = driver.bindings()
    except DriverError as exc:
        FabricManager.objects.filter(pk=manager.pk).update(last_sync_error=str(exc)[:2000])
        manager.last_sync_error = str(exc)
        logger.error("inventory sync of %s failed: %s", manager.name, exc)
        raise
    result.bindings = len(bindings)
    # The manager reports each element's own health; what its faults take with them is
    # derived from the topology the console holds, as a health poll derives it.
    inventory = inventory_derived(manager, inventory)
    counts = inventory.counts()
    logger.info(
        "discovered %s: %s",
        manager.name,
        ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items()),
    )
    step("discover", f"discovered {counts['devices']} devices, {counts['links']} links")

    ctx = SyncContext(
        manager=manager, now=timezone.now(), actor=actor, source=source, result=result
    )
    try:
        apply_inventory(ctx, inventory, bindings, step)
    except Exception as exc:
        FabricManager.objects.filter(pk=manager.pk).update(
            last_sync_error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        logger.exception("inventory sync of %s failed while writing", manager.name)
        raise

    _refresh_domains(manager, result)
    step("domains", "failure domains refreshed")

    result.duration_s = time.monotonic() - started
    with transaction.atomic():
        before = manager.last_synced_at
        FabricManager.objects.filter(pk=manager.pk).update(
            last_synced_at=ctx.now, last_sync_error=""
        )
        manager.last_synced_at, manager.last_sync_error = ctx.now, ""
        if result.total_changes:
            record = change_record(
                manager,
                ChangeAction.SYNCED,
                {"last_synced_at": (before, ctx.now)},
                label=manager.name,
                message=result.summary(),
                actor=actor,
                source=source,
            )
            record.save()
            result.change_records += 1
    logger.info("inventory sync of %s finished: %s", manager.name, result.summary())
    step("finish", result.summary())
    return result


def _refresh_domains(manager: FabricManager, result: SyncResult) -> None:
    """Re-derive the failure domains; a failure here is a warning, not a failed sync: the
    inventory is written, and the next sync derives them again."""
    try:
        domains_refresh(manager=manager)
    except Exception as exc:
        logger.exception("failure domains of %s not refreshed", manager.name)
        result.warnings.append(f"failure domains not refreshed: {type(exc).__name__}: {exc}")
