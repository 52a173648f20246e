"""Reads and writes of the simulated manager's persistent state (the Simulated* tables).

Everything the simulated manager knows lives in the database, never in module globals,
so every web process and Celery worker sees the same fabric, and a restart loses nothing.
The driver, the fault-injection service, the `sim_fault` command and the demo builder all
go through these functions.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from fabric.drivers.base import DriverError
from fabric.simulator.models import SimulatedBinding, SimulatedElement, SimulatedFabric

# Realistic round trips of a fabric manager's management API: discovery walks every
# switch, a bind reprograms switch routing tables and waits for the link to retrain.
DEFAULT_LATENCY_MS: dict[str, int] = {
    "discover": 150,
    "bind": 400,
    "unbind": 250,
    "bindings": 60,
    "health": 80,
}
# How long a call that is made to time out hangs before the client gives up.
DEFAULT_TIMEOUT_MS = 2000

OPERATIONS: tuple[str, ...] = tuple(DEFAULT_LATENCY_MS)
FAULT_MODES: tuple[str, ...] = ("transient", "permanent", "timeout")
FAULTS: dict[str, str] = {
    "fail": SimulatedElement.Fault.FAILED,
    "degrade": SimulatedElement.Fault.DEGRADED,
    "recover": SimulatedElement.Fault.NONE,
}


def fabric_get(name: str) -> SimulatedFabric:
    """The simulated fabric called `name`; a permanent DriverError when there is none."""
    fabric = SimulatedFabric.objects.filter(name=name).first()
    if fabric is None:
        raise DriverError(
            f"No simulated fabric named {name!r}; create one with `manage.py seed_demo`.",
            permanent=True,
        )
    return fabric


def fabric_ensure(name: str) -> SimulatedFabric:
    """Get or create the simulated fabric `name`, with default latencies on creation only."""
    fabric, _ = SimulatedFabric.objects.get_or_create(
        name=name, defaults={"latency_ms": dict(DEFAULT_LATENCY_MS), "operation_faults": {}}
    )
    return fabric


def latency_seconds(fabric: SimulatedFabric, operation: str) -> float:
    """How long `operation` takes on `fabric`, scaled by COMPOSER_SIMULATOR_LATENCY_SCALE.

    The scale is 1.0 in the demo (realistic latencies users can see in progress bars),
    0.0 in tests (no waiting), and anything in between for benchmarks.
    """
    scale = float(getattr(settings, "COMPOSER_SIMULATOR_LATENCY_SCALE", 1.0))
    if scale <= 0:
        return 0.0
    if operation == "timeout":
        ms = (fabric.latency_ms or {}).get("timeout", DEFAULT_TIMEOUT_MS)
    else:
        ms = (fabric.latency_ms or {}).get(operation, DEFAULT_LATENCY_MS.get(operation, 0))
    return max(0.0, float(ms)) / 1000.0 * scale


def operation_fault_take(fabric: SimulatedFabric, operation: str) -> str | None:
    """Consume one injected failure of `operation`, returning its mode, or None.

    The common case (nothing injected) costs no extra query: the fabric row was just read.
    Otherwise the row is locked so that concurrent workers consume exactly n failures
    between them.
    """
    if not (fabric.operation_faults or {}).get(operation):
        return None
    with transaction.atomic():
        locked = SimulatedFabric.objects.select_for_update().get(pk=fabric.pk)
        faults = dict(locked.operation_faults or {})
        entry = faults.get(operation)
        if not entry or int(entry.get("remaining", 0)) <= 0:
            faults.pop(operation, None)
            mode = None
        else:
            mode = str(entry.get("mode", "transient"))
            remaining = int(entry["remaining"]) - 1
            if remaining > 0:
                faults[operation] = {"mode": mode, "remaining": remaining}
            else:
                faults.pop(operation)
        locked.operation_faults = faults
        locked.save(update_fields=["operation_faults", "updated_at"])
    fabric.operation_faults = faults
    return mode


def operation_fault_set(
    *, fabric: SimulatedFabric, operation: str, mode: str, count: int = 1
) -> None:
    """Make the next `count` calls of `operation` fail with `mode`; count 0 clears it.

    Modes: "transient" (DriverError, permanent=False), "permanent" (permanent=True),
    "timeout" (the call hangs, performs the operation, then raises DriverTimeout: the
    worst case for callers, who must reconcile).
    """
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {list(OPERATIONS)}; got {operation!r}")
    if mode not in FAULT_MODES:
        raise ValueError(f"mode must be one of {list(FAULT_MODES)}; got {mode!r}")
    if count < 0:
        raise ValueError(f"count must be zero or more; got {count}")
    with transaction.atomic():
        locked = SimulatedFabric.objects.select_for_update().get(pk=fabric.pk)
        faults = dict(locked.operation_faults or {})
        if count:
            faults[operation] = {"mode": mode, "remaining": count}
        else:
            faults.pop(operation, None)
        locked.operation_faults = faults
        locked.save(update_fields=["operation_faults", "updated_at"])
    fabric.operation_faults = faults


def latency_set(*, fabric: SimulatedFabric, operation: str, ms: int) -> None:
    """Set how long `operation` takes on `fabric` (before the global scale)."""
    if operation not in (*OPERATIONS, "timeout"):
        raise ValueError(f"operation must be one of {[*OPERATIONS, 'timeout']}; got {operation!r}")
    if ms < 0:
        raise ValueError(f"ms must be zero or more; got {ms}")
    with transaction.atomic():
        locked = SimulatedFabric.objects.select_for_update().get(pk=fabric.pk)
        latency = dict(locked.latency_ms or {})
        latency[operation] = ms
        locked.latency_ms = latency
        locked.save(update_fields=["latency_ms", "updated_at"])
    fabric.latency_ms = latency


def element_fault_set(
    *, fabric: SimulatedFabric, kind: str, external_id: str, action: str
) -> tuple[str, str]:
    """Apply a fault action ("fail", "degrade", "recover") to one element.

    Returns the element's fault (before, after). Raises ValueError for an unknown action
    and SimulatedElement.DoesNotExist when the fabric has no such element.
    """
    if action not in FAULTS:
        raise ValueError(f"action must be one of {list(FAULTS)}; got {action!r}")
    with transaction.atomic():
        element = SimulatedElement.objects.select_for_update().get(
            fabric=fabric, kind=kind, external_id=external_id
        )
        before = element.fault
        after = FAULTS[action]
        if before != after:
            element.fault = after
            element.save(update_fields=["fault", "updated_at"])
    return before, after


def bindings_for(fabric: SimulatedFabric) -> list[SimulatedBinding]:
    """Every binding of `fabric`, oldest first."""
    return list(SimulatedBinding.objects.filter(fabric=fabric).order_by("created_at", "id"))
