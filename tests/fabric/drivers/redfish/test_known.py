"""The process's latest discovery of a manager (fabric.drivers.redfish.known): a later
driver binds from it without walking the service, until it is older than
`survey_max_age_s`; a stale one walks again where what it names has moved or vanished."""

from __future__ import annotations

import copy
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.driver import RedfishDriver
from tests.fabric.drivers.redfish.conftest import Served, driver_for
from tests.support.redfish_server import MockService

HOST = "/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock1"
ROOT = ("GET", "/redfish/v1")


def _free_devices(driver: RedfishDriver) -> list[str]:
    state = driver.survey()
    free = []
    for device in state.inventory.devices:
        block = state.index.device_block.get(device.external_id, "")
        holders = (state.index.blocks.get(block, {}).get("Links") or {}).get("ComputerSystems")
        if block and not holders and device.kind != "cxl_memory":
            free.append(device.external_id)
    assert free, "the mockup has no free device"
    return free


def _since(service: MockService, start: int) -> list[tuple[str, str]]:
    return [(m, p) for m, p in service.log[start:] if "Sessions" not in p]


def test_a_second_driver_binds_from_the_first_ones_discovery(served: Served) -> None:
    with served("public-composability") as (service, url):
        device = _free_devices(driver_for(url))[0]
        start = len(service.log)
        driver_for(url).bind(device_id=device, host_id=HOST)
        requests = _since(service, start)
        assert ROOT not in requests, "the second driver walked the service"
        assert len(requests) <= 4, requests  # the host's block, its system, the GPU's block, PATCH


def test_past_its_max_age_a_discovery_is_walked_again(served: Served) -> None:
    with served("public-composability") as (service, url):
        device = _free_devices(driver_for(url, survey_max_age_s=0.2))[0]
        time.sleep(0.3)
        start = len(service.log)
        driver_for(url, survey_max_age_s=0.2).bind(device_id=device, host_id=HOST)
        assert ROOT in _since(service, start)


def test_max_age_zero_walks_for_every_driver(served: Served) -> None:
    with served("public-composability") as (service, url):
        device = _free_devices(driver_for(url))[0]
        start = len(service.log)
        driver_for(url, survey_max_age_s=0).bind(device_id=device, host_id=HOST)
        assert ROOT in _since(service, start)


@pytest.mark.parametrize("value", [-1, "5", True])
def test_a_bad_max_age_is_refused_naming_the_setting(value: Any) -> None:
    with pytest.raises(DriverError) as caught:
        driver_for("http://127.0.0.1:9", survey_max_age_s=value)
    assert "survey_max_age_s" in caught.value.message and caught.value.permanent


def test_another_credential_or_endpoint_does_not_share_the_discovery(served: Served) -> None:
    with served("public-composability") as (service, url):
        first, second = _free_devices(driver_for(url))[:2]
        token = RedfishDriver(endpoint=url, credentials={"token": service.issue_token()})
        start = len(service.log)
        token.bind(device_id=first, host_id=HOST)
        assert ROOT in _since(service, start), "another credential used the discovery"

        other = driver_for(url.replace("127.0.0.1", "localhost"))
        start = len(service.log)
        other.bind(device_id=second, host_id=HOST)
        assert ROOT in _since(service, start), "another endpoint used the discovery"


def test_a_block_gone_since_the_discovery_is_walked_again_and_refused(served: Served) -> None:
    with served("public-composability") as (service, url):
        first = driver_for(url)
        device = _free_devices(first)[0]
        block = first.survey().index.device_block[device]
        with service.lock:
            service.remove_member(block)
        start = len(service.log)
        with pytest.raises(DriverError) as caught:
            driver_for(url).bind(device_id=device, host_id=HOST)
        requests = _since(service, start)
        assert caught.value.permanent is True
        assert caught.value.message == f"Unknown device {device!r}."
        assert requests.index(("GET", block)) < requests.index(ROOT), "404, then a walk"
        assert [r for r in requests if r[0] != "GET"] == [], "nothing was written"


def test_a_404_of_a_write_walks_again_and_retries_once(served: Served) -> None:
    with served("public-composability") as (service, url):
        device = _free_devices(driver_for(url))[0]
        service.fail_next("PATCH", 404)
        start = len(service.log)
        binding = driver_for(url).bind(device_id=device, host_id=HOST)
        requests = _since(service, start)
        assert [m for m, _ in requests if m == "PATCH"] == ["PATCH", "PATCH"]
        assert ROOT in requests
        assert binding in driver_for(url).bindings()


