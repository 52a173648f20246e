"""Where the topology page draws each node: positions computed from the structure.

Pure Python. A force-directed layout started from random positions drew the fabric
differently on every load, and packed labels on top of each other. The page now draws
these preset positions instead, so the same fabric looks the same every time, and every
label has room at the zoom that fits the whole fabric on screen.

Each rack is a block, laid out top to bottom:

1. its switches (spines first), in one row;
2. its hosts, in as few even rows as fit the block's width;
3. its enclosures, by kind (GPU chassis, memory boxes, JBOFs, I/O chassis, others) then
   name, in even rows; an enclosure drawn with its devices is a box of them in a small
   grid, a collapsed one a single node.

Blocks are placed in a grid whose shape suits a wide screen; gear in no rack gets a block of
its own, last. Names are sorted naturally (host-a-2 before host-a-10). The sizes below are
those of the page's style (static/js/topology.js), in model units; a label's width is
estimated from its length, generously, since the page may draw it up to LABEL_SCALE times
its base size to keep it readable when the fabric is zoomed out to fit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from fabric.topology.elements import FabricGraph, Node

__all__ = ["LABEL_SCALE", "layout_positions"]

LABEL_SCALE = 1.35  # the most the page enlarges labels at the zoom that fits (topology.js)
CHAR_WIDTH = 0.62  # a label character's width, in font sizes (Helvetica, average)

# (width, height, label font size) of nodes as topology.js draws them.
SWITCH = (42.0, 42.0, 13.0)
HOST = (44.0, 28.0, 12.0)
COLLAPSED_ENCLOSURE = (48.0, 34.0, 11.0)
DEVICE = 16.0
DEVICE_PITCH = (26.0, 30.0)  # room for a device and its short label below it
LABEL_WRAP = 90.0  # text-max-width: longer labels wrap onto more lines
ENCLOSURE_PADDING = 8.0
ENCLOSURE_LABEL = 11.0  # font size of an expanded enclosure's label, above its box
RACK_PADDING = 18.0
RACK_LABEL = 16.0

GAP = 22.0  # between two nodes of a row, and between rows
SECTION_GAP = 34.0  # between switches, hosts and enclosures
RACK_GAP = 70.0  # between rack blocks
ROW_TARGET = 520.0  # the widest a rack block's rows may be (unless one item is wider)
SCREEN_ASPECT = 1.6  # the shape of the canvas the blocks are arranged for

ENCLOSURE_ORDER = {"gpu_chassis": 0, "cxl_memory_box": 1, "jbof": 2, "io_chassis": 3}
TIER_ORDER = {"spine": 0, "leaf": 1}


def _natural(name: str) -> tuple[object, ...]:
    """Sort key: digit runs compare as numbers ("host-a-2" < "host-a-10")."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _label_width(text: str, font: float) -> float:
    longest = max((len(line) for line in text.split("\n")), default=0)
    return longest * font * CHAR_WIDTH * LABEL_SCALE


@dataclass
class _Cell:
    """One item of a row: its footprint (label included) and how to place it."""

    node: Node
    width: float
    height: float
    top: float  # from the top of the footprint to the node's own top edge
    devices: list[Node]
    columns: int

    def place(self, x: float, y: float, out: dict[str, tuple[float, float]]) -> None:
        """Put the item with its footprint's top-left corner at (x, y)."""
        centre = x + self.width / 2
        if not self.devices:
            out[self.node.id] = (round(centre, 1), round(y + self.top + self._own_height() / 2, 1))
            return
        pitch_x, pitch_y = DEVICE_PITCH
        for i, device in enumerate(self.devices):
            row, column = divmod(i, self.columns)
            in_row = min(self.columns, len(self.devices) - row * self.columns)
            left = centre - (in_row - 1) * pitch_x / 2
            top = y + self.top + ENCLOSURE_PADDING + DEVICE / 2
            out[device.id] = (round(left + column * pitch_x, 1), round(top + row * pitch_y, 1))

    def _own_height(self) -> float:
        kind = self.node.kind
        if kind == "switch":
            return SWITCH[1]
        if kind == "host":
            return HOST[1]
        return COLLAPSED_ENCLOSURE[1]


def _cell(node: Node, devices: list[Node]) -> _Cell:
    if node.kind == "switch" or node.kind == "host":
        width, height, font = SWITCH if node.kind == "switch" else HOST
        label = _label_width(node.name, font)
        return _Cell(node, max(width, label), height + font * 1.6, 0.0, [], 1)
    if not devices:  # a collapsed enclosure: its counts under its name, wrapped at LABEL_WRAP
        width, height, font = COLLAPSED_ENCLOSURE
        label = max(_label_width(node.name, font), LABEL_WRAP)
        return _Cell(node, max(width, label), height + font * 4.5, 0.0, [], 1)
    count = len(devices)
    columns = count if count <= 4 else 4 if count <= 8 else math.ceil(math.sqrt(count))
    rows = math.ceil(count / columns)
    pitch_x, pitch_y = DEVICE_PITCH
    box_width = (columns - 1) * pitch_x + DEVICE + 2 * ENCLOSURE_PADDING
    box_height = (rows - 1) * pitch_y + pitch_y + 2 * ENCLOSURE_PADDING
    label_height = ENCLOSURE_LABEL * 1.8
    width = max(box_width, _label_width(node.name, ENCLOSURE_LABEL))
    return _Cell(node, width, label_height + box_height, label_height, devices, columns)


