"""A simulated manager whose binds are slow, and a note of every bind it is asked for: what
the tests of parallel binds (a compose job's, `fabric.reconfig.bind_many`'s) measure."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver

Call = tuple[str, float, float, int]
"""One bind asked for: (device external id, start, end, thread id)."""


def slow_binds(settings: Any, monkeypatch: pytest.MonkeyPatch, *, bind_ms: int) -> list[Call]:
    """Every operation of the simulated fabric `sim` instant but bind, which takes
    `bind_ms`; returns the list every bind is noted in as it ends."""
    settings.COMPOSER_SIMULATOR_LATENCY_SCALE = 1.0
    fabric = store.fabric_get("sim")
    for operation in store.OPERATIONS:
        store.latency_set(fabric=fabric, operation=operation, ms=0)
    store.latency_set(fabric=fabric, operation="bind", ms=bind_ms)
    seen: list[Call] = []
    real = SimulatedDriver.bind

    def bind(self: SimulatedDriver, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return real(self, **kwargs)
        finally:
            seen.append((kwargs["device_id"], start, time.monotonic(), threading.get_ident()))

    monkeypatch.setattr(SimulatedDriver, "bind", bind)
    return seen
