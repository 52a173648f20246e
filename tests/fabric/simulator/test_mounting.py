"""The simulated world's rack elevations: every box at a unit of its rack, none overlapping,
switches at the top, and what does not fit left without a unit."""

from __future__ import annotations

from collections import defaultdict

from fabric.simulator.layout import world_elements
from fabric.simulator.mounting import RACK_HEIGHT_U
from fabric.simulator.spec import WorldSpec

BOXES = ("switch", "host", "enclosure")


def _units_by_rack(spec: WorldSpec) -> dict[str, dict[int, str]]:
    taken: dict[str, dict[int, str]] = defaultdict(dict)
    for element in world_elements(spec):
        unit = element.data.get("rack_unit")
        if element.kind not in BOXES or unit is None:
            continue
        for u in range(unit, unit + element.data["height_u"]):
            assert u not in taken[element.data["rack_id"]], (element.external_id, u)
            assert 1 <= u <= RACK_HEIGHT_U
            taken[element.data["rack_id"]][u] = element.external_id
    return taken


def test_the_demo_racks_hold_every_box_at_its_own_units_with_room_to_spare() -> None:
    elements = world_elements(WorldSpec())
    assert {e.data["height_u"] for e in elements if e.kind == "rack"} == {RACK_HEIGHT_U}
    assert all(e.data.get("rack_unit") for e in elements if e.kind in BOXES)
    for rack, units in _units_by_rack(WorldSpec()).items():
        assert units[1].startswith("gpu-"), rack  # the heaviest at the bottom
        assert units[RACK_HEIGHT_U].startswith("cxl-"), rack  # a switch at the top
        assert len(units) < RACK_HEIGHT_U, rack  # some units are left empty
    host = next(e for e in elements if e.external_id == "host-a-01")
    assert host.data["height_u"] == 2


def test_a_crowded_rack_leaves_what_does_not_fit_without_a_unit() -> None:
    spec = WorldSpec(racks=1, hosts=30, gpu_enclosures=8)
    elements = world_elements(spec)
    _units_by_rack(spec)  # still no overlap, still inside the rack
    unplaced = [e for e in elements if e.kind in BOXES and e.data.get("rack_unit") is None]
    assert any(e.kind == "host" for e in unplaced)  # the last stacked
    assert not any(str(e.data.get("kind")) == "gpu_chassis" for e in unplaced)  # the first
    assert world_elements(spec) == elements  # the same every time
