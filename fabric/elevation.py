"""A rack's elevation: what sits at which of its units, drawn top to bottom.

`rack_occupants(rack)` reads the switches, hosts and enclosures of a rack (one query each);
`elevation(height, occupants)` lays them out without I/O. A box is drawn at the units its
manager reports (`rack_unit`, the lowest, and `height_u` above it); one that cannot be drawn
is listed instead with the reason: its manager gives no unit, it is absent (discovery no
longer reports it), it reaches past the rack's top unit, or it overlaps a box drawn there
first (managers disagree, or one moved and the other was not synchronised yet). Units no box
takes are drawn empty, one by one, so the drawing always shows every unit of the rack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from fabric.choices import ComponentState, Health
from fabric.models import Enclosure, Host, Rack, Switch

__all__ = [
    "MAX_DRAWN_UNITS",
    "Cell",
    "Elevation",
    "Occupant",
    "Unplaced",
    "elevation",
    "rack_occupants",
]

# The tallest drawing: racks stop near 60U; a manager that reports thousands of units (a
# height in the wrong unit) must not make a page of thousands of rows. Boxes above it are
# listed as past the top.
MAX_DRAWN_UNITS = 100


@dataclass(frozen=True, slots=True)
class Occupant:
    """A switch, host or enclosure of a rack, as the elevation draws it."""

    kind: str  # "switch", "host" or "enclosure"
    pk: int
    name: str
    label: str  # what it is, in the console's words ("Host", "GPU chassis", "Leaf switch")
    unit: int | None  # the lowest unit it occupies, None where its manager does not say
    height: int
    health: str
    state: str
    url: str = ""

    @property
    def health_label(self) -> str:
        return dict(Health.choices).get(self.health, self.health)

    @property
    def state_label(self) -> str:
        return dict(ComponentState.choices).get(self.state, self.state)

    @property
    def top(self) -> int:
        """The highest unit it occupies (its unit when it has none: never drawn then)."""
        return (self.unit or 0) + max(1, self.height) - 1

    @property
    def units(self) -> str:
        """Its units as a person reads them: "U7", "U31" to "32" with an en dash between."""
        if self.unit is None:
            return "no unit"
        return f"U{self.unit}" if self.top == self.unit else f"U{self.unit}\u2013{self.top}"


@dataclass(frozen=True, slots=True)
class Cell:
    """One block of the drawing: an occupant spanning `span` rows, or one empty unit."""

    row: int  # the drawing's row, 1 at the top (the rack's highest unit)
    span: int
    unit: int  # the lowest unit it covers
    occupant: Occupant | None = None


@dataclass(frozen=True, slots=True)
class Unplaced:
    """A box of the rack that is not drawn, and why."""

    occupant: Occupant
    reason: str


@dataclass
class Elevation:
    """The drawing of a rack of `height` units: `cells` top to bottom, `units` the unit
    numbers of its rows (top first), and the boxes that could not be drawn."""

    height: int
    cells: list[Cell] = field(default_factory=list)
    unplaced: list[Unplaced] = field(default_factory=list)

    @property
    def units(self) -> list[int]:
        return list(range(self.height, 0, -1))

    @property
    def used(self) -> int:
        """Units taken by the boxes drawn."""
        return sum(c.span for c in self.cells if c.occupant is not None)

    @property
    def drawn(self) -> list[Occupant]:
        return [c.occupant for c in self.cells if c.occupant is not None]


def elevation(height: int, occupants: Iterable[Occupant]) -> Elevation:
    """Lay out `occupants` in a rack of `height` units (pure: no I/O).

    Boxes are drawn lowest unit first, then by name, so that the same data always gives the
    same drawing; a box that overlaps one already drawn is listed as unplaced with the name
    of the one in its way. At most `MAX_DRAWN_UNITS` are drawn.
    """
    height = min(max(1, height), MAX_DRAWN_UNITS)
    result = Elevation(height=height)
    taken: dict[int, Occupant] = {}
    drawn: list[Occupant] = []
    ordered = sorted(occupants, key=lambda o: (o.unit is None, o.unit or 0, o.name, o.pk))
    for occupant in ordered:
        if occupant.state == ComponentState.ABSENT:
            result.unplaced.append(Unplaced(occupant, "absent: no longer reported"))
        elif occupant.unit is None:
            result.unplaced.append(Unplaced(occupant, "its fabric manager gives no unit"))
        elif occupant.unit < 1:
            # Units count from 1 at the bottom; sync never stores less, the admin might.
            result.unplaced.append(Unplaced(occupant, f"U{occupant.unit} is below the first unit"))
        elif occupant.top > height:
            result.unplaced.append(
                Unplaced(occupant, f"{occupant.units} is past the rack's top unit (U{height})")
            )
        elif clash := next(
            (taken[u] for u in range(occupant.unit, occupant.top + 1) if u in taken), None
        ):
            result.unplaced.append(
                Unplaced(occupant, f"{occupant.units} overlaps {clash.name} ({clash.units})")
            )
        else:
            for u in range(occupant.unit, occupant.top + 1):
                taken[u] = occupant
            drawn.append(occupant)
    starts = {o.top: o for o in drawn}
    unit = height
    while unit >= 1:
        row = height - unit + 1
        if unit in starts:
            occupant = starts[unit]
            span = occupant.top - (occupant.unit or unit) + 1
            result.cells.append(
                Cell(row=row, span=span, unit=occupant.unit or unit, occupant=occupant)
            )
            unit -= span
        else:
            result.cells.append(Cell(row=row, span=1, unit=unit))
            unit -= 1
    return result


def _occupants(
    kind: str, rows: Sequence[Switch | Host | Enclosure], label: Callable[[Any], str]
) -> list[Occupant]:
    url_name = f"fabric:{kind}_detail"
    return [
        Occupant(
            kind=kind,
            pk=row.pk,
            name=row.name,
            label=label(row),
            unit=row.rack_unit,
            height=row.height_u,
            health=row.health or Health.UNKNOWN,
            state=row.state,
            url=reverse(url_name, args=[row.pk]),
        )
        for row in rows
    ]


_FIELDS = ("pk", "name", "rack_unit", "height_u", "health", "state")


def rack_occupants(rack: Rack) -> list[Occupant]:
    """Every switch, host and enclosure of `rack` (absent ones too). Three queries."""
    switches = list(Switch.objects.filter(rack=rack).only(*_FIELDS, "tier", "protocol"))
    hosts = list(Host.objects.filter(rack=rack).only(*_FIELDS))
    enclosures = list(Enclosure.objects.filter(rack=rack).only(*_FIELDS, "kind"))
    return [
        *_occupants(
            "switch",
            switches,
            lambda s: f"{s.get_protocol_display()} {s.get_tier_display().lower()} switch",
        ),
        *_occupants("host", hosts, lambda _h: "Host"),
        *_occupants("enclosure", enclosures, lambda e: e.get_kind_display()),
    ]
