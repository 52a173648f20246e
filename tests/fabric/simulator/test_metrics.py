"""The simulated driver's health metrics: the named vocabulary, plausible and deterministic,
on the right side of the rules' thresholds when healthy, degraded and failed."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.drivers.base import HealthReading
from fabric.health.conditions import THRESHOLDS, Observation, conditions
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver

pytestmark = pytest.mark.django_db


def readings(driver: SimulatedDriver, kind: str) -> dict[str, HealthReading]:
    return {r.external_id: r for r in driver.health() if r.target_kind == kind}


def fault(external_id: str, kind: str, action: str) -> None:
    store.element_fault_set(
        fabric=store.fabric_get("sim"), kind=kind, external_id=external_id, action=action
    )


def test_healthy_readings_carry_the_named_metrics_inside_every_threshold(
    sim_driver: SimulatedDriver,
) -> None:
    everything = sim_driver.health()
    for reading in everything:
        m = reading.metrics
        if reading.target_kind in ("device", "switch", "host", "enclosure", "power_feed"):
            assert m["power_on"] == 1.0, reading.external_id
        if "temperature_c" in m:
            limit = THRESHOLDS.temperature_of(reading.target_kind).warning_c
            assert 30 < m["temperature_c"] < limit, reading.external_id
    gpu = readings(sim_driver, "device")["gpu-a-01-1"].metrics
    assert {"temperature_c", "power_w", "utilisation_pct", "correctable_errors"} <= set(gpu)
    assert gpu["correctable_errors"] < THRESHOLDS.correctable_errors
    assert gpu["uncorrectable_errors"] == 0.0
    memory = readings(sim_driver, "device")["mem-a-01-1"].metrics
    assert memory["poison_count"] == 0.0
    link = next(iter(readings(sim_driver, "link").values())).metrics
    assert (link["link_width"], link["link_width_max"]) == (16.0, 16.0)
    assert (link["link_speed_gts"], link["link_speed_max_gts"]) == (32.0, 32.0)
    assert link["link_errors"] < THRESHOLDS.link_errors and link["link_retrains"] == 0.0
    # Deterministic per element: the same numbers on the next call.
    assert [r.metrics for r in sim_driver.health()] == [r.metrics for r in everything]


def test_a_bound_device_is_busier(sim_driver: SimulatedDriver, sim_manager: Any) -> None:
    idle = readings(sim_driver, "device")["gpu-a-01-1"].metrics["utilisation_pct"]
    sim_driver.bind(device_id="gpu-a-01-1", host_id="host-a-01")
    busy = readings(sim_driver, "device")["gpu-a-01-1"].metrics["utilisation_pct"]
    assert idle < 5 < 55 <= busy


def test_degraded_elements_cross_the_warning_thresholds(sim_driver: SimulatedDriver) -> None:
    fault("gpu-a-01-1", "device", "degrade")
    link_id = next(iter(readings(sim_driver, "link")))
    fault(link_id, "link", "degrade")

    gpu = readings(sim_driver, "device")["gpu-a-01-1"]
    assert gpu.metrics["correctable_errors"] >= THRESHOLDS.correctable_errors
    link = readings(sim_driver, "link")[link_id]
    assert link.metrics["link_width"] == 8.0 and link.metrics["link_speed_gts"] == 16.0
    assert link.metrics["link_errors"] >= THRESHOLDS.link_errors
    found = conditions(
        Observation(
            target_type="link",
            health=link.health,
            link_width=link.metrics["link_width"],
            link_width_nominal=link.metrics["link_width_max"],
            link_errors=link.metrics["link_errors"],
        )
    )
    assert {c.rule for c in found} == {"link_downtrained", "link_errors"}


def test_failed_memory_is_powered_off_and_poisoned(sim_driver: SimulatedDriver) -> None:
    fault("mem-a-01-1", "device", "fail")
    memory = readings(sim_driver, "device")["mem-a-01-1"]
    assert memory.health == "critical"
    assert (memory.metrics["power_on"], memory.metrics["poison_count"]) == (0.0, 4.0)
    assert memory.metrics["uncorrectable_errors"] > 0
