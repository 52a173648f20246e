"""Placement of a request that names its devices: taken as named, or rejected naming one."""

from __future__ import annotations

from dataclasses import replace

from composer.placement.engine import place
from composer.placement.request import (
    DeviceItem,
    PinnedDevice,
    Placement,
    PlacementRequest,
    Rejection,
)
from tests.composer.placement.helpers import world


def pin(name: str, kind: str = "gpu", gib: int | None = None) -> PinnedDevice:
    return PinnedDevice(f"device:{name}", name, kind, gib)


def test_pinned_gpu_is_taken_on_the_host_that_reaches_it_best() -> None:
    plan = place(PlacementRequest(pinned=(pin("b1-2"),)), world())
    assert isinstance(plan, Placement)
    assert plan.host == "host:b"
    assert [p.device for p in plan.devices] == ["device:b1-2"]
    assert "Named devices taken as asked, on host hb: GPU b1-2." in plan.explanation[0].operator


def test_pinned_devices_and_items_share_the_host() -> None:
    request = PlacementRequest(
        items=(DeviceItem("gpu", 2),), pinned=(pin("a1-0"), pin("mem-1", "cxl_memory", 256))
    )
    plan = place(request, world())
    assert isinstance(plan, Placement)
    assert plan.host == "host:a"
    names = [p.device for p in plan.devices]
    assert names[0] == "device:a1-0" and len(names) == 3 and len(set(names)) == 3
    assert [(p.device, p.gib) for p in plan.memory] == [("device:mem-1", 256)]


def test_pinned_memory_without_gib_takes_all_its_free_gib() -> None:
    plan = place(PlacementRequest(pinned=(pin("mem-0", "cxl_memory"),)), world(memory=(300,)))
    assert isinstance(plan, Placement)
    assert [(p.device, p.gib) for p in plan.memory] == [("device:mem-0", 300)]


def test_pinned_memory_slice_larger_than_free_is_rejected_naming_it() -> None:
    outcome = place(
        PlacementRequest(pinned=(pin("mem-0", "cxl_memory", 600),)), world(memory=(512,))
    )
    assert isinstance(outcome, Rejection)
    assert outcome.message == "CXL memory mem-0 has 512 GiB free; 600 GiB asked."


def test_pinned_device_not_free_is_rejected_naming_it() -> None:
    snapshot = world().taking(devices=["device:a1-0"])
    outcome = place(PlacementRequest(pinned=(pin("a1-0"),)), snapshot)
    assert isinstance(outcome, Rejection)
    assert outcome.message == "GPU a1-0 is not free or not usable now."


def test_pinned_device_the_asked_host_cannot_reach_is_rejected_naming_both() -> None:
    snapshot = world(cut={"host:b": ("enclosure:a1",)})
    outcome = place(PlacementRequest(host="host:b", pinned=(pin("a1-0"),)), snapshot)
    assert isinstance(outcome, Rejection)
    assert outcome.message == "GPU a1-0 cannot reach host hb."


def test_pinned_device_over_the_latency_ceiling_is_rejected_with_its_latency() -> None:
    request = PlacementRequest(host="host:b", max_latency_ns=600, pinned=(pin("a1-0"),))
    outcome = place(request, world())
    assert isinstance(outcome, Rejection)
    assert outcome.code == "latency"
    assert outcome.message == "GPU a1-0 is 800 ns from host hb, over the 600 ns latency ceiling."


def test_pinned_devices_no_host_reaches_together_are_rejected() -> None:
    snapshot = world(cut={"host:a": ("enclosure:b1",), "host:b": ("enclosure:a1",)})
    outcome = place(PlacementRequest(pinned=(pin("a1-0"), pin("b1-0"))), snapshot)
    assert isinstance(outcome, Rejection)
    assert outcome.message == "No usable host reaches GPU a1-0, GPU b1-0 together."


def test_gib_on_a_whole_device_is_invalid() -> None:
    outcome = place(PlacementRequest(pinned=(pin("a1-0", gib=8),)), world())
    assert isinstance(outcome, Rejection)
    assert "bound whole" in outcome.message


def test_rest_of_request_that_does_not_fit_beside_the_pinned_is_rejected() -> None:
    request = PlacementRequest(
        host="host:a", items=(DeviceItem("gpu", 6),), max_latency_ns=600, pinned=(pin("a1-0"),)
    )
    outcome = place(request, world())
    assert isinstance(outcome, Rejection)
    assert outcome.funnel[1] == ("hosts: reach the named devices", 1, 1)


def test_pinned_host_without_the_cores_is_rejected() -> None:
    outcome = place(PlacementRequest(cores=100, pinned=(pin("a1-0"),)), world())
    assert isinstance(outcome, Rejection)
    assert outcome.message == "No host has the cores and memory asked for."


def test_slice_already_held_for_the_host_is_refused_there() -> None:
    snapshot = replace(world(), sliced={"host:a": frozenset({"device:mem-0"})})
    request = PlacementRequest(host="host:a", pinned=(pin("mem-0", "cxl_memory", 8),))
    outcome = place(request, snapshot)
    assert isinstance(outcome, Rejection)
    assert outcome.message == "Host ha already holds a slice of CXL memory mem-0."


def test_uplinks_too_busy_for_the_named_devices_are_refused_naming_no_other_host() -> None:
    snapshot = world(oversubscription=1.0)
    request = PlacementRequest(pinned=(pin("a1-0"), pin("a1-1")))
    outcome = place(request, snapshot)
    assert isinstance(outcome, Rejection)
    assert outcome.message == (
        "No host that reaches the devices named has the uplink bandwidth for them (126 GB/s)."
    )


def test_a_pinned_device_isolation_keeps_out_tells_the_tenant_nothing_of_others() -> None:
    holders = {"switch:1": frozenset({"globex"})}
    snapshot = replace(world(), holders=holders, switch_names={"switch:1": "leaf-1"})
    request = PlacementRequest(pinned=(pin("a1-0"),), critical=True, tenant="carol")
    outcome = place(request, snapshot)
    assert isinstance(outcome, Rejection) and outcome.code == "domain_conflict"
    assert outcome.message == "GPU a1-0 cannot be isolated as asked."
    operator, tenant = outcome.nearest.operator, outcome.nearest.text(operator=False)
    assert "another tenant holds devices behind switch leaf-1" in operator
    assert operator.startswith("GPU a1-0 is kept out: this request is critical")
    assert tenant == "Name another device or ask without critical."


def test_a_pinned_device_behind_another_tenants_critical_hold_names_no_one() -> None:
    snapshot = replace(world(), holders={"enclosure:a1": frozenset({"globex"})})
    snapshot = replace(snapshot, critical={"enclosure:a1": "globex"})
    outcome = place(PlacementRequest(pinned=(pin("a1-0"),), tenant="carol"), snapshot)
    assert isinstance(outcome, Rejection)
    assert outcome.message == "GPU a1-0 is not available to this request now."
    assert "tenant" not in outcome.message and "a1" not in outcome.nearest.text(operator=False)
    assert "another tenant holds enclosure a1 critically" in outcome.nearest.operator
