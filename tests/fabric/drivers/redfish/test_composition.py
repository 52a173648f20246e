"""Bind, unbind and bindings over HTTP, by each composition method a mockup advertises,
and CXL memory slices through memory chunks and connections."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from fabric.drivers.base import Binding, DriverError, Inventory
from fabric.drivers.redfish.compose import BlockComposer
from fabric.drivers.redfish.driver import RedfishDriver
from tests.fabric.drivers.redfish.conftest import Served, driver_for
from tests.support.redfish_server import MockService


def _free_device(driver: RedfishDriver, inventory: Inventory, kind: str | None = None) -> Any:
    """A device whose resource block no system holds."""
    state = driver.survey()
    for device in inventory.devices:
        block = state.index.device_block.get(device.external_id)
        holders = (state.index.blocks.get(block or "", {}).get("Links") or {}).get(
            "ComputerSystems"
        )
        if block and not holders and (kind is None or device.kind == kind):
            return device
    raise AssertionError("the mockup has no free device")


def _writes(service: MockService) -> list[tuple[str, str]]:
    return [(m, p) for m, p in service.log if m != "GET" and "Sessions" not in p]


def test_expandable_composition_patches_the_system_with_its_etag(served: Served) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url)
        inventory = driver.discover()
        gpu = _free_device(driver, inventory, "gpu")
        host = "/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock1"
        binding = driver.bind(device_id=gpu.external_id, host_id=host)
        assert _writes(service) == [("PATCH", "/redfish/v1/Systems/ComposedSystem")]
        assert binding == Binding(binding.binding_id, gpu.external_id, host)
        assert binding in driver.bindings()
        assert driver.bind(device_id=gpu.external_id, host_id=host) == binding
        assert len(_writes(service)) == 1, "binding again changes nothing"

        # A fresh driver (another worker) derives the same binding from the service.
        assert binding in driver_for(url).bindings()
        driver.unbind(binding_id=binding.binding_id)
        driver.unbind(binding_id=binding.binding_id)
        assert binding not in driver.bindings()


def test_a_device_bound_elsewhere_is_refused_permanently(served: Served) -> None:
    with served("public-composability") as (_service, url):
        driver = driver_for(url)
        inventory = driver.discover()
        gpu = _free_device(driver, inventory, "gpu")
        driver.bind(
            device_id=gpu.external_id,
            host_id="/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock1",
        )
        with pytest.raises(DriverError) as caught:
            driver.bind(
                device_id=gpu.external_id,
                host_id="/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock2",
            )
        assert caught.value.permanent is True
        assert "already bound" in caught.value.message


def test_specific_composition_posts_a_system_and_deletes_it_to_decompose(
    served: Served,
) -> None:
    with served("public-composability") as (service, url):
        # Free a compute block: the host that specific composition builds a system on.
        service.run("DELETE", "/redfish/v1/Systems/ComposedSystem2", {}, {})
        driver = driver_for(url, composition_method="specific")
        inventory = driver.discover()
        host = next(h for h in inventory.hosts if not h.attributes["system"])
        gpu = _free_device(driver, inventory, "gpu")
        binding = driver.bind(device_id=gpu.external_id, host_id=host.external_id)
        assert _writes(service)[-1] == ("POST", "/redfish/v1/Systems")
        assert binding in driver.bindings()
        assert driver.bind(device_id=gpu.external_id, host_id=host.external_id) == binding
        driver.unbind(binding_id=binding.binding_id)
        assert _writes(service)[-1][0] == "DELETE"
        assert binding not in driver.bindings()


def test_the_compose_action_previews_then_applies(served: Served) -> None:
    with served("public-compose-action") as (service, url):
        driver = driver_for(url, composition_method="compose-action")
        inventory = driver.discover()
        device = _free_device(driver, inventory)
        host = "/redfish/v1/CompositionService/ResourceBlocks/BladeServer-1"
        binding = driver.bind(device_id=device.external_id, host_id=host)
        action = "/redfish/v1/CompostionService/Actions/CompositionService.Compose"
        assert _writes(service) == [("POST", action), ("POST", action)]
        assert binding in driver.bindings()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("public-constrained-composition", "offers no way"),  # it composes by constraints
        ("public-cxl", "no CompositionService"),
    ],
)
def test_a_whole_device_the_service_cannot_compose_is_refused_in_words(
    served: Served, name: str, words: str
) -> None:
    with served(name) as (_service, url):
        driver = driver_for(url)
        inventory = driver.discover()
        device = next(d for d in inventory.devices if d.kind != "cxl_memory")
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=device.external_id, host_id=inventory.hosts[0].external_id)
    assert caught.value.permanent is True
    assert words in caught.value.message


def test_cxl_memory_slices_are_chunks_connected_to_the_host(served: Served) -> None:
    with served("public-cxl-multiswitch") as (service, url):
        driver = driver_for(url)
        inventory = driver.discover()
        domain = "/redfish/v1/Chassis/PooledCXLType3/MemoryDomains/1"
        host = "/redfish/v1/Systems/Host2"
        before = driver.bindings()
        binding = driver.bind(device_id=domain, host_id=host, size_gib=64)
        assert (binding.device_id, binding.host_id, binding.size_gib) == (domain, host, 64)
        assert binding in driver.bindings()
        assert driver.bind(device_id=domain, host_id=host, size_gib=64) == binding
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=domain, host_id="/redfish/v1/Systems/Host5", size_gib=250)
        assert caught.value.permanent is True and "GiB free" in caught.value.message
        gpu = next(d for d in inventory.devices if d.kind == "gpu")
        with pytest.raises(DriverError) as caught:
            driver.bind(device_id=gpu.external_id, host_id=host, size_gib=8)
        assert caught.value.permanent is True and "not partitionable" in caught.value.message
        driver.unbind(binding_id=binding.binding_id)
        assert driver.bindings() == before
        chunks = service.resources[f"{domain}/MemoryChunks"]["Members"]
        assert len(chunks) == 1, "the chunk made for the slice is gone with it"


def test_concurrent_binds_of_one_device_from_one_driver_bind_it_once(served: Served) -> None:
    with served("public-composability") as (_service, url):
        driver = driver_for(url)
        inventory = driver.discover()
        gpu = _free_device(driver, inventory, "gpu").external_id
        hosts = [h.external_id for h in inventory.hosts]
        barrier = threading.Barrier(len(hosts))
        outcomes: list[Any] = [None] * len(hosts)

        def attempt(i: int) -> None:
            barrier.wait(timeout=10)
            try:
                outcomes[i] = driver.bind(device_id=gpu, host_id=hosts[i])
            except DriverError as exc:
                outcomes[i] = exc

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(hosts))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        bound = [b for b in driver.bindings() if b.device_id == gpu]
    assert len(bound) == 1
    assert [o for o in outcomes if isinstance(o, Binding)] == bound
    assert all(o.permanent for o in outcomes if isinstance(o, DriverError)), outcomes


def test_concurrent_binds_to_one_host_from_one_driver_all_bind(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compose job binds a composition's devices side by side on one instance: binds to
    one expandable system must not each PATCH the system as they read it (the later PATCH
    would be refused, 412). The barrier holds every PATCH until all binds have reached
    theirs, or for a moment when they come one at a time."""
    with served("public-composability") as (_service, url):
        driver = driver_for(url)
        inventory = driver.discover()
        state = driver.survey()
        free = [
            d.external_id
            for d in inventory.devices
            if (block := state.index.device_block.get(d.external_id))
            and not (state.index.blocks[block].get("Links") or {}).get("ComputerSystems")
        ][:2]
        assert len(free) == 2, "the mockup has two free devices"
        host = "/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock1"
        barrier = threading.Barrier(len(free))
        patch = BlockComposer.patch_blocks

        def held(self: BlockComposer, *args: Any) -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=1)
            patch(self, *args)

        monkeypatch.setattr(BlockComposer, "patch_blocks", held)
        with ThreadPoolExecutor(max_workers=len(free)) as pool:
            outcomes = list(
                pool.map(lambda d: _outcome(lambda: driver.bind(device_id=d, host_id=host)), free)
            )
        bound = {b.device_id for b in driver.bindings() if b.host_id == host}
    assert [o for o in outcomes if not isinstance(o, Binding)] == []
    assert set(free) <= bound


