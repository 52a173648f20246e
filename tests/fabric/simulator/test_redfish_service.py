"""The simulated world served as Redfish: the Redfish driver finds there what the simulated
driver finds in the same world, and binds through it change the simulator's own state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from fabric.drivers.base import DriverError, Inventory
from fabric.drivers.redfish.driver import RedfishDriver
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.models import SimulatedBinding
from fabric.simulator.redfish.auth import credentials
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import TINY, simulated_manager

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def served() -> Iterator[tuple[SimulatedDriver, RedfishDriver]]:
    simulated_manager(name="served", fabric="served", spec=TINY)
    with serve_world("served") as url:
        yield (
            SimulatedDriver(settings={"fabric": "served"}),
            RedfishDriver(endpoint=url, settings={"timeout_s": 5}, credentials=credentials()),
        )


def _names(inventory: Inventory) -> dict[str, dict[str, str]]:
    """Each element's name by its external id, for every kind."""
    return {
        kind: {i.external_id: i.name for i in getattr(inventory, kind)}
        for kind in ("racks", "power_feeds", "switches", "hosts", "enclosures", "devices")
    }


def test_the_redfish_driver_finds_the_inventory_the_simulated_driver_finds(
    served: tuple[SimulatedDriver, RedfishDriver],
) -> None:
    simulated, redfish = served
    want, got = simulated.discover(), redfish.discover()
    assert list(got.dangling_references()) == []
    assert got.counts() == want.counts()
    assert sorted((d.kind, d.name, d.memory_gib, d.capacity_gb) for d in got.devices) == sorted(
        (d.kind, d.name, d.memory_gib, d.capacity_gb) for d in want.devices
    )
    # Models travel with GPUs and drives (a network interface and a memory domain have none).
    assert Counter((d.kind, d.model) for d in got.devices if d.kind in ("gpu", "nvme")) == Counter(
        (d.kind, d.model) for d in want.devices if d.kind in ("gpu", "nvme")
    )
    assert sorted((s.name, s.protocol, s.model) for s in got.switches) == sorted(
        (s.name, s.protocol, s.model) for s in want.switches
    )
    assert sorted((h.name, h.cores, h.memory_gib) for h in got.hosts) == sorted(
        (h.name, h.cores, h.memory_gib) for h in want.hosts
    )
    assert sorted((e.name, e.kind, e.slots) for e in got.enclosures) == sorted(
        (e.name, e.kind, e.slots) for e in want.enclosures
    )
    assert sorted(r.name for r in got.racks) == sorted(r.name for r in want.racks)
    assert sorted((f.name, f.capacity_kw) for f in got.power_feeds) == sorted(
        (f.name, f.capacity_kw) for f in want.power_feeds
    )
    # Where each element sits and what powers it, by name.
    names, wanted_names = _names(got), _names(want)

    def placed(inventory: Inventory, by: dict[str, dict[str, str]]) -> set[tuple[str, ...]]:
        feeds, racks = by["power_feeds"], by["racks"]
        return {
            *(
                (d.name, by["enclosures"][d.enclosure_id or ""], f"slot {d.slot}")
                for d in inventory.devices
            ),
            *(
                (e.name, feeds[e.power_feed_id or ""], racks[e.rack_id or ""], f"U{e.rack_unit}")
                for e in inventory.enclosures
            ),
            *(
                (
                    h.name,
                    feeds[h.power_feed_id or ""],
                    racks.get(h.rack_id or "", "no rack"),
                    f"U{h.rack_unit}",
                )
                for h in inventory.hosts
            ),
            *(
                (s.name, racks.get(s.rack_id or "", "no rack"), f"U{s.rack_unit}")
                for s in inventory.switches
            ),
            # The units each box takes, and each rack's.
            *((e.name, f"{e.height_u}U") for e in inventory.enclosures),
            *((h.name, f"{h.height_u}U") for h in inventory.hosts),
            *((s.name, f"{s.height_u}U") for s in inventory.switches),
            *((r.name, f"{r.height_u}U") for r in inventory.racks),
            *((f.name, racks[f.rack_id or ""]) for f in inventory.power_feeds),
        }

    assert placed(got, names) == placed(want, wanted_names)
    # The world puts every host and switch in a rack, at a unit, and every device in a slot.
    assert all(h.rack_id for h in want.hosts) and all(s.rack_id for s in want.switches)
    assert all(h.rack_unit for h in want.hosts) and all(s.rack_unit for s in want.switches)
    assert all(e.rack_unit for e in want.enclosures)
    assert all(d.slot for d in want.devices)

    # Cabling: the same pairs of (owner name, port name), each link once.
    def cabling(inventory: Inventory, by: dict[str, dict[str, str]]) -> Counter[frozenset[str]]:
        owners = {**by["switches"], **by["hosts"], **by["enclosures"]}
        ports = {p.external_id: f"{owners[p.owner_id]}/{p.name}" for p in inventory.ports}
        return Counter(frozenset({ports[x.a_port_id], ports[x.b_port_id]}) for x in inventory.links)

    assert cabling(got, names) == cabling(want, wanted_names)
    assert {x.state for x in got.links} == {"up"}
    assert {d.health for d in got.devices} == {"ok"}


def test_binds_through_redfish_are_the_simulators_bindings(
    served: tuple[SimulatedDriver, RedfishDriver],
) -> None:
    simulated, redfish = served
    inventory = redfish.discover()
    gpu = next(d for d in inventory.devices if d.kind == "gpu")
    memory = next(d for d in inventory.devices if d.kind == "cxl_memory")
    host, other = inventory.hosts[0], inventory.hosts[1]

    whole = redfish.bind(device_id=gpu.external_id, host_id=host.external_id)
    part = redfish.bind(device_id=memory.external_id, host_id=host.external_id, size_gib=64)

    held = {(b.device_id, b.host_id, b.size_gib) for b in simulated.bindings()}
    assert held == {(gpu.name, host.name, None), (memory.name, host.name, 64)}
    assert {(b.device_id, b.host_id, b.size_gib) for b in redfish.bindings()} == {
        (gpu.external_id, host.external_id, None),
        (memory.external_id, host.external_id, 64),
    }
    # The simulator's rule holds over HTTP: a device bound whole is refused elsewhere (409).
    with pytest.raises(DriverError) as caught:
        redfish.bind(device_id=gpu.external_id, host_id=other.external_id)
    assert caught.value.permanent is True

    redfish.unbind(binding_id=whole.binding_id)
    redfish.unbind(binding_id=part.binding_id)
    assert simulated.bindings() == [] and redfish.bindings() == []
    assert not SimulatedBinding.objects.exists()


def test_a_bind_by_the_simulated_driver_is_seen_over_redfish(
    served: tuple[SimulatedDriver, RedfishDriver],
) -> None:
    simulated, redfish = served
    inventory = redfish.discover()
    gpu = next(d for d in inventory.devices if d.kind == "gpu")
    simulated.bind(device_id=gpu.name, host_id=inventory.hosts[2].name)
    [binding] = redfish.bindings()
    assert (binding.device_id, binding.host_id) == (gpu.external_id, inventory.hosts[2].external_id)
