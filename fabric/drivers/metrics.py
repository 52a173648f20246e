"""Latency and errors of every call to a fabric manager, per manager and operation.

`get_driver` hands out drivers whose protocol methods are timed here: the histogram
`composer_driver_call_duration_seconds` and the counter `composer_driver_call_errors_total`
(by manager, operation and whether the error was permanent). The methods are wrapped on the
instance, not behind a proxy, so a driver stays an instance of its class (the events source
and the tests ask). In prometheus-client's default registry, like composer's own per-process
series (composer.monitoring.metrics), and added up across processes the same way.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from prometheus_client import Counter, Histogram

from fabric.drivers.base import DriverError

__all__ = ["DRIVER_CALL_DURATION", "DRIVER_CALL_ERRORS", "OPERATIONS", "driver_instrument"]

# The protocol's calls to the manager (fabric.drivers.base.FabricDriver).
OPERATIONS = ("discover", "bind", "unbind", "bindings", "health", "probe")

DRIVER_CALL_DURATION = Histogram(
    "composer_driver_call_duration_seconds",
    "Time a fabric manager took to answer a driver call, by manager and operation.",
    ["manager", "operation"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
DRIVER_CALL_ERRORS = Counter(
    "composer_driver_call_errors_total",
    "Driver calls that failed, by manager, operation and kind (transient, permanent, or "
    "unexpected: an error that is not a DriverError).",
    ["manager", "operation", "kind"],
)

D = TypeVar("D")


def _timed(call: Callable[..., Any], manager: str, operation: str) -> Callable[..., Any]:
    histogram = DRIVER_CALL_DURATION.labels(manager=manager, operation=operation)

    @functools.wraps(call)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        except DriverError as exc:
            kind = "permanent" if exc.permanent else "transient"
            DRIVER_CALL_ERRORS.labels(manager=manager, operation=operation, kind=kind).inc()
            raise
        except Exception:
            DRIVER_CALL_ERRORS.labels(manager=manager, operation=operation, kind="unexpected").inc()
            raise
        finally:
            histogram.observe(time.perf_counter() - started)

    return timed


def driver_instrument(driver: D, *, manager: str) -> D:
    """Time `driver`'s protocol calls under the manager's name; returns the same object."""
    for operation in OPERATIONS:
        call = getattr(driver, operation, None)
        if callable(call):
            try:
                setattr(driver, operation, _timed(call, manager, operation))
            except AttributeError:  # a class with __slots__: left uncounted, never broken
                return driver
    return driver
