"""DMTF's Redfish Service Validator passes the simulated world served as Redfish: every
resource from the service root down (CompositionService, Fabrics, Chassis and Systems
among them) against DMTF's published CSDL, with no failure and no warning.

The CSDL is read in place from `shared/data/redfish-csdl` beside the repository (or above
it, or $REDFISH_CSDL);
the test skips, naming that folder, where it is absent (CI has it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabric.drivers.redfish.driver import RedfishDriver
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import TINY, simulated_manager
from tests.support.redfish_conformance import findings, require_csdl, service_validated

COVERED = ("/redfish/v1/CompositionService", "/redfish/v1/Fabrics", "/redfish/v1/Chassis")

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def validated(tmp_path: Path) -> Iterator[Any]:
    """The validator's run over the whole service, with a GPU and a memory slice bound (so
    that composed systems, blocks, chunks and connections are validated too)."""
    require_csdl()
    pytest.importorskip("redfish_service_validator.system_under_test")
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
        log = tmp_path / "validator.log"
        with service_validated(url, account["username"], account["password"], log) as sut:
            yield sut


def test_the_service_validator_finds_no_failure(validated: Any) -> None:
    assert findings(validated, "FAIL") == [], "\n".join(findings(validated, "FAIL"))
    assert validated.fail_count == 0
    # Not even a warning (a deprecated property, say).
    assert findings(validated, "WARN") == [], "\n".join(findings(validated, "WARN"))
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
