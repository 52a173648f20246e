"""Driver calls are timed and their errors counted per manager and operation, and the driver
stays an instance of its own class."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from fabric.drivers.base import DriverError
from fabric.drivers.metrics import driver_instrument


class Flaky:
    """A driver whose bind fails as it is told to."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    def bind(self, *, device_id: str, host_id: str, size_gib: int | None = None) -> str:
        if self.error is not None:
            raise self.error
        return f"{device_id}->{host_id}"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (DriverError("busy", permanent=False), "transient"),
        (DriverError("no such device", permanent=True), "permanent"),
        (KeyError("bug"), "unexpected"),
    ],
)
def test_a_failed_call_is_timed_and_counted_by_kind(error: Exception, kind: str) -> None:
    labels = {"manager": "fm-metrics", "operation": "bind"}
    calls = sample("composer_driver_call_duration_seconds_count", **labels)
    errors = sample("composer_driver_call_errors_total", **labels, kind=kind)
    driver = driver_instrument(Flaky(error), manager="fm-metrics")
    with pytest.raises(type(error)):
        driver.bind(device_id="gpu-1", host_id="host-1")
    assert sample("composer_driver_call_duration_seconds_count", **labels) == calls + 1
    assert sample("composer_driver_call_errors_total", **labels, kind=kind) == errors + 1


def test_a_call_that_succeeds_is_timed_and_the_driver_keeps_its_class() -> None:
    labels = {"manager": "fm-ok", "operation": "bind"}
    calls = sample("composer_driver_call_duration_seconds_count", **labels)
    driver = driver_instrument(Flaky(None), manager="fm-ok")
    assert isinstance(driver, Flaky)
    assert driver.bind(device_id="gpu-1", host_id="host-1") == "gpu-1->host-1"
    assert sample("composer_driver_call_duration_seconds_count", **labels) == calls + 1
    assert sample("composer_driver_call_errors_total", **labels, kind="transient") == 0
