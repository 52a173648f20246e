"""The Redfish read model of composition: the CompositionService, resource blocks and
their CompositionStatus, zones from reachability, composed systems, the Systems
capabilities, Chassis and Fabrics; who sees what, and how many queries each costs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import AllocationState, CompositionState, JobKind
from composer.models import Allocation, Composition, Job, Quota
from composer.redfish.blocks import device_of_block, host_of_block
from composer.redfish.caller import Caller
from fabric.choices import DeviceState, Health
from fabric.redfish_render.errors import RedfishError
from tests.factories.fabric import DeviceFactory, SmallFabric

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"
BLOCKS = f"{V1}/CompositionService/ResourceBlocks"


def _compose(
    tenant: Any,
    small: SmallFabric,
    *,
    name: str = "train",
    gpus: int = 2,
    gib: int = 0,
    state: str = CompositionState.READY,
    host: int = 0,
) -> Composition:
    """A composition of `tenant` on host `host` holding the first free GPUs behind it."""
    composition = Composition.objects.create(
        tenant=tenant, name=name, state=state, host=small.hosts[host], spec={"cores": 8}
    )
    free = [g for g in small.gpus if g.enclosure_id == small.enclosures[host].pk]
    free = [g for g in free if not Allocation.objects.filter(device=g).exists()][:gpus]
    for gpu in free:
        Allocation.objects.create(composition=composition, device=gpu, state=AllocationState.BOUND)
        gpu.state = DeviceState.BOUND
        gpu.save(update_fields=["state"])
    if gib:
        Allocation.objects.create(
            composition=composition, device=small.memory[0], gib=gib, state=AllocationState.BOUND
        )
        small.memory[0].allocated_gib += gib
        small.memory[0].state = DeviceState.BOUND
        small.memory[0].save(update_fields=["allocated_gib", "state"])
    return composition


def _members(answer: Any) -> list[str]:
    assert answer.status_code == 200, answer.content
    return [m["@odata.id"] for m in answer.json()["Members"]]


def test_the_composition_service_links_its_blocks_zones_and_compose_action(
    redfish_as: Any, alice: Any
) -> None:
    body = redfish_as(alice).get(f"{V1}/CompositionService").json()
    assert body["ServiceEnabled"] is True
    assert body["ResourceBlocks"]["@odata.id"] == BLOCKS
    assert body["ResourceZones"]["@odata.id"] == f"{V1}/CompositionService/ResourceZones"
    assert "#CompositionService.Compose" in body["Actions"]


def test_blocks_say_their_composition_state(
    redfish_as: Any, admin_user: Any, acme: Any, small: SmallFabric
) -> None:
    composition = _compose(acme, small, gpus=1, gib=256)
    small.gpus[1].state = DeviceState.FAILED
    small.gpus[1].save(update_fields=["state"])
    small.gpus[2].state = DeviceState.MAINTENANCE
    small.gpus[2].save(update_fields=["state"])
    client = redfish_as(admin_user)
    members = _members(client.get(BLOCKS))
    assert f"{BLOCKS}/host-{small.hosts[0].pk}" in members
    assert len(members) == len(small.hosts) + len(small.gpus) + len(small.memory)

    def status(device: Any) -> dict[str, Any]:
        answer = client.get(f"{BLOCKS}/{device.kind}-{device.pk}")
        assert answer.status_code == 200, answer.content
        return dict(answer.json()["CompositionStatus"])

    held = status(small.gpus[0])
    assert held["CompositionState"] == "Composed"  # held whole: no share left to give
    assert held["SharingCapable"] is True  # a GPU may be held in shares
    assert status(small.gpus[1])["CompositionState"] == "Failed"
    assert status(small.gpus[2])["CompositionState"] == "Unavailable"
    assert status(small.gpus[3])["CompositionState"] == "Unused"
    sliced = status(small.memory[0])
    assert sliced["CompositionState"] == "ComposedAndAvailable"
    assert sliced["SharingCapable"] is True and sliced["NumberOfCompositions"] == 1
    assert status(small.memory[1])["CompositionState"] == "Unused"
    gpu = client.get(f"{BLOCKS}/gpu-{small.gpus[0].pk}").json()
    assert gpu["ResourceBlockType"] == ["Processor"]
    assert gpu["Links"]["ComputerSystems"] == [{"@odata.id": f"{V1}/Systems/{composition.pk}"}]
    assert gpu["Links"]["Chassis"]  # operators see where it sits
    host = client.get(f"{BLOCKS}/host-{small.hosts[0].pk}").json()
    assert host["ResourceBlockType"] == ["Compute"]
    assert host["CompositionStatus"]["CompositionState"] == "ComposedAndAvailable"
    # An id of the wrong kind names no block.
    assert client.get(f"{BLOCKS}/nvme-{small.gpus[0].pk}").status_code == 404


def test_a_tenant_sees_free_blocks_it_may_draw_and_its_own_never_anothers(
    redfish_as: Any, alice: Any, carol: Any, acme: Any, globex: Any, small: SmallFabric
) -> None:
    mine = _compose(acme, small, gpus=2, gib=512)
    Quota.objects.create(tenant=globex, kind="cxl_memory", max_memory_gib=0)
    unpooled = DeviceFactory.create(manager=small.manager, enclosure=small.enclosures[1])
    carols = _members(redfish_as(carol).get(BLOCKS))
    held = [f"{BLOCKS}/gpu-{a.device_id}" for a in mine.allocations.filter(gib__isnull=True)]
    assert not set(held) & set(carols)
    assert not [m for m in carols if "/cxl_memory-" in m]  # her quota closes memory
    assert f"{BLOCKS}/gpu-{unpooled.pk}" not in carols  # in no pool
    assert f"{BLOCKS}/gpu-{small.gpus[3].pk}" in carols
    assert redfish_as(carol).get(held[0]).status_code == 404
    # Her zones list only blocks she sees, and so do her capabilities' zones.
    carol_client = redfish_as(carol)
    for zone in _members(carol_client.get(f"{V1}/CompositionService/ResourceZones")):
        in_zone = carol_client.get(zone).json()["Links"]["ResourceBlocks"]
        assert in_zone and {b["@odata.id"] for b in in_zone} <= set(carols)
    # The memory device alice holds a slice of: carol's view never counts alice's slice.
    alices = redfish_as(alice)
    assert set(held) <= set(_members(alices.get(BLOCKS)))
    sliced = alices.get(f"{BLOCKS}/cxl_memory-{small.memory[0].pk}").json()
    assert sliced["CompositionStatus"]["NumberOfCompositions"] == 1
    assert "Chassis" not in sliced["Links"]  # fabric detail is for operators
    gpu = alices.get(held[0]).json()
    assert gpu["Links"]["ComputerSystems"] == [{"@odata.id": f"{V1}/Systems/{mine.pk}"}]
    # A host composed by acme shows carol none of acme's systems.
    host = redfish_as(carol).get(f"{BLOCKS}/host-{small.hosts[0].pk}").json()
    assert host["Links"]["ComputerSystems"] == []
    assert host["CompositionStatus"]["CompositionState"] == "Unused"


def test_systems_are_the_callers_live_compositions(
    redfish_as: Any,
    alice: Any,
    bob: Any,
    carol: Any,
    admin_user: Any,
    acme: Any,
    small: SmallFabric,
) -> None:
    ready = _compose(acme, small, gpus=2, gib=128)
    gone = _compose(acme, small, name="old", gpus=0, state=CompositionState.RELEASED)
    path = f"{V1}/Systems/{ready.pk}"
    for user in (alice, bob, admin_user):
        assert _members(redfish_as(user).get(f"{V1}/Systems")) == [path]
    assert _members(redfish_as(carol).get(f"{V1}/Systems")) == []
    assert redfish_as(carol).get(path).status_code == 404
    assert redfish_as(alice).get(f"{V1}/Systems/{gone.pk}").status_code == 404
    body = redfish_as(alice).get(path).json()
    assert body["SystemType"] == "Composed"
    assert body["PowerState"] == "On"
    assert body["Status"] == {"State": "Enabled", "Health": "OK"}
    blocks = [b["@odata.id"] for b in body["Links"]["ResourceBlocks"]]
    assert blocks[0] == f"{BLOCKS}/host-{small.hosts[0].pk}"
    assert f"{BLOCKS}/cxl_memory-{small.memory[0].pk}" in blocks
    assert len(blocks) == 4  # host, two GPUs, one memory device
    assert body["MemorySummary"]["TotalSystemMemoryGiB"] == 128
    # Every block it links is a block alice can read, and it links back.
    for block in blocks:
        linked = redfish_as(alice).get(block).json()["Links"]["ComputerSystems"]
        assert {"@odata.id": path} in linked


def test_a_system_in_each_state_says_so(
    redfish_as: Any, alice: Any, acme: Any, small: SmallFabric
) -> None:
    binding = _compose(acme, small, gpus=1, state=CompositionState.BINDING)
    body = redfish_as(alice).get(f"{V1}/Systems/{binding.pk}").json()
    assert body["Status"]["State"] == "Starting"
    assert body["PowerState"] != "On"
    block = redfish_as(alice).get(body["Links"]["ResourceBlocks"][1]["@odata.id"]).json()
    assert block["CompositionStatus"]["CompositionState"] == "Composing"
    Composition.objects.filter(pk=binding.pk).update(state=CompositionState.DEGRADED)
    body = redfish_as(alice).get(f"{V1}/Systems/{binding.pk}").json()
    assert body["Status"] == {"State": "Enabled", "Health": "Warning"}


def test_zones_hold_what_reaches_each_other(
    redfish_as: Any, admin_user: Any, small: SmallFabric
) -> None:
    client = redfish_as(admin_user)
    zones = _members(client.get(f"{V1}/CompositionService/ResourceZones"))
    # The two switches are joined: one zone with both hosts and every GPU; the memory box
    # is cabled to nothing, so its devices can be composed with nothing.
    assert len(zones) == 1
    zone = client.get(zones[0]).json()
    assert zone["ZoneType"] == "ZoneOfResourceBlocks"
    assert len(zone["Links"]["ResourceBlocks"]) == 2 + len(small.gpus)
    memory = client.get(f"{BLOCKS}/cxl_memory-{small.memory[0].pk}").json()
    assert memory["Links"]["Zones"] == []
    # Cut the inter-switch link: each rack is a zone of its own.
    small.links[-1].state = "down"
    small.links[-1].save(update_fields=["state"])
    zones = _members(client.get(f"{V1}/CompositionService/ResourceZones"))
    assert len(zones) == 2
    rack_b = client.get(zones[1]).json()["Links"]["ResourceBlocks"]
    assert {"@odata.id": f"{BLOCKS}/host-{small.hosts[1].pk}"} in rack_b
    assert {"@odata.id": f"{BLOCKS}/gpu-{small.gpus[0].pk}"} not in rack_b
    gpu = client.get(f"{BLOCKS}/gpu-{small.gpus[4].pk}").json()
    assert gpu["Links"]["Zones"] == [{"@odata.id": zones[1]}]


def test_the_systems_collection_points_to_its_capabilities(
    redfish_as: Any, alice: Any, small: SmallFabric
) -> None:
    client = redfish_as(alice)
    body = client.get(f"{V1}/Systems").json()
    capabilities = body["@Redfish.CollectionCapabilities"]["Capabilities"]
    assert {c["UseCase"] for c in capabilities} == {
        "ComputerSystemComposition",
        "ComputerSystemConstrainedComposition",
    }
    for capability in capabilities:
        # DMTF's validators skip links that follow a CapabilitiesObject: the zones first.
        assert list(capability) == ["UseCase", "Links", "CapabilitiesObject"]
        assert capability["Links"]["TargetCollection"] == {"@odata.id": f"{V1}/Systems"}
        assert capability["Links"]["RelatedItem"]  # the zones it applies to
        found = client.get(capability["CapabilitiesObject"]["@odata.id"])
        assert found.status_code == 200, found.content
        assert found.json()["Name@Redfish.OptionalOnCreate"] is True  # made up when absent
    constrained = client.get(f"{V1}/Systems/ConstrainedCompositionCapabilities").json()
    for name in ("Processors", "Memory", "Storage", "NetworkInterfaces"):
        assert constrained[f"{name}@Redfish.OptionalOnCreate"] is True
    specific = client.get(f"{V1}/Systems/Capabilities").json()
    assert specific["@Redfish.ResourceBlockLimits"]["MaxCompute"] == 1


def test_chassis_and_fabrics_are_for_operators(
    redfish_as: Any, admin_user: Any, carol: Any, small: SmallFabric
) -> None:
    operator, tenant = redfish_as(admin_user), redfish_as(carol)
    chassis = _members(operator.get(f"{V1}/Chassis"))
    assert len(chassis) == len(small.racks) + len(small.enclosures)
    enclosure = operator.get(f"{V1}/Chassis/enclosure-{small.enclosures[0].pk}").json()
    assert len(enclosure["Links"]["ResourceBlocks"]) == 4
    assert enclosure["Links"]["ContainedBy"]["@odata.id"].endswith(f"rack-{small.racks[0].pk}")
    fabrics = _members(operator.get(f"{V1}/Fabrics"))
    assert fabrics == [f"{V1}/Fabrics/{small.manager.pk}"]
    switches = _members(operator.get(f"{fabrics[0]}/Switches"))
    assert len(switches) == 2
    assert operator.get(switches[0]).json()["SwitchType"] == "CXL"
    assert _members(tenant.get(f"{V1}/Chassis")) == []
    assert _members(tenant.get(f"{V1}/Fabrics")) == []
    assert tenant.get(fabrics[0]).status_code == 404
    assert tenant.get(chassis[0]).status_code == 404


def test_block_lookups_read_ids_back_and_refuse_what_the_caller_may_not_use(
    carol: Any, admin_user: Any, acme: Any, small: SmallFabric
) -> None:
    composition = _compose(acme, small, gpus=1)
    held = composition.allocations.get().device
    free = small.gpus[3]
    carols, admins = Caller(user=carol), Caller(user=admin_user)
    assert device_of_block(f"{BLOCKS}/gpu-{free.pk}", carols) == free
    assert device_of_block({"@odata.id": f"{BLOCKS}/gpu-{free.pk}"}, carols) == free
    assert device_of_block(f"gpu-{held.pk}", admins) == held
    assert host_of_block(f"{BLOCKS}/host-{small.hosts[1].pk}", carols) == small.hosts[1]
    for bad in (
        f"{BLOCKS}/gpu-{held.pk}",
        f"{BLOCKS}/host-{small.hosts[0].pk}",
        "nope",
        f"{V1}/Systems/gpu-{free.pk}",
        f"{BLOCKS}/nvme-{free.pk}",
        f"gpu-{10**30}",
    ):
        with pytest.raises(RedfishError) as refused:
            device_of_block(bad, carols, "#/Links/ResourceBlocks/2")
        assert refused.value.status == 400
        info = refused.value.body()["error"]["@Message.ExtendedInfo"][0]
        assert info["MessageId"].endswith("ResourceBlockNotFound")
        assert info["RelatedProperties"] == ["#/Links/ResourceBlocks/2"]
    small.hosts[1].health = Health.CRITICAL
    small.hosts[1].save(update_fields=["health"])
    with pytest.raises(RedfishError):
        host_of_block(f"host-{small.hosts[1].pk}", carols)


def test_collections_cost_a_fixed_number_of_queries(
    redfish_as: Any,
    alice: Any,
    admin_user: Any,
    acme: Any,
    small: SmallFabric,
    django_assert_max_num_queries: Any,
) -> None:
    for slot in range(40):
        DeviceFactory.create(
            manager=small.manager, enclosure=small.enclosures[1], slot=slot, pool=small.pools[0]
        )
    for index in range(12):
        _compose(acme, small, name=f"c{index}", gpus=int(index < 3), gib=64 * (index < 6))
    later = timezone.now() + timedelta(hours=1)
    for index in range(10):
        Composition.objects.create(
            tenant=acme, name=f"h{index}", state=CompositionState.HELD, hold_expires_at=later
        )
    Job.objects.bulk_create(Job(kind=JobKind.COMPOSE, tenant=acme) for _ in range(30))
    operator, tenant = redfish_as(admin_user), redfish_as(alice)
    paths = [
        BLOCKS,
        f"{BLOCKS}?$expand=.",
        f"{V1}/CompositionService/ResourceZones?$expand=.",
        f"{V1}/Systems",
        f"{V1}/Systems?$expand=.",
        f"{V1}/Chassis?$expand=.",
        f"{V1}/TaskService/Tasks?$expand=.",
        f"{V1}/CompositionService/CompositionReservations?$expand=.",
    ]
    for client in (operator, tenant):
        for path in paths:
            with django_assert_max_num_queries(20):
                assert client.get(path).status_code == 200


def test_each_block_holds_its_part_as_the_resource_a_client_looks_for(
    redfish_as: Any, admin_user: Any, carol: Any, acme: Any, small: SmallFabric
) -> None:
    client = redfish_as(admin_user)
    gpu = client.get(f"{BLOCKS}/gpu-{small.gpus[0].pk}").json()
    processor = client.get(gpu["Processors"][0]["@odata.id"]).json()
    assert processor["ProcessorType"] == "GPU"
    assert processor["Model"] == "H100 SXM"
    assert processor["MemorySummary"]["TotalMemorySizeMiB"] == 80 * 1024
    memory = client.get(f"{BLOCKS}/cxl_memory-{small.memory[0].pk}").json()
    chunk = client.get(memory["Memory"][0]["@odata.id"]).json()
    assert chunk["CapacityMiB"] == 1024 * 1024
    host = client.get(f"{BLOCKS}/host-{small.hosts[0].pk}").json()
    cpu = client.get(host["Processors"][0]["@odata.id"]).json()
    assert cpu["ProcessorType"] == "CPU" and cpu["TotalCores"] == 96
    assert client.get(f"{BLOCKS}/gpu-{small.gpus[0].pk}/Drives/NVMe").status_code == 404
    # What a tenant may not see, it may not see the parts of either.
    _compose(acme, small, gpus=1)
    assert redfish_as(carol).get(gpu["Processors"][0]["@odata.id"]).status_code == 404


def test_a_reservation_reserves_its_blocks_and_is_no_system(
    redfish_as: Any, admin_user: Any, alice: Any, acme: Any, small: SmallFabric
) -> None:
    held = Composition.objects.create(
        tenant=acme, name="later", state="held", host=small.hosts[0], spec={}
    )
    Allocation.objects.create(composition=held, device=small.gpus[0])
    small.gpus[0].state = DeviceState.RESERVED
    small.gpus[0].save(update_fields=["state"])
    for user in (admin_user, alice):
        client = redfish_as(user)
        assert _members(client.get(f"{V1}/Systems")) == []
        block = client.get(f"{BLOCKS}/gpu-{small.gpus[0].pk}").json()
        assert block["CompositionStatus"]["Reserved"] is True
        assert block["CompositionStatus"]["CompositionState"] == "Unused"
        assert block["Links"]["ComputerSystems"] == []
