"""A rack's elevation laid out without a database: every unit drawn once, top first; a box
spans its units; what cannot be drawn is listed with the reason."""

from __future__ import annotations

from fabric.elevation import MAX_DRAWN_UNITS, Occupant, elevation


def _box(name: str, unit: int | None, height: int = 1, **kw: str) -> Occupant:
    return Occupant(
        kind=kw.get("kind", "host"),
        pk=len(name),
        name=name,
        label="Host",
        unit=unit,
        height=height,
        health=kw.get("health", "ok"),
        state=kw.get("state", "active"),
    )


def test_every_unit_is_drawn_once_from_the_top_and_a_box_spans_its_units() -> None:
    drawing = elevation(10, [_box("host-a", 3, 2), _box("sw-a", 10)])
    assert drawing.units == list(range(10, 0, -1))
    rows = [(c.row, c.span, c.unit, c.occupant.name if c.occupant else None) for c in drawing.cells]
    assert rows[0] == (1, 1, 10, "sw-a")
    assert (7, 2, 3, "host-a") in rows  # U3-4: rows 7 and 8 from the top
    assert sum(c.span for c in drawing.cells) == 10
    assert [c.unit for c in drawing.cells if c.occupant is None] == [9, 8, 7, 6, 5, 2, 1]
    assert drawing.used == 3 and drawing.unplaced == []


def test_what_cannot_be_drawn_is_listed_with_the_reason() -> None:
    drawing = elevation(
        8,
        [
            _box("host-a", 2, 2),
            _box("host-b", 3),  # overlaps host-a's U3
            _box("host-c", None),
            _box("host-d", 8, 2),  # U8-9 in an 8U rack
            _box("host-e", 5, state="absent"),
        ],
    )
    reasons = {u.occupant.name: u.reason for u in drawing.unplaced}
    assert reasons == {
        "host-b": "U3 overlaps host-a (U2\u20133)",
        "host-c": "its fabric manager gives no unit",
        "host-d": "U8\u20139 is past the rack's top unit (U8)",
        "host-e": "absent: no longer reported",
    }
    assert [o.name for o in drawing.drawn] == ["host-a"]
    assert sum(c.span for c in drawing.cells) == 8


def test_a_rack_said_to_be_thousands_of_units_tall_is_drawn_at_most_100() -> None:
    drawing = elevation(4000, [_box("host-a", 1), _box("host-z", 3999)])
    assert drawing.height == MAX_DRAWN_UNITS and len(drawing.cells) == MAX_DRAWN_UNITS
    assert [u.occupant.name for u in drawing.unplaced] == ["host-z"]


def test_a_box_below_the_first_unit_is_listed_not_lost() -> None:
    drawing = elevation(4, [_box("h0", 0), _box("h1", 1)])
    assert [(u.occupant.name, u.reason) for u in drawing.unplaced] == [
        ("h0", "U0 is below the first unit")
    ]
    assert [o.name for o in drawing.drawn] == ["h1"]
