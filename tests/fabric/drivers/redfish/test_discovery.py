"""Discovery against DMTF's published mockups, served over HTTP: every device, switch,
port, endpoint and zone the mockup holds is found, with consistent references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.reader import expand_query
from tests.fabric.drivers.redfish.conftest import Served, driver_for, mockup

MOCKUPS = [
    "public-composability",
    "public-compose-action",
    "public-constrained-composition",
    "public-cxl",
    "public-cxl-multiswitch",
]
DEVICE_PROCESSORS = {"GPU", "Accelerator", "FPGA"}


def _resources(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(f.read_text()) for f in sorted(folder.rglob("index.json"))]


def _of_type(folder: Path, odata_type: str) -> set[str]:
    return {
        r["@odata.id"].rstrip("/")
        for r in _resources(folder)
        if str(r.get("@odata.type", "")).startswith(f"#{odata_type}.")
    }


def _linked(folder: Path) -> set[str]:
    """Every id some resource links to (a file nothing links to is not part of the service)."""
    found: set[str] = set()

    def visit(value: Any, top: bool) -> None:
        if isinstance(value, dict):
            if not top and value.get("@odata.id"):
                found.add(str(value["@odata.id"]).rstrip("/"))
            for item in value.values():
                visit(item, False)
        elif isinstance(value, list):
            for item in value:
                visit(item, False)

    for resource in _resources(folder):
        visit(resource, True)
    return found


def _pool_devices(folder: Path) -> set[str]:
    """What the service holds that is poolable, outside a system's own resources."""
    found = set()
    for r in _resources(folder):
        rid, kind = r.get("@odata.id", "").rstrip("/"), str(r.get("@odata.type", ""))
        if "/Systems/" in rid:
            continue
        if (
            (kind.startswith("#Processor.") and r.get("ProcessorType") in DEVICE_PROCESSORS)
            or (kind.startswith("#Drive.") and r.get("Protocol") == "NVMe")
            or kind.startswith("#MemoryDomain.")
        ):
            found.add(rid)
    return found & _linked(folder)


@pytest.mark.parametrize("name", MOCKUPS)
def test_discovery_finds_everything_the_mockup_holds(served: Served, name: str) -> None:
    folder = mockup(name)
    with served(name) as (_service, url):
        driver = driver_for(url)
        state = driver.survey()
    inventory = state.inventory
    assert list(inventory.dangling_references()) == []
    every = [i.external_id for kind in inventory.counts() for i in getattr(inventory, kind)]
    assert len(every) == len(set(every)), "external ids are unique across the inventory"
    assert max(len(i) for i in every) <= 200, "external ids fit the console's columns"
    assert state.snapshot.missing == [] or all("/Systems/" in m for m in state.snapshot.missing)

    assert {s.external_id for s in inventory.switches} == _of_type(folder, "Switch")
    switch_ports = {p for p in _of_type(folder, "Port") if "/Switches/" in p}
    assert switch_ports <= {p.external_id for p in inventory.ports}
    assert set(state.reach.endpoints) == _of_type(folder, "Endpoint")
    assert set(state.reach.zones) == _of_type(folder, "Zone")
    devices = {d.external_id for d in inventory.devices}
    assert _pool_devices(folder) <= devices
    assert {h.attributes["system"] for h in inventory.hosts} >= (
        {r.rstrip("/") for r in _members(folder, "Systems")}
    )


def _members(folder: Path, collection: str) -> list[str]:
    body = json.loads((folder / collection / "index.json").read_text())
    return [m["@odata.id"] for m in body.get("Members", [])]


def test_cxl_discovery_maps_fabric_links_reachability_and_partitionable_memory(
    served: Served,
) -> None:
    with served("public-cxl-multiswitch") as (_service, url):
        state = driver_for(url).survey()
    inventory = state.inventory
    switch_link = {(link.a_port_id, link.b_port_id) for link in inventory.links}
    assert (
        "/redfish/v1/Fabrics/CXL/Switches/CXL1/Ports/F1",
        "/redfish/v1/Fabrics/CXL/Switches/CXL2/Ports/F1",
    ) in switch_link
    assert all(link.latency_ns == 0 for link in inventory.links)
    assert all(link.attributes["latency_reported"] is False for link in inventory.links)
    memory = {d.external_id: d for d in inventory.devices if d.kind == "cxl_memory"}
    pooled = memory["/redfish/v1/Chassis/PooledCXLType3/MemoryDomains/1"]
    assert pooled.memory_gib == 256 and pooled.attributes["partitionable"] is True
    assert pooled.enclosure_id == "/redfish/v1/Chassis/PooledCXLType3"
    assert {r.external_id for r in inventory.racks} == {"/redfish/v1/Chassis/CXLRack"}
    # A system's rack: its chassis (Links.Chassis), contained by the rack chassis.
    assert {h.external_id: h.rack_id for h in inventory.hosts} == {
        f"/redfish/v1/Systems/{host}": "/redfish/v1/Chassis/CXLRack"
        for host in ("Host1", "Host2", "Host5")
    }
    gpu = next(
        d for d in inventory.devices if d.external_id.endswith("PooledCXLType2/Processors/GPU")
    )
    assert gpu.attributes["endpoints"] == ["/redfish/v1/Fabrics/CXL/Endpoints/T2"]
    assert gpu.attributes["zones"] == ["/redfish/v1/Fabrics/CXL/Zones/2"]
    assert gpu.attributes["reachable_from"] == ["/redfish/v1/Systems/Host2"]
    assert pooled.attributes["reachable_from"] == ["/redfish/v1/Systems/Host1"]


