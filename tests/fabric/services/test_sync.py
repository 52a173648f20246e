"""Inventory sync: the console's tables follow what the fabric manager reports."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabric.choices import ChangeAction, ComponentState, DeviceState, Health, LinkState
from fabric.drivers.base import DriverError
from fabric.models import (
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Pool,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.simulator.builder import WorldSpec
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.models import SimulatedElement
from tests.fabric.simulated_world import TINY, simulated_manager

MODELS = (Rack, PowerFeed, Switch, Host, Enclosure, Device, Port, Link)


def _element(external_id: str) -> SimulatedElement:
    return SimulatedElement.objects.get(fabric__name="sim", external_id=external_id)


def _records(**filters: Any) -> list[ChangeRecord]:
    return list(ChangeRecord.objects.filter(**filters).order_by("id"))


def test_first_sync_adds_everything_the_manager_reports(
    sim_manager: FabricManager, sim_driver: SimulatedDriver
) -> None:
    inventory = sim_driver.discover()
    result = inventory_sync(manager=sim_manager)

    counts = inventory.counts()
    for model, key in zip(MODELS, counts, strict=True):
        assert model._default_manager.filter(manager=sim_manager).count() == counts[key], key
        assert result.kinds[key].added == counts[key]
    device = Device.objects.select_related("enclosure__rack", "enclosure__power_feed").get(
        external_id="gpu-a-01-1"
    )
    assert device.kind == "gpu" and device.state == DeviceState.FREE and device.health == Health.OK
    assert device.enclosure.name == "gpu-a-01"
    assert device.enclosure.rack.name == "rack-a"
    assert device.first_seen_at and device.last_seen_at
    link = Link.objects.select_related("a_port__switch", "b_port__host").get(
        external_id="cxl-leaf-a/p03~host-a-01/p0"
    )
    assert link.a_port.switch.name == "cxl-leaf-a" and link.b_port.host.name == "host-a-01"
    assert 100 <= link.latency_ns <= 150 and link.bandwidth_gbps == 63.0

    added = _records(target_type="device", action=ChangeAction.ADDED)
    assert len(added) == counts["devices"]
    assert added[0].source == "inventory sync"
    sim_manager.refresh_from_db()
    assert sim_manager.last_synced_at is not None and sim_manager.last_sync_error == ""
    assert _records(target_type="fabric_manager", action=ChangeAction.SYNCED)


def test_a_second_sync_that_finds_nothing_new_writes_no_change_records(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    before = ChangeRecord.objects.count()
    result = inventory_sync(manager=sim_manager)
    assert result.total_changes == 0
    assert ChangeRecord.objects.count() == before


def test_a_changed_field_is_updated_and_its_before_and_after_recorded(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    element = _element("gpu-a-01-1")
    element.data = {**element.data, "firmware": "96.00.AA.00.01"}
    element.save()

    result = inventory_sync(manager=sim_manager, source="sync job 7")

    device = Device.objects.get(external_id="gpu-a-01-1")
    assert device.firmware == "96.00.AA.00.01"
    assert result.kinds["devices"].changed == 1
    [record] = _records(target_id=device.pk, target_type="device", action=ChangeAction.CHANGED)
    assert record.changes == {"firmware": ["96.00.99.00.01", "96.00.AA.00.01"]}
    assert record.source == "sync job 7"


def test_a_failed_enclosure_fails_its_devices_and_recovery_frees_them(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    fabric = store.fabric_get("sim")
    store.element_fault_set(fabric=fabric, kind="enclosure", external_id="gpu-a-01", action="fail")
    inventory_sync(manager=sim_manager)

    devices = Device.objects.filter(enclosure__name="gpu-a-01")
    assert {(d.state, d.health) for d in devices} == {(DeviceState.FAILED, Health.CRITICAL)}
    assert Enclosure.objects.get(name="gpu-a-01").health == Health.CRITICAL
    assert Device.objects.get(external_id="gpu-a-02-1").state == DeviceState.FREE
    record = _records(target_type="device", target_id=devices[0].pk, action=ChangeAction.CHANGED)[
        -1
    ]
    assert record.changes["state"] == [DeviceState.FREE, DeviceState.FAILED]
    assert record.changes["health"] == [Health.OK, Health.CRITICAL]

    store.element_fault_set(
        fabric=fabric, kind="enclosure", external_id="gpu-a-01", action="recover"
    )
    inventory_sync(manager=sim_manager)
    assert {d.state for d in devices.all()} == {DeviceState.FREE}


def test_a_failed_power_feed_and_a_failed_switch_show_in_links_and_components(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    fabric = store.fabric_get("sim")
    store.element_fault_set(fabric=fabric, kind="power_feed", external_id="pdu-a-1", action="fail")
    store.element_fault_set(fabric=fabric, kind="switch", external_id="cxl-spine-2", action="fail")
    inventory_sync(manager=sim_manager)

    assert PowerFeed.objects.get(name="pdu-a-1").health == Health.CRITICAL
    on_feed = Host.objects.filter(power_feed__name="pdu-a-1")
    assert on_feed and {h.health for h in on_feed} == {Health.CRITICAL}
    assert {h.health for h in Host.objects.filter(power_feed__name="pdu-a-2")} == {Health.OK}
    spine_links = Link.objects.filter(a_port__switch__name="cxl-spine-2")
    assert spine_links and {link.state for link in spine_links} == {LinkState.DOWN}


def test_rows_the_manager_stops_reporting_are_marked_absent_never_deleted(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    counts = {model: model.objects.count() for model in MODELS}
    gone = ["gpu-a-02-2", "host-a-03", "host-a-03/p0", "cxl-leaf-a/p05~host-a-03/p0", "rack-a"]
    SimulatedElement.objects.filter(external_id__in=gone).update(is_present=False)

    result = inventory_sync(manager=sim_manager)

    assert {model: model.objects.count() for model in MODELS} == counts
    device = Device.objects.get(external_id="gpu-a-02-2")
    assert (device.state, device.health) == (DeviceState.ABSENT, Health.UNKNOWN)
    assert Host.objects.get(external_id="host-a-03").state == ComponentState.ABSENT
    assert Port.objects.get(external_id="host-a-03/p0").is_present is False
    link = Link.objects.get(external_id="cxl-leaf-a/p05~host-a-03/p0")
    assert (link.is_present, link.state) == (False, LinkState.DOWN)
    assert Rack.objects.get(external_id="rack-a").is_present is False
    assert result.kinds["devices"].vanished == 1
    vanished = _records(target_type="device", target_id=device.pk)
    assert [r.action for r in vanished] == [ChangeAction.ADDED, ChangeAction.VANISHED]
    assert vanished[-1].changes["state"] == [DeviceState.FREE, DeviceState.ABSENT]

    # Vanishing is recorded once, not at every sync.
    assert inventory_sync(manager=sim_manager).total_changes == 0


def test_rows_that_come_back_are_returned(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    SimulatedElement.objects.filter(external_id__in=["gpu-a-02-2", "host-a-03"]).update(
        is_present=False
    )
    inventory_sync(manager=sim_manager)
    SimulatedElement.objects.filter(external_id__in=["gpu-a-02-2", "host-a-03"]).update(
        is_present=True
    )

    result = inventory_sync(manager=sim_manager)

    device = Device.objects.get(external_id="gpu-a-02-2")
    assert (device.state, device.health) == (DeviceState.FREE, Health.OK)
    assert Host.objects.get(external_id="host-a-03").state == ComponentState.ACTIVE
    assert result.kinds["devices"].returned == 1 and result.kinds["hosts"].returned == 1
    actions = [r.action for r in _records(target_type="device", target_id=device.pk)]
    assert actions == [ChangeAction.ADDED, ChangeAction.VANISHED, ChangeAction.RETURNED]


def test_a_device_bound_by_the_manager_is_bound_to_its_host(
    sim_manager: FabricManager, sim_driver: SimulatedDriver
) -> None:
    inventory_sync(manager=sim_manager)
    binding = sim_driver.bind(device_id="gpu-a-01-2", host_id="host-a-02")
    inventory_sync(manager=sim_manager)

    device = Device.objects.select_related("bound_host").get(external_id="gpu-a-01-2")
    assert device.state == DeviceState.BOUND and device.bound_host.name == "host-a-02"
    [record] = _records(target_type="device", target_id=device.pk, action=ChangeAction.CHANGED)
    assert record.changes["bound_host"] == [None, "host-a-02"]

    sim_driver.unbind(binding_id=binding.binding_id)
    inventory_sync(manager=sim_manager)
    device.refresh_from_db()
    assert (device.state, device.bound_host_id) == (DeviceState.FREE, None)


def test_memory_slices_show_how_much_of_a_device_is_bound(
    sim_manager: FabricManager, sim_driver: SimulatedDriver
) -> None:
    sim_driver.bind(device_id="mem-a-01-1", host_id="host-a-01", size_gib=256)
    sim_driver.bind(device_id="mem-a-01-1", host_id="host-a-02", size_gib=128)
    inventory_sync(manager=sim_manager)
    memory = Device.objects.get(external_id="mem-a-01-1")
    assert memory.state == DeviceState.BOUND  # bound to two hosts, a slice each
    assert memory.is_usable  # shared: a slice may still be placed on it
    assert memory.attributes["bound_gib"] == 384
    assert {s["host"] for s in memory.attributes["slices"]} == {"host-a-01", "host-a-02"}


def test_maintenance_is_always_kept_and_reserved_unless_the_device_fails(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    Device.objects.filter(external_id="gpu-a-01-1").update(state=DeviceState.MAINTENANCE)
    Device.objects.filter(external_id="gpu-a-01-2").update(state=DeviceState.RESERVED)
    Switch.objects.filter(name="cxl-spine-1").update(state=ComponentState.MAINTENANCE)
    inventory_sync(manager=sim_manager)
    states = dict(Device.objects.values_list("external_id", "state"))
    assert states["gpu-a-01-1"] == DeviceState.MAINTENANCE
    assert states["gpu-a-01-2"] == DeviceState.RESERVED
    assert Switch.objects.get(name="cxl-spine-1").state == ComponentState.MAINTENANCE

    store.element_fault_set(
        fabric=store.fabric_get("sim"), kind="enclosure", external_id="gpu-a-01", action="fail"
    )
    inventory_sync(manager=sim_manager)
    states = dict(Device.objects.values_list("external_id", "state"))
    # The operator's maintenance outlives the failure (and the recovery): only the
    # operator ends it. The composer's reservation does not.
    assert states["gpu-a-01-1"] == DeviceState.MAINTENANCE
    assert Device.objects.get(external_id="gpu-a-01-1").health == Health.CRITICAL
    assert states["gpu-a-01-2"] == DeviceState.FAILED
    store.element_fault_set(
        fabric=store.fabric_get("sim"), kind="enclosure", external_id="gpu-a-01", action="recover"
    )
    inventory_sync(manager=sim_manager)
    states = dict(Device.objects.values_list("external_id", "state"))
    assert states["gpu-a-01-1"] == DeviceState.MAINTENANCE
    assert states["gpu-a-01-2"] == DeviceState.FREE


def test_devices_go_to_the_most_specific_matching_pool(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    rack = Rack.objects.get(name="rack-a")
    any_gpu = Pool.objects.create(name="All GPUs", slug="all-gpus", kind="gpu")
    h100_a = Pool.objects.create(
        name="H100 GPUs, rack A", slug="h100-a", kind="gpu", model="H100 PCIe 80GB", rack=rack
    )
    inventory_sync(manager=sim_manager)

    pools = dict(Device.objects.filter(kind="gpu").values_list("external_id", "pool_id"))
    assert pools["gpu-a-01-1"] == pools["gpu-a-01-2"] == h100_a.pk
    assert pools["gpu-a-02-1"] == any_gpu.pk  # L40S: only the catch-all matches
    assert Device.objects.filter(kind="nvme", pool__isnull=False).count() == 0


def test_a_manager_that_cannot_be_read_records_the_error_and_writes_nothing(
    sim_manager: FabricManager,
) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="discover", mode="permanent"
    )
    with pytest.raises(DriverError):
        inventory_sync(manager=sim_manager)
    sim_manager.refresh_from_db()
    assert "refused" in sim_manager.last_sync_error
    assert Device.objects.count() == 0 and ChangeRecord.objects.count() == 0


def test_where_each_box_sits_in_its_rack_is_kept_and_a_move_recorded(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    assert Rack.objects.get(name="rack-a").height_u == 52
    host = Host.objects.get(external_id="host-a-01")
    assert (host.rack_unit, host.height_u) == (14, 2)  # above the boxes stacked below
    switch = Switch.objects.get(external_id="cxl-leaf-a")
    assert (switch.rack_unit, switch.height_u) == (50, 1)  # under the two spines
    element = _element("host-a-01")
    element.data = {**element.data, "rack_unit": 40}
    element.save()
    inventory_sync(manager=sim_manager)
    host.refresh_from_db()
    assert host.rack_unit == 40
    [record] = _records(target_id=host.pk, target_type="host", action=ChangeAction.CHANGED)
    assert record.changes["rack_unit"][1] == 40


def test_a_unit_outside_a_rack_or_out_of_range_is_not_kept(
    sim_manager: FabricManager,
) -> None:
    element = _element("host-a-01")
    element.data = {**element.data, "rack_id": None, "rack_unit": 7, "height_u": 0}
    element.save()
    box = _element("gpu-a-01")
    box.data = {**box.data, "rack_unit": 10**6, "height_u": -3}
    box.save()
    result = inventory_sync(manager=sim_manager)
    assert result.warnings == []
    host = Host.objects.get(external_id="host-a-01")
    assert (host.rack_id, host.rack_unit, host.height_u) == (None, None, 1)
    enclosure = Enclosure.objects.get(external_id="gpu-a-01")
    assert (enclosure.rack_unit, enclosure.height_u) == (32767, 1)


def test_references_to_unknown_elements_are_skipped_with_a_warning(
    sim_manager: FabricManager,
) -> None:
    element = _element("cxl-leaf-a/p03~host-a-01/p0")
    element.data = {**element.data, "b_port_id": "nowhere/p0"}
    element.save()
    result = inventory_sync(manager=sim_manager)
    assert not Link.objects.filter(external_id="cxl-leaf-a/p03~host-a-01/p0").exists()
    assert any("nowhere/p0" in w for w in result.warnings)


def test_progress_is_reported_step_by_step(sim_manager: FabricManager) -> None:
    calls: list[tuple[int, int, str]] = []
    inventory_sync(manager=sim_manager, on_progress=lambda d, t, m: calls.append((d, t, m)))
    assert [c[0] for c in calls] == list(range(1, calls[0][1] + 1))
    assert calls[-1][0] == calls[-1][1]


def _queries_for(manager: FabricManager, change: Any) -> list[int]:
    """Queries of a first sync, a sync after `change`, and a sync that finds nothing."""
    counts = []
    for step in (None, change, None):
        if step is not None:
            step()
        with CaptureQueriesContext(connection) as queries:
            inventory_sync(manager=manager)
        counts.append(len(queries))
    return counts


def test_the_number_of_queries_does_not_grow_with_the_number_of_devices(db: None) -> None:
    def spec(gpus: int) -> WorldSpec:
        # Sizes stay under one insert batch (SQLite allows 999 parameters per statement).
        return WorldSpec(
            racks=1,
            hosts=1,
            gpu_enclosures=1,
            gpus_per_enclosure=gpus,
            memory_boxes=0,
            jbofs=0,
            nics=0,
            ports_per_switch=4,
        )

    def fail_enclosure(fabric: str) -> Any:
        return lambda: store.element_fault_set(
            fabric=store.fabric_get(fabric), kind="enclosure", external_id="gpu-a-01", action="fail"
        )

    small = simulated_manager(name="small", fabric="small", spec=spec(2))
    large = simulated_manager(name="large", fabric="large", spec=spec(40))
    assert _queries_for(small, fail_enclosure("small")) == _queries_for(
        large, fail_enclosure("large")
    )
    assert Device.objects.filter(manager=large, state=DeviceState.FAILED).count() == 40


def test_the_tiny_world_is_what_the_tests_assume(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    assert (
        Device.objects.filter(kind="gpu").count() == TINY.gpu_enclosures * TINY.gpus_per_enclosure
    )
    assert set(Switch.objects.values_list("name", flat=True)) == {
        "cxl-leaf-a",
        "cxl-spine-1",
        "cxl-spine-2",
    }


def test_a_reservation_made_while_the_sync_runs_is_not_overwritten(
    sim_manager: FabricManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fabric.services.sync import diff

    inventory_sync(manager=sim_manager)
    store.element_fault_set(
        fabric=store.fabric_get("sim"), kind="device", external_id="gpu-a-01-1", action="degrade"
    )
    original = diff.locked_rows

    def composer_reserves_first(model: Any, pks: list[int]) -> Any:
        # Between the sync's read and its write, the composer claims the device.
        Device.objects.filter(external_id="gpu-a-01-1", state=DeviceState.FREE).update(
            state=DeviceState.RESERVED
        )
        return original(model, pks)

    monkeypatch.setattr(diff, "locked_rows", composer_reserves_first)
    inventory_sync(manager=sim_manager)

    device = Device.objects.get(external_id="gpu-a-01-1")
    assert (device.state, device.health) == (DeviceState.RESERVED, Health.WARNING)
