"""Metrics through the Redfish driver: the numbers of the metrics resources each element
links to, read by those links, bounded, and none invented where a service has none."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.metrics import MetricsReader, from_resource
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


@pytest.mark.parametrize(
    "resource",
    [
        {"CurrentPeriod": "n/a"},
        {"PCIeErrors": [1]},
        {"NVMeSMART": "x"},
        {"CacheMetricsTotal": {"CurrentPeriod": 5}},
        {"CacheMetricsTotal": "n/a", "BandwidthPercent": 12},
    ],
)
def test_a_malformed_metrics_property_is_left_out(resource: dict[str, Any]) -> None:
    expected = {"utilisation_pct": 12.0} if "BandwidthPercent" in resource else {}
    assert from_resource(resource) == expected


def test_a_failed_metrics_read_keeps_the_status_readings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 500 on one metrics resource, a 400 on `$expand` and a malformed body on another:
    the elements lose those numbers, the poll its readings never (it once failed whole), and
    one warning counts the failures."""
    caplog.set_level(logging.WARNING, logger="fabric.drivers.redfish.metrics")
    with serve(write_world(tmp_path)) as (service, url):
        service.failing[f"{METRICS}/box-env"] = 500
        service.failing[f"{GPU0}?$expand"] = 400  # then read unexpanded, one by one
        service.resources[f"{METRICS}/port1"]["PCIeErrors"] = "n/a"
        readings = {r.external_id: r for r in driver_for(url).health()}
    assert readings[BOX].health == "ok" and readings[BOX].metrics == {}
    assert readings[GPU0].metrics["temperature_c"] == 58.0
    assert readings[PORT].metrics == {"link_width": 16.0, "link_width_max": 16.0}
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "2 metrics reads failed this poll" in warning and "(400)" in warning, warning


def test_metrics_reads_stop_after_failures_in_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service that stopped answering its metrics cannot hold a poll for `max_reads`
    failures (each maybe a timeout)."""
    monkeypatch.setattr(MetricsReader, "MAX_FAILURES", 2)
    with serve(write_world(tmp_path)) as (service, url):
        del service.resources[V1]["ProtocolFeaturesSupported"]  # one read per resource
        for name in ("box-env", "gpu0-env", "gpu0-processor", "port1"):
            service.failing[f"{METRICS}/{name}"] = 503
        readings = driver_for(url).health()
        asked = [p for m, p in service.log if p.startswith(METRICS)]
    assert len(asked) == 2 and readings
