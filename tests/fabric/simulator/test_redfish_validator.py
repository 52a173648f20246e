"""DMTF's Redfish Service Validator passes the simulated world served as Redfish: every
resource from the service root down (CompositionService, Fabrics, Chassis and Systems
among them) against DMTF's published CSDL, with no failure and no warning.

The CSDL is read in place from `shared/data/redfish-csdl` beside the repository (or above
it, or $REDFISH_CSDL);
the test skips, naming that folder, where it is absent (CI has it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabric.drivers.redfish.driver import RedfishDriver
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import TINY, simulated_manager
from tests.support.shared_data import shared_data

CSDL = shared_data("redfish-csdl", env="REDFISH_CSDL")
COVERED = ("/redfish/v1/CompositionService", "/redfish/v1/Fabrics", "/redfish/v1/Chassis")

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def validated(tmp_path: Path) -> Iterator[Any]:
    """The validator's run over the whole service, with a GPU and a memory slice bound (so
    that composed systems, blocks, chunks and connections are validated too)."""
    if CSDL is None or not (CSDL / "ServiceRoot_v1.xml").is_file():
        pytest.skip(
            "DMTF's CSDL is not here: no shared/data/redfish-csdl beside the repository "
            "(or above it), nor $REDFISH_CSDL"
        )
    system_under_test = pytest.importorskip("redfish_service_validator.system_under_test")
    from redfish_service_validator import logger, metadata

    simulated_manager(name="validated", fabric="validated", spec=TINY)
    driver = SimulatedDriver(settings={"fabric": "validated"})
    inventory = driver.discover()
    gpu = next(d for d in inventory.devices if d.kind == "gpu")
    memory = next(d for d in inventory.devices if d.kind == "cxl_memory")
    driver.bind(device_id=gpu.external_id, host_id=inventory.hosts[0].external_id)
    driver.bind(device_id=memory.external_id, host_id=inventory.hosts[1].external_id, size_gib=64)
    account = credentials()
    with serve_world("validated", task_after_s=0) as url:
        # A bind over Redfish, answered as a task (every PATCH is one here): the Task too.
        redfish = RedfishDriver(endpoint=url, settings={"timeout_s": 5}, credentials=account)
        served = redfish.discover()
        redfish.bind(
            device_id=[d for d in served.devices if d.kind == "gpu"][-1].external_id,
            host_id=served.hosts[2].external_id,
        )
        # The validator logs through the logger it is given: its own, never the `redfish`
        # library's (`redfish.redfish_logger` would set that to INFO for the rest of the
        # run, and the driver keeps it at WARNING so that no session token is logged).
        report = logging.FileHandler(tmp_path / "validator.log")
        report.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        validator_log = logging.getLogger("tests.redfish_service_validator")
        validator_log.setLevel(logging.INFO)
        validator_log.addHandler(report)
        logger.logger = validator_log
        sut = system_under_test.SystemUnderTest(
            url,
            account["username"],
            account["password"],
            30,
            "Session",
            None,
            None,
            None,
            [],
            False,
        )
        metadata.parse_schema_files(str(CSDL))
        sut.validate(None, "/redfish/v1/", "/redfish/v1/")
        try:
            yield sut
        finally:
            sut.logout()
            validator_log.removeHandler(report)
            report.close()


def _results(sut: Any, outcome: str) -> list[str]:
    return [
        f"{uri} {prop or '(resource)'}: {result['Message']}"
        for uri, resource in sut._resources.items()
        for prop, result in resource["Results"].items()
        if result["Result"] == outcome
    ]


def test_the_service_validator_finds_no_failure(validated: Any) -> None:
    assert _results(validated, "FAIL") == [], "\n".join(_results(validated, "FAIL"))
    assert validated.fail_count == 0
    # Not even a warning (a deprecated property, say).
    assert _results(validated, "WARN") == [], "\n".join(_results(validated, "WARN"))
    validated_uris = set(validated._resources)
    for root in COVERED:
        assert root in validated_uris
    assert any(u.startswith("/redfish/v1/Systems/") for u in validated_uris)
    assert any("/MemoryChunks/" in u for u in validated_uris)
    assert any(u.startswith("/redfish/v1/Fabrics/CXL/Connections/") for u in validated_uris)
    assert "/redfish/v1/EventService" in validated_uris
    assert "/redfish/v1/TaskService/Tasks/1" in validated_uris
    for metrics in ("/ProcessorMetrics", "/EnvironmentMetrics", "/Ports/", "/Metrics"):
        assert any(metrics in u for u in validated_uris), metrics
    assert validated.pass_count > 0
