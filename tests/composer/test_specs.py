"""The spec shape, without a database: normalisation and field errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from composer.errors import SpecError
from composer.models import Template
from composer.specs import spec_normalise, spec_to_request


def test_a_spec_is_normalised_with_every_key() -> None:
    spec = spec_normalise(
        {
            "items": [{"kind": "gpu", "count": "2", "minima": {"memory_gib": 80}}],
            "memory_gib": "1024",
        }
    )
    assert spec["items"] == [
        {"kind": "gpu", "model": None, "count": 2, "minima": {"memory_gib": 80}}
    ]
    assert (spec["memory_gib"], spec["policy"], spec["host"], spec["critical"]) == (
        1024,
        "none",
        None,
        False,
    )
    request = spec_to_request(spec, host=None, tenant="1")
    assert request.items[0].count == 2 and request.memory_gib == 1024


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([], "spec"),
        ({"items": "gpu"}, "items"),
        ({"items": [{"kind": "gpu", "count": 0}]}, "items[0].count"),
        ({"items": [{"kind": "gpu", "count": 1.5}]}, "items[0].count"),
        ({"items": [{"kind": "gpu", "count": True}]}, "items[0].count"),
        ({"items": [{"kind": "cxl_memory", "count": 1}]}, "items[0].kind"),
        (
            {"items": [{"kind": "gpu", "count": 1, "minima": {"memory_gib": -1}}]},
            "items[0].minima.memory_gib",
        ),
        ({"memory_gib": float("nan")}, "memory_gib"),
        ({"memory_gib": 1.5}, "memory_gib"),
        ({"memory_gib": 10, "max_latency_ns": 0}, "max_latency_ns"),
        ({"memory_gib": 10, "same_switch": "maybe"}, "same_switch"),
        ({"memory_gib": 10, "host": ["h"]}, "host"),
        (
            {"items": [{"kind": "gpu", "count": 2}], "same_switch": True, "policy": "switch"},
            "policy",
        ),
    ],
)
def test_bad_shapes_name_the_field(raw: Any, field: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec_normalise(raw)
    assert caught.value.field == field


def test_a_template_with_a_bad_spec_does_not_validate() -> None:
    template = Template(name="t", slug="t", spec={"items": [{"kind": "gpu", "count": -3}]})
    with pytest.raises(ValidationError) as caught:
        template.clean()
    assert caught.value.message_dict == {
        "spec": ["Device item 1: count must be at least 1 (got -3)."]
    }


@pytest.mark.parametrize(
    ("raw", "message", "field_message"),
    [
        (
            {"items": [{"kind": "gpu", "count": -1}]},
            "Device item 1: count must be at least 1 (got -1).",
            "Count must be at least 1.",
        ),
        (
            {"items": [{"kind": "gpu"}, {"kind": "gpu", "count": "two"}]},
            "Device item 2: count must be a whole number (got 'two').",
            "Count must be a whole number.",
        ),
        (
            {"items": [{"kind": "gpu", "minima": {"memory_gib": -1}}]},
            "Device item 1: minimum memory (GiB) must be at least 0 (got -1).",
            "Minimum memory (GiB) must be at least 0.",
        ),
        (
            {"items": [{"count": 2}]},
            "Device item 1: choose the kind of device.",
            "Choose the kind of device.",
        ),
        (
            {"memory_gib": "lots"},
            "CXL memory must be a whole number (got 'lots').",
            "CXL memory must be a whole number.",
        ),
        (
            {"memory_gib": 10**9},
            "CXL memory must be at most 1,048,576 (got 1e+09).",
            "CXL memory must be at most 1,048,576.",
        ),
        (
            {"cores": 1, "policy": "tight"},
            "Failure-domain policy must be one of none, enclosure, switch, pack (got 'tight').",
            "Failure-domain policy must be one of none, enclosure, switch, pack.",
        ),
        (
            {"items": [{"kind": "gpu", "count": 2}], "same_switch": True, "policy": "switch"},
            "Spread across switches puts each device behind a switch of its own; it cannot go "
            "with all devices behind one switch. Choose one of the two.",
            "Spread across switches puts each device behind a switch of its own; it cannot go "
            "with all devices behind one switch. Choose one of the two.",
        ),
    ],
)
def test_messages_are_in_the_consoles_words(raw: Any, message: str, field_message: str) -> None:
    """Beside a form field, the field's label and the rule; alone (the API's detail), the
    device item named and what was given. Never a path such as items[0].count."""
    with pytest.raises(SpecError) as caught:
        spec_normalise(raw)
    assert (caught.value.message, caught.value.field_message) == (message, field_message)


def test_same_switch_and_a_spread_across_switches_agree_for_one_device_each() -> None:
    """Each item's devices are spread across switches: one device per item is behind one
    switch and spread alike."""
    raw = {"items": [{"kind": "gpu", "count": 1}, {"kind": "nic", "count": 1}]}
    spec = spec_normalise({**raw, "same_switch": True, "policy": "switch"})
    assert (spec["same_switch"], spec["policy"]) == (True, "switch")


def test_named_devices_are_normalised_with_gib_or_none() -> None:
    spec = spec_normalise({"devices": [{"device": " gpu-03 "}, {"device": 41, "gib": "256"}]})
    assert spec["devices"] == [{"device": "gpu-03", "gib": None}, {"device": 41, "gib": 256}]
    assert spec["items"] == [] and spec["memory_gib"] == 0


def test_a_named_device_twice_or_without_a_name_is_a_field_error() -> None:
    with pytest.raises(SpecError) as twice:
        spec_normalise({"devices": [{"device": "g1"}, {"device": "g1"}]})
    assert twice.value.field == "devices[1].device"
    assert str(twice.value).startswith("Named device 2: device g1 is named twice")
    with pytest.raises(SpecError) as empty:
        spec_normalise({"devices": [{"gib": 4}]})
    assert empty.value.field == "devices[0].device"
    with pytest.raises(SpecError) as bad_gib:
        spec_normalise({"devices": [{"device": "m", "gib": 0}]})
    assert bad_gib.value.field == "devices[0].gib"


@pytest.mark.parametrize("device", [0, -3, 2**63])
def test_a_device_id_outside_a_key_is_a_field_error(device: int) -> None:
    with pytest.raises(SpecError) as refused:
        spec_normalise({"devices": [{"device": device}]})
    assert refused.value.field == "devices[0].device"
