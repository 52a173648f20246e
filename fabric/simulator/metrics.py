"""Sensor values for the simulated manager's health readings, worse when an element is unwell.

Kept apart from the driver, which carries the calls and their faults, because these numbers
model hardware: deterministic per element, with healthy values well inside the health
rules' thresholds and a degraded or failed element's well past them.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

from fabric.kinds import all_kinds, partitioned
from fabric.simulator.models import SimulatedElement
from fabric.simulator.propagation import CRITICAL, OK, Effective, ElementLike

Kind = SimulatedElement.Kind
# Nominal draw of a healthy device under typical load, for the simulated power metric.
_NOMINAL_POWER_W = {"gpu": 350.0, "cxl_memory": 40.0, "nvme": 14.0, "nic": 25.0, "dpu": 75.0}


def _jitter(external_id: str, spread: float) -> float:
    """A stable per-element offset in [0, spread): metrics differ by element, not by call."""
    return (zlib.crc32(external_id.encode()) % 1000) / 1000.0 * spread


# Device kinds with ECC-protected memory (those sized in GiB of memory: GPU HBM, CXL DRAM),
# and those that can poison (memory handed out in slices: CXL DRAM).
_ECC_KINDS = frozenset(k.name for k in all_kinds() if k.size == "memory_gib")
_POISON_KINDS = partitioned("slices")


def element_metrics(
    element: ElementLike,
    effective: Effective,
    *,
    bound: bool = False,
    ports: Mapping[str, Mapping[str, Any]] | None = None,
    now: float | None = None,
) -> dict[str, float]:
    """Plausible sensor values for a health reading, worse when the element is unwell.

    Deterministic per element (a stable jitter by external id), so tests can rely on the
    rules' thresholds: healthy values sit well inside them, a degraded element crosses
    the warning ones (correctable ECC, link errors, downtrained links), a failed one reads
    powered off (with no temperature) and, for CXL memory, poisoned. Counters are per
    period (fabric.health.conditions) and grow with the time since the fault was set
    (`element.updated_at`), as errors pile up.
    Names: the metric vocabulary of fabric.health.poll (`power_on` is 1 or 0).
    """
    data = element.data or {}
    failed = effective.health == CRITICAL
    degraded = effective.health != OK and not failed
    eid = element.external_id
    since_fault = 0.0
    updated_at = getattr(element, "updated_at", None)  # a row's, or a served world's Element
    if now is not None and updated_at is not None:
        since_fault = max(0.0, now - updated_at.timestamp())
    if element.kind == Kind.DEVICE:
        kind = str(data.get("kind"))
        nominal = _NOMINAL_POWER_W.get(kind, 20.0)
        load = (0.55 if bound else 0.2) + _jitter(eid, 0.3)
        metrics = {
            "power_w": 0.0 if failed else round(nominal * load, 1),
            "power_on": 0.0 if failed else 1.0,
            "utilisation_pct": 0.0
            if failed
            else round((55.0 + _jitter(eid, 40)) if bound else _jitter(eid, 4), 1),
        }
        if not failed:  # powered off: no temperature to read
            warm = 30.0 if degraded else 0.0
            metrics["temperature_c"] = round(41.0 + _jitter(eid, 12) + warm, 1)
        if kind in _ECC_KINDS:
            metrics["correctable_errors"] = (
                0.0
                if failed
                else float(120 + int(min(since_fault, 3600.0) // 30))
                if degraded
                else float(int(_jitter(eid, 3)))
            )
            metrics["uncorrectable_errors"] = 2.0 if failed and kind in _POISON_KINDS else 0.0
        if kind in _POISON_KINDS:
            metrics["poison_count"] = 4.0 if failed else 0.0
        return metrics
    if element.kind == Kind.LINK:
        end = (ports or {}).get(str(data.get("a_port_id") or ""), {})
        lanes = float(end.get("lanes") or 16)
        speed = float(end.get("speed_gts") or 32.0)
        return {
            "bandwidth_gbps": 0.0
            if failed
            else float(data.get("bandwidth_gbps", 0.0)) * (0.25 if degraded else 1.0),
            "link_width": 0.0 if failed else (lanes / 2 if degraded else lanes),
            "link_width_max": lanes,
            "link_speed_gts": 0.0 if failed else (speed / 2 if degraded else speed),
            "link_speed_max_gts": speed,
            "link_errors": 0.0
            if failed
            else float(14 + int(min(since_fault, 3600.0) // 30))
            if degraded
            else float(int(_jitter(eid, 2))),
            "link_retrains": 4.0 if degraded else 0.0,
        }
    if element.kind == Kind.POWER_FEED:
        capacity = float(data.get("capacity_kw", 0.0))
        return {
            "voltage_v": 0.0 if failed else (207.0 if degraded else 230.0),
            "load_kw": 0.0 if failed else round(capacity * (0.35 + _jitter(eid, 0.3)), 2),
            "power_on": 0.0 if failed else 1.0,
        }
    if element.kind in (Kind.SWITCH, Kind.HOST, Kind.ENCLOSURE):
        if failed:  # powered off: no temperature to read
            return {"power_on": 0.0}
        return {
            "temperature_c": round(35.0 + _jitter(eid, 10) + (30.0 if degraded else 0.0), 1),
            "power_on": 1.0,
        }
    return {}