def test_a_409_is_refused_without_walking_again(served: Served) -> None:
    with served("public-composability") as (service, url):
        device = _free_devices(driver_for(url))[0]
        service.fail_next("PATCH", 409)
        start = len(service.log)
        with pytest.raises(DriverError) as caught:
            driver_for(url).bind(device_id=device, host_id=HOST)
        assert caught.value.permanent is True
        requests = _since(service, start)
        assert ROOT not in requests
        assert [m for m, _ in requests if m == "PATCH"] == ["PATCH"]


def test_binds_side_by_side_in_a_fresh_driver_walk_once(served: Served) -> None:
    with served("public-composability") as (service, url):
        devices = _free_devices(driver_for(url, survey_max_age_s=0))[:2]
        assert len(devices) == 2
        hosts = [HOST, "/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock2"]
        driver = driver_for(url, survey_max_age_s=0)
        start = len(service.log)
        with ThreadPoolExecutor(2) as pool:
            list(
                pool.map(
                    lambda pair: driver.bind(device_id=pair[0], host_id=pair[1]),
                    zip(devices, hosts, strict=True),
                )
            )
        assert _since(service, start).count(ROOT) == 1


def test_an_unbind_from_an_earlier_walk_finds_a_device_bound_since(served: Served) -> None:
    with served("public-composability") as (service, url):
        device = _free_devices(driver_for(url))[0]
        block = driver_for(url).survey().index.device_block[device]
        collection = "/redfish/v1/CompositionService/ResourceBlocks"
        members = service.resources[collection]["Members"]
        with service.lock:  # the block is listed again only after the next walk is kept
            members.remove({"@odata.id": block})
        assert device not in driver_for(url).survey().index.devices
        with service.lock:
            members.append({"@odata.id": block})
        # Another worker (another credential: another walk) binds the device since.
        other = RedfishDriver(endpoint=url, credentials={"token": service.issue_token()})
        binding = other.bind(device_id=device, host_id=HOST)

        driver_for(url).unbind(binding_id=binding.binding_id)
        assert binding not in other.bindings()


def test_bindings_from_an_earlier_walk_walk_again_for_what_it_predates(served: Served) -> None:
    """A server made since the kept walk, on a compute block the walk never saw, holding a
    device: answered from that walk its binding would be named after the system, not the
    host, and the reconciler would unbind a live device as an orphan. The reads name a
    block the walk predates, so the driver walks again and answers as a fresh one does."""
    with served("public-composability") as (service, url):
        first = driver_for(url)
        device = _free_devices(first)[0]
        state = first.survey()  # the walk the next driver recalls
        blocks = "/redfish/v1/CompositionService/ResourceBlocks"
        new_block, new_system = f"{blocks}/ComputeBlockSince", "/redfish/v1/Systems/Since"
        with service.lock:
            block = copy.deepcopy(service.resources[HOST])
            block.update({"@odata.id": new_block, "Id": "ComputeBlockSince"})
            service.resources[new_block] = block
            service.resources[blocks]["Members"].append({"@odata.id": new_block})
            system = copy.deepcopy(service.resources[state.index.host_system[HOST]])
            system.update({"@odata.id": new_system, "Id": "Since"})
            system["Links"]["ResourceBlocks"] = [
                {"@odata.id": new_block},
                {"@odata.id": state.index.device_block[device]},
            ]
            service.resources[new_system] = system
            service.resources["/redfish/v1/Systems"]["Members"].append({"@odata.id": new_system})
        start = len(service.log)
        recalled = driver_for(url).bindings()
        assert ROOT in _since(service, start), "the reads named a block the walk predates"
        fresh = driver_for(url, survey_max_age_s=0).bindings()
        assert sorted(b.binding_id for b in recalled) == sorted(b.binding_id for b in fresh)
        assert any(b.device_id == device and b.host_id == new_block for b in recalled)


def test_bindings_from_a_current_walk_do_not_walk(served: Served) -> None:
    with served("public-composability") as (service, url):
        driver_for(url).survey()
        start = len(service.log)
        driver_for(url).bindings()
        assert ROOT not in _since(service, start)
