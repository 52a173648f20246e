"""Metrics through the Redfish driver: the numbers of the metrics resources each element
links to, read by those links, bounded, and none invented where a service has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.metrics import from_resource
from tests.fabric.drivers.redfish.conftest import driver_for
from tests.support.redfish_server import serve
from tests.support.redfish_world import V1, write_world

GPU0 = f"{V1}/CompositionService/ResourceBlocks/GPU0/Processors/GPU0"
GPU1 = f"{V1}/CompositionService/ResourceBlocks/GPU1/Processors/GPU1"
BOX = f"{V1}/Chassis/GPUBox"
PORT = f"{V1}/Fabrics/CXL/Switches/SW1/Ports/P1"
METRICS = f"{V1}/Telemetry/m"


def test_health_readings_carry_the_metrics_the_service_links_to(tmp_path: Path) -> None:
    with serve(write_world(tmp_path)) as (service, url):
        readings = {r.external_id: r for r in driver_for(url).health()}
        read = [p for m, p in service.log if m == "GET" and p.startswith(METRICS)]
    assert readings[GPU0].metrics == {
        "temperature_c": 58.0,
        "power_w": 310.5,
        "utilisation_pct": 62.5,
        "correctable_errors": 3.0,
        "uncorrectable_errors": 0.0,
    }
    assert readings[BOX].metrics == {"temperature_c": 31.0}
    assert readings[PORT].metrics == {
        "link_errors": 6.0,
        "link_retrains": 2.0,
        "link_width": 16.0,
        "link_width_max": 16.0,
    }
    assert readings[GPU1].metrics == {}, "no metrics linked: none invented"
    (link,) = [r for r in readings.values() if r.target_kind == "link" and PORT in r.external_id]
    assert link.metrics["link_errors"] == 6.0, "a link reads what its ports' metrics say"
    # GPU 0 links to both of its resources and the service expands: one read for the two.
    assert sorted(read) == [f"{METRICS}/box-env", f"{METRICS}/port1"]


def test_without_expand_each_linked_resource_is_read_once(tmp_path: Path) -> None:
    with serve(write_world(tmp_path)) as (service, url):
        del service.resources[V1]["ProtocolFeaturesSupported"]
        readings = {r.external_id: r for r in driver_for(url).health()}
        read = [p for m, p in service.log if m == "GET" and p.startswith(METRICS)]
    assert readings[GPU0].metrics["temperature_c"] == 58.0
    assert sorted(read) == sorted(
        f"{METRICS}/{n}" for n in ("box-env", "gpu0-env", "gpu0-processor", "port1")
    )


def test_metrics_reads_stop_at_the_setting_and_a_gone_resource_is_no_failure(
    tmp_path: Path,
) -> None:
    with serve(write_world(tmp_path)) as (service, url):
        del service.resources[f"{METRICS}/box-env"]
        readings = {r.external_id: r for r in driver_for(url).health()}
        assert readings[BOX].metrics == {} and readings[GPU0].metrics
        service.log.clear()
        off = {r.external_id: r for r in driver_for(url, metrics_max_reads=0).health()}
        assert not [p for m, p in service.log if p.startswith(METRICS)]
    assert off[GPU0].metrics == {}
    assert off[PORT].metrics == {"link_width": 16.0, "link_width_max": 16.0}


def test_a_bad_metrics_setting_names_it(tmp_path: Path) -> None:
    with (
        serve(write_world(tmp_path)) as (_service, url),
        pytest.raises(DriverError, match="metrics_max_reads"),
    ):
        driver_for(url, metrics_max_reads="many").health()


def test_memory_and_drive_metrics_map_to_the_error_counts() -> None:
    memory = {"CurrentPeriod": {"CorrectableECCErrorCount": 7, "UncorrectableECCErrorCount": 1}}
    assert from_resource(memory) == {"correctable_errors": 7.0, "uncorrectable_errors": 1.0}
    drive = {
        "CorrectableIOReadErrorCount": 2,
        "CorrectableIOWriteErrorCount": 3,
        "NVMeSMART": {"CompositeTemperatureCelsius": 44},
    }
    assert from_resource(drive) == {"correctable_errors": 5.0, "temperature_c": 44.0}
    assert from_resource({"TemperatureCelsius": {"Reading": None}, "Status": {}}) == {}