def _row_width(row: list[_Cell]) -> float:
    return sum(c.width for c in row) + GAP * (len(row) - 1)


def _rows(cells: list[_Cell], width: float) -> list[list[_Cell]]:
    """`cells` in as few rows as fit `width`, evenly filled (8 hosts: 4 and 4, not 7 and 1)."""
    if not cells:
        return []
    lines = 1
    while True:
        per_row = math.ceil(len(cells) / lines)
        rows = [cells[i : i + per_row] for i in range(0, len(cells), per_row)]
        if per_row == 1 or all(_row_width(r) <= width for r in rows):
            return rows
        lines += 1


@dataclass
class _Block:
    """A rack's layout, relative to its top-left corner."""

    width: float
    height: float
    positions: dict[str, tuple[float, float]]


def _block(gear: list[Node], devices: dict[str, list[Node]], framed: bool) -> _Block:
    switches = sorted(
        (n for n in gear if n.kind == "switch"),
        key=lambda n: (TIER_ORDER.get(str(n.attrs.get("tier") or ""), 2), _natural(n.name)),
    )
    hosts = sorted((n for n in gear if n.kind == "host"), key=lambda n: _natural(n.name))
    enclosures = sorted(
        (n for n in gear if n.kind == "enclosure"),
        key=lambda n: (
            ENCLOSURE_ORDER.get(str(n.attrs.get("enclosure_kind") or ""), len(ENCLOSURE_ORDER)),
            _natural(n.name),
        ),
    )
    sections = [
        [_cell(n, []) for n in switches],
        [_cell(n, []) for n in hosts],
        [_cell(n, devices.get(n.id, [])) for n in enclosures],
    ]
    widest = max((c.width for cells in sections for c in cells), default=0.0)
    target = max(ROW_TARGET, widest)
    rows = [_rows(cells, target) for cells in sections]
    # As wide as its widest row, not the target: no empty margins to zoom out for.
    width = max((_row_width(row) for section in rows for row in section), default=0.0)
    inset = RACK_PADDING if framed else 0.0
    top = inset + (RACK_LABEL * 1.6 if framed else 0.0)
    positions: dict[str, tuple[float, float]] = {}
    y = top
    for section in rows:
        if not section:
            continue
        for row in section:
            x = inset + (width - _row_width(row)) / 2
            for cell in row:
                cell.place(x, y, positions)
                x += cell.width + GAP
            y += max(c.height for c in row) + GAP
        y += SECTION_GAP - GAP
    return _Block(width + 2 * inset, y - (SECTION_GAP - GAP) + inset, positions)


def layout_positions(graph: FabricGraph, *, drawn: Iterable[str]) -> dict[str, tuple[float, float]]:
    """The position of every drawn node that is not a compound parent, by node id.

    `drawn` are the node ids the page draws (devices are left out of a collapsed graph). A
    rack or an enclosure that has drawn children gets no position: Cytoscape derives it
    from them. The same graph always gives the same positions.
    """
    shown = set(drawn)
    devices: dict[str, list[Node]] = {}
    for node in graph.nodes.values():
        if node.kind == "device" and node.id in shown and node.parent in shown:
            devices.setdefault(str(node.parent), []).append(node)
    for members in devices.values():
        members.sort(key=lambda n: _natural(n.name))
    by_rack: dict[str | None, list[Node]] = {}
    for node in graph.nodes.values():
        if node.id in shown and node.kind in ("switch", "host", "enclosure"):
            rack = node.rack if node.rack in shown else None
            by_rack.setdefault(rack, []).append(node)
    racks = sorted(
        (graph.nodes[r] for r in by_rack if r is not None), key=lambda n: _natural(n.name)
    )
    blocks = [(rack.id, _block(by_rack[rack.id], devices, framed=True)) for rack in racks]
    if None in by_rack:
        blocks.append(("", _block(by_rack[None], devices, framed=False)))
    empty = [n for n in graph.nodes.values() if n.kind == "rack" and n.id in shown]
    positions: dict[str, tuple[float, float]] = {}
    if blocks:
        heights = sorted(b.height for _, b in blocks)
        widths = sorted(b.width for _, b in blocks)
        typical = heights[len(heights) // 2] / max(widths[len(widths) // 2], 1.0)
        columns = max(1, min(len(blocks), round(math.sqrt(len(blocks) * SCREEN_ASPECT * typical))))
        y = 0.0
        for start in range(0, len(blocks), columns):
            row = blocks[start : start + columns]
            x = 0.0
            for _, block in row:
                for node_id, (px, py) in block.positions.items():
                    positions[node_id] = (round(x + px, 1), round(y + py, 1))
                x += block.width + RACK_GAP
            y += max(block.height for _, block in row) + RACK_GAP
    for i, empty_rack in enumerate(r for r in empty if r.id not in by_rack):
        positions[empty_rack.id] = (float(i) * 120.0, -120.0)  # an empty rack: a small box above
    return positions
