"""Where a Redfish chassis sits in its rack: `Location.Placement.RackOffset` and `HeightMm`,
each optional, never a failure when odd."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.drivers.redfish.mounting import mounted_at, rack_height_u


def _chassis(**placement: Any) -> dict[str, Any]:
    return {"Location": {"Placement": placement}}


@pytest.mark.parametrize(
    ("chassis", "expected"),
    [
        ({**_chassis(RackOffset=12, RackOffsetUnits="EIA_310"), "HeightMm": 177.8}, (12, 4)),
        ({**_chassis(RackOffset=3, RackOffsetUnits="OpenU"), "HeightMm": 96}, (3, 2)),
        (_chassis(RackOffset=5), (5, 1)),  # no height: one unit
        ({"HeightMm": 88.9}, (None, 2)),  # no offset: not placed
        (_chassis(RackOffset="7", RackOffsetUnits="EIA_310"), (None, 1)),
        ({**_chassis(RackOffset=0), "HeightMm": "tall"}, (None, 1)),
        ({**_chassis(RackOffset=True), "HeightMm": 0}, (None, 1)),
        ({"Location": "row 3"}, (None, 1)),
        (None, (None, 1)),
    ],
)
def test_a_chassis_says_its_unit_and_height_or_nothing(
    chassis: dict[str, Any] | None, expected: tuple[int | None, int]
) -> None:
    got = mounted_at(chassis)
    assert (got["rack_unit"], got["height_u"]) == expected


def test_a_rack_is_as_tall_as_its_height_says_else_42_units() -> None:
    assert rack_height_u({"HeightMm": 2311.4}) == 52
    assert rack_height_u({}) == 42
    assert rack_height_u({"HeightMm": None}) == 42
