"""Verification: what the manager reports, against the bindings a caller recorded.

The manager's report (`bindings()`) is the truth: a bind that answered may still not hold
(a manager that lost it, a reply that named another binding). A composition is ready only
once the manager reports every binding it recorded, for the right device, host and slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.reconfig.targets import BindTarget, T, binding_matches

__all__ = ["Verification", "reported_bindings", "reported_bindings_or_none", "verify"]


def reported_bindings(driver: FabricDriver) -> list[Binding]:
    """Every binding the manager holds now. Raises DriverError when it cannot be read."""
    return driver.bindings()


def reported_bindings_or_none(driver: FabricDriver) -> list[Binding] | None:
    """What the manager reports bound, or None when it cannot be read: an undo then goes by
    the recorded binding ids alone (a reply that was lost stays for the reconciliation)."""
    try:
        return driver.bindings()
    except DriverError:
        return None


@dataclass(frozen=True)
class Verification(Generic[T]):
    """What the manager reported (`reported`, for the steps after: an undo sweeps by it),
    and the targets whose recorded binding it does not report as theirs (`missing`)."""

    reported: list[Binding]
    missing: list[BindTarget[T]]


def verify(driver: FabricDriver, targets: Sequence[BindTarget[T]]) -> Verification[T]:
    """Ask the manager for its bindings and check each target's recorded `binding_id`
    against them: missing when not reported, or reported for another device, host or
    slice size. Raises DriverError when the manager cannot be read."""
    reported = driver.bindings()
    by_id = {b.binding_id: b for b in reported}
    missing = [
        t
        for t in targets
        if t.binding_id not in by_id or not binding_matches(by_id[t.binding_id], t)
    ]
    return Verification(reported=reported, missing=missing)
