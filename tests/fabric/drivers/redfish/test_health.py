"""Health over HTTP: each element's own `Status.Health`, never the rollup of its children,
and an Absent element (an empty slot) not reported at all."""

from __future__ import annotations

from tests.fabric.drivers.redfish.conftest import Served, driver_for

CHASSIS = "/redfish/v1/Chassis/ComposableModule3"
DRIVE = "/redfish/v1/CompositionService/ResourceBlocks/DriveBlock3/Drives/Block3Slot0"
EMPTY = "/redfish/v1/CompositionService/ResourceBlocks/DriveBlock4/Drives/Block4Slot1"


def test_health_is_the_elements_own_not_its_childrens_rollup(served: Served) -> None:
    with served("public-composability") as (service, url):
        service.resources[DRIVE]["Status"] = {"State": "Enabled", "Health": "Critical"}
        service.resources[CHASSIS]["Status"] = {
            "State": "Enabled",
            "Health": "OK",
            "HealthRollup": "Critical",
        }
        readings = {r.external_id: r for r in driver_for(url).health()}
        assert readings[DRIVE].health == "critical"
        assert readings[CHASSIS].health == "ok", "one bad drive does not fail its chassis"
        service.resources[CHASSIS]["Status"] = {"State": "Enabled", "HealthRollup": "OK"}
        inventory = driver_for(url, timeout_s=6).discover()
    (chassis,) = [e for e in inventory.enclosures if e.external_id == CHASSIS]
    assert chassis.health == "unknown", "no Health of its own: unknown, whatever the rollup"


def test_an_absent_element_is_not_reported(served: Served) -> None:
    with served("public-composability") as (service, url):
        service.resources[EMPTY]["Status"] = {"State": "Absent", "Health": "Critical"}
        driver = driver_for(url)
        devices = {d.external_id for d in driver.discover().devices}
        readings = {r.external_id: r.health for r in driver.health()}
    assert DRIVE in devices and EMPTY not in devices
    assert EMPTY not in readings and "critical" not in readings.values()
