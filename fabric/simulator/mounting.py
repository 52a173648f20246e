"""Where each box of the simulated data centre sits in its rack: the units of its elevation.

`mount(elements)` gives every switch, host and enclosure of a laid-out world its height and
the lowest unit it occupies (`height_u`, `rack_unit`, counted from 1 at the bottom), which
discovery reports as a real manager reports `Location.Placement.RackOffset`. Switches go in
from the top down, as top-of-rack switches sit; the boxes are stacked from the bottom up,
heaviest first (GPU chassis, memory boxes, JBOFs, I/O chassis, then the hosts, nearest
their switch), leaving the units between them empty. What does not fit gets no unit: the
console lists it under its rack as not placed, as it would a manager that does not say.
Deterministic: the same world is mounted the same way every time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabric.simulator.catalogue import ENCLOSURES, HOST_HEIGHT_U, SWITCH
from fabric.simulator.models import SimulatedElement

if TYPE_CHECKING:  # layout imports this module to mount the world it lays out
    from fabric.simulator.layout import WorldElement

__all__ = ["RACK_HEIGHT_U", "mount"]

Kind = SimulatedElement.Kind

# A tall rack (52U): the demo's racks hold 48U of gear, with room left to see empty units.
RACK_HEIGHT_U = 52

# Bottom-up order of the stacked boxes: (kind, enclosure kind or "" for hosts).
_STACK_ORDER = (
    (Kind.ENCLOSURE, "gpu_chassis"),
    (Kind.ENCLOSURE, "cxl_memory_box"),
    (Kind.ENCLOSURE, "jbof"),
    (Kind.ENCLOSURE, "io_chassis"),
    (Kind.HOST, ""),
)


def _height(element: WorldElement) -> int:
    if element.kind == Kind.SWITCH:
        return SWITCH.height_u
    if element.kind == Kind.HOST:
        return HOST_HEIGHT_U
    meta = ENCLOSURES.get(str(element.data.get("kind")))
    return meta.height_u if meta else 1


def mount(elements: Sequence[WorldElement]) -> None:
    """Set `height_u` on every rack (`RACK_HEIGHT_U`), switch, host and enclosure, and
    `rack_unit` on those that fit in their rack, in the elements' own data."""
    racks = [e for e in elements if e.kind == Kind.RACK]
    for rack in racks:
        rack.data["height_u"] = RACK_HEIGHT_U
    inside: dict[str, list[WorldElement]] = {r.external_id: [] for r in racks}
    for element in elements:
        if element.kind in (Kind.SWITCH, Kind.HOST, Kind.ENCLOSURE):
            element.data["height_u"] = _height(element)
            if element.data.get("rack_id") in inside:
                inside[str(element.data["rack_id"])].append(element)
    for boxes in inside.values():
        top, bottom = RACK_HEIGHT_U, 1  # the highest and lowest units still free
        for switch in (b for b in boxes if b.kind == Kind.SWITCH):
            height = int(switch.data["height_u"])
            if top - height + 1 < bottom:
                continue
            switch.data["rack_unit"] = top - height + 1
            top -= height
        for kind, enclosure_kind in _STACK_ORDER:
            for box in boxes:
                if box.kind != kind or (enclosure_kind and box.data.get("kind") != enclosure_kind):
                    continue
                height = int(box.data["height_u"])
                if bottom + height - 1 > top:
                    continue
                box.data["rack_unit"] = bottom
                bottom += height
