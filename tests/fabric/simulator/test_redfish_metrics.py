"""The simulated world served as Redfish serves the simulator's own sensor model as standard
metrics resources: the Redfish driver reads the same numbers the simulated driver reports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fabric.drivers.base import HealthReading
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.models import SimulatedElement
from fabric.simulator.redfish import paths
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import simulated_manager

pytestmark = pytest.mark.django_db(transaction=True)

# Counters grow by one every 30 s after a fault: two reads a moment apart may straddle a step.
COUNTERS = frozenset({"correctable_errors", "link_errors"})


@pytest.fixture
def drivers() -> Iterator[tuple[SimulatedDriver, RedfishDriver]]:
    simulated_manager(name="sensed", fabric="sensed")
    with serve_world("sensed") as url:
        yield (
            SimulatedDriver(settings={"fabric": "sensed"}),
            RedfishDriver(endpoint=url, settings={"timeout_s": 5}, credentials=credentials()),
        )


def _simulated_id(reading: HealthReading) -> str:
    """The simulated element a Redfish reading stands for (a link: its two ports)."""
    if reading.target_kind == "link":
        ends = {paths.element_id(p) for p in reading.external_id.split("~")}
        return next(
            e.external_id
            for e in SimulatedElement.objects.filter(fabric__name="sensed", kind="link")
            if {e.data["a_port_id"], e.data["b_port_id"]} == ends
        )
    return paths.element_id(reading.external_id)


def _compare(simulated: SimulatedDriver, redfish: RedfishDriver) -> dict[str, dict[str, Any]]:
    """Every metric the Redfish driver read, beside the simulated driver's value of it."""
    expected = {(r.target_kind, r.external_id): r.metrics for r in simulated.health()}
    compared: dict[str, dict[str, Any]] = {}
    for reading in redfish.health():
        if reading.target_kind == "port" or not reading.metrics:
            continue  # a port's width is its link's, compared there
        key = (reading.target_kind, _simulated_id(reading))
        for name, value in reading.metrics.items():
            want = expected[key].get(name)
            assert want is not None, (key, name)
            slack = 1 if name in COUNTERS else 0
            assert abs(value - want) <= slack, (key, name, value, want)
        compared[f"{key[0]}:{key[1]}"] = dict(reading.metrics)
    return compared


def test_the_redfish_driver_reads_the_simulators_metrics(
    drivers: tuple[SimulatedDriver, RedfishDriver],
) -> None:
    simulated, redfish = drivers
    fabric = store.fabric_get("sensed")
    inventory = simulated.discover()
    gpus = [d for d in inventory.devices if d.kind == "gpu"]
    simulated.bind(device_id=gpus[1].external_id, host_id=inventory.hosts[0].external_id)
    store.element_fault_set(
        fabric=fabric, kind="device", external_id=gpus[0].external_id, action="degrade"
    )
    link = inventory.links[0]
    store.element_fault_set(
        fabric=fabric, kind="link", external_id=link.external_id, action="degrade"
    )

    compared = _compare(simulated, redfish)

    degraded = compared[f"device:{gpus[0].external_id}"]
    assert set(degraded) == {
        "temperature_c",
        "power_w",
        "utilisation_pct",
        "correctable_errors",
        "uncorrectable_errors",
    }
    assert degraded["temperature_c"] > 70 and degraded["correctable_errors"] >= 120
    assert compared[f"device:{gpus[1].external_id}"]["utilisation_pct"] >= 55  # bound: busy
    downtrained = compared[f"link:{link.external_id}"]
    assert downtrained["link_width"] == downtrained["link_width_max"] / 2
    assert downtrained["link_errors"] >= 14 and downtrained["link_retrains"] == 4
    assert any(k.startswith("device:") and "temperature_c" in v for k, v in compared.items())
    assert any(k.startswith("switch:") for k in compared)
    assert any(k.startswith("enclosure:") for k in compared)
    nvme = next(d for d in inventory.devices if d.kind == "nvme")
    assert set(compared[f"device:{nvme.external_id}"]) == {"temperature_c", "power_w"}


def test_a_failed_gpu_reads_powered_off_with_no_temperature(
    drivers: tuple[SimulatedDriver, RedfishDriver],
) -> None:
    simulated, redfish = drivers
    gpu = next(d for d in simulated.discover().devices if d.kind == "gpu")
    store.element_fault_set(
        fabric=store.fabric_get("sensed"), kind="device", external_id=gpu.external_id, action="fail"
    )
    metrics = _compare(simulated, redfish)[f"device:{gpu.external_id}"]
    assert "temperature_c" not in metrics
    assert metrics["power_w"] == 0 and metrics["utilisation_pct"] == 0


def test_a_device_bound_after_a_read_reads_busier(
    drivers: tuple[SimulatedDriver, RedfishDriver],
) -> None:
    """The metrics are read afresh after a bind (the elements' rendering is kept)."""
    simulated, redfish = drivers
    inventory = simulated.discover()
    gpu = next(d for d in inventory.devices if d.kind == "gpu").external_id
    idle = _compare(simulated, redfish)[f"device:{gpu}"]["utilisation_pct"]
    simulated.bind(device_id=gpu, host_id=inventory.hosts[0].external_id)
    busy = _compare(simulated, redfish)[f"device:{gpu}"]["utilisation_pct"]
    assert idle < 5 and busy >= 55