def _outcome(call: Any) -> Any:
    try:
        return call()
    except DriverError as exc:
        return exc


def test_health_reads_each_element_status(served: Served) -> None:
    with served("public-composability") as (service, url):
        driver = driver_for(url)
        gpu = _free_device(driver, driver.discover(), "gpu").external_id
        service.resources[gpu]["Status"] = {"State": "Enabled", "Health": "Critical"}
        readings = {(r.target_kind, r.external_id): r for r in driver.health()}
    reading = readings[("device", gpu)]
    assert (reading.health, reading.state) == ("critical", "enabled")
    assert "critical" in reading.detail
    assert (
        readings[("host", "/redfish/v1/CompositionService/ResourceBlocks/ComputeBlock1")].health
        == "ok"
    )


def test_a_system_composed_since_the_walk_is_expandable_by_what_it_says_of_itself() -> None:
    """A kept walk knows only the systems of its time: a system composed since (by the
    specific method, in an earlier job) says itself whether it may grow, and the bind or
    unbind believes the system as just read rather than refusing it permanently."""
    from fabric.drivers.redfish.methods import Methods

    methods = Methods(enabled=True, expandable_systems=frozenset({"/redfish/v1/Systems/1"}))
    since = {"Composition": {"UseCases": ["ExpandableSystem"]}}
    assert methods.expandable("/redfish/v1/Systems/1")
    assert not methods.expandable("/redfish/v1/Systems/since")
    assert methods.expandable("/redfish/v1/Systems/since", since)
    assert not methods.expandable("/redfish/v1/Systems/since", {"Composition": {}})
    assert not Methods(enabled=False).expandable("/redfish/v1/Systems/since", since)