@pytest.mark.parametrize("expand", [True, False])
def test_expand_is_used_when_the_service_advertises_it(served: Served, expand: bool) -> None:
    with served("public-composability") as (service, url):
        if not expand:
            service.resources["/redfish/v1"]["ProtocolFeaturesSupported"].pop("ExpandQuery")
        state = driver_for(url).survey()
        expanded = [p for m, p in service.log if m == "GET"]
    assert state.snapshot.requests == len([p for p in expanded if p != "/redfish/v1"])
    with served("public-composability") as (_service, url):
        other = driver_for(url).survey()
    assert state.inventory == other.inventory
    if expand:
        assert state.snapshot.requests < 120
    else:
        assert state.snapshot.requests > other.snapshot.requests


def test_a_manager_may_turn_expand_off(served: Served) -> None:
    """use_expand false reads each member on its own, as for a service that does not
    advertise $expand, and finds the same inventory."""
    with served("public-composability") as (_service, url):
        expanded = driver_for(url).survey()
    with served("public-composability") as (_service, url):
        off = driver_for(url, use_expand=False).survey()
    with served("public-composability") as (service, url):
        service.resources["/redfish/v1"]["ProtocolFeaturesSupported"].pop("ExpandQuery")
        unadvertised = driver_for(url).survey()
    assert off.inventory == expanded.inventory
    assert off.snapshot.requests == unadvertised.snapshot.requests
    assert off.snapshot.requests > expanded.snapshot.requests


def test_use_expand_must_be_true_or_false() -> None:
    with pytest.raises(DriverError, match="use_expand must be true or false"):
        driver_for("http://127.0.0.1:9", use_expand="no")


def test_probe_names_the_service_its_counts_and_methods(served: Served) -> None:
    with served("public-cxl") as (_service, url):
        report = driver_for(url).probe()
        counts = driver_for(url).discover().counts()
    assert report.service == "Redfish 1.6.0, Contoso, WidgetDeluxe 8744"
    assert dict(report.counts) == counts
    assert report.composition_methods == ()
    assert any("no CompositionService" in n for n in report.notes)
    assert any("no link latency reported" in n for n in report.notes)
    with served("public-compose-action") as (_service, url):
        report = driver_for(url).probe()
    assert set(report.composition_methods) == {"expandable", "specific", "compose-action"}


def test_power_feeds_are_the_pdus_that_power_supplies_are_plugged_into(served: Served) -> None:
    """A chassis's PowerSubsystem names the PDU outlet of each supply (here by absolute URL,
    as a PDU served by its own Redfish service would be)."""
    with served("public-composability") as (service, url):
        add = service.resources.__setitem__
        root, chassis = "/redfish/v1", "/redfish/v1/Chassis/ComposableEnclosure"
        pdu, outlets = (
            f"{root}/PowerEquipment/RackPDUs/1",
            f"{root}/PowerEquipment/RackPDUs/1/Outlets",
        )
        service.resources[root]["PowerEquipment"] = {"@odata.id": f"{root}/PowerEquipment"}
        add(
            f"{root}/PowerEquipment",
            {
                "@odata.id": f"{root}/PowerEquipment",
                "RackPDUs": {"@odata.id": f"{root}/PowerEquipment/RackPDUs"},
            },
        )
        add(
            f"{root}/PowerEquipment/RackPDUs",
            {"@odata.id": f"{root}/PowerEquipment/RackPDUs", "Members": [{"@odata.id": pdu}]},
        )
        add(
            pdu,
            {
                "@odata.id": pdu,
                "Name": "PDU A",
                "PowerCapacityVA": 17300,
                "Status": {"State": "Enabled", "Health": "OK"},
                "Outlets": {"@odata.id": outlets},
            },
        )
        add(outlets, {"@odata.id": outlets, "Members": [{"@odata.id": f"{outlets}/A4"}]})
        service.resources[chassis]["PowerSubsystem"] = {"@odata.id": f"{chassis}/PowerSubsystem"}
        add(
            f"{chassis}/PowerSubsystem",
            {
                "@odata.id": f"{chassis}/PowerSubsystem",
                "PowerSupplies": {"@odata.id": f"{chassis}/PowerSubsystem/PowerSupplies"},
            },
        )
        supply = f"{chassis}/PowerSubsystem/PowerSupplies/Bay1"
        add(
            f"{chassis}/PowerSubsystem/PowerSupplies",
            {
                "Members": [{"@odata.id": supply}],
                "@odata.id": f"{chassis}/PowerSubsystem/PowerSupplies",
            },
        )
        add(
            supply,
            {
                "@odata.id": supply,
                "Links": {"Outlet": {"@odata.id": f"https://pdu.example.net{outlets}/A4"}},
            },
        )
        inventory = driver_for(url).discover()
    assert [(f.external_id, f.capacity_kw) for f in inventory.power_feeds] == [(pdu, 17.3)]
    enclosure = next(e for e in inventory.enclosures if e.external_id == chassis)
    assert enclosure.power_feed_id == pdu
    assert list(inventory.dangling_references()) == []


def test_the_expand_query_follows_what_the_root_advertises() -> None:
    def root(**expand: bool) -> dict[str, Any]:
        return {"ProtocolFeaturesSupported": {"ExpandQuery": expand}}

    assert expand_query(root(Levels=True, NoLinks=True, ExpandAll=True)) == ".($levels=1)"
    assert expand_query(root(Levels=True, ExpandAll=True)) == "*($levels=1)"
    assert expand_query(root(ExpandAll=True, NoLinks=True)) == ""
    assert expand_query({}) == ""
