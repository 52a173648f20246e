"""A policy registered in one place reaches every reader: the engine (validation, the reach
group cut and its words, the pick on a host), the form's choices, the API's enum and the
spec's validation. No database."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Set

import pytest

import composer.placement.policies as policies
from composer.api.serializers.spec import SPEC_SCHEMA, spec_type_errors
from composer.forms.compositions import CompositionRequestForm
from composer.placement.engine import place
from composer.placement.policies.base import EnclosureKey, Items, PerEnclosure
from composer.placement.request import DeviceItem, Placement, PlacementRequest, Rejection
from composer.placement.snapshot import DeviceInfo, Snapshot
from composer.specs import spec_normalise
from tests.composer.placement.helpers import world


class OneEnclosure(policies.Policy):
    """Test-only: every device of an item from one enclosure."""

    name = "one_enclosure"
    label = "All of an item from one enclosure"
    help = "every device of an item from one enclosure"
    words = "from one enclosure"
    relax = "'from one enclosure'"
    check = "domain"
    reason = "one enclosure"

    def group_fits(
        self, request: PlacementRequest, snapshot: Snapshot, items: Items, members: Set[str]
    ) -> bool:
        return all(
            any(len(v) >= item.count for e, v in found.items() if e in members)
            for item, found in items
        )

    def choose(
        self,
        count: int,
        per_enclosure: PerEnclosure,
        order: EnclosureKey,
        switches_of: Callable[[str], tuple[str, ...]],
    ) -> list[DeviceInfo] | None:
        fitting = sorted((e for e, v in per_enclosure.items() if len(v) >= count), key=order)
        return list(per_enclosure[fitting[0]][:count]) if fitting else None


@pytest.fixture
def one_enclosure() -> Iterator[policies.Policy]:
    with policies.registered(OneEnclosure()) as policy:
        yield policy


def test_a_registered_policy_is_a_choice_of_the_form_the_api_and_the_spec(
    one_enclosure: policies.Policy,
) -> None:
    field = CompositionRequestForm.base_fields["policy"]
    assert ("one_enclosure", "All of an item from one enclosure") in list(field.choices)  # type: ignore[attr-defined]
    assert "one_enclosure" in SPEC_SCHEMA["properties"]["policy"]["enum"]
    assert not spec_type_errors({"policy": "one_enclosure"})
    assert (
        spec_normalise({"items": [{"kind": "gpu", "count": 2}], "policy": "one_enclosure"})[
            "policy"
        ]
        == "one_enclosure"
    )


def test_an_unregistered_policy_is_no_choice_again() -> None:
    with policies.registered(OneEnclosure()):
        pass
    field = CompositionRequestForm.base_fields["policy"]
    assert "one_enclosure" not in dict(field.choices)  # type: ignore[attr-defined]
    assert "one_enclosure" not in SPEC_SCHEMA["properties"]["policy"]["enum"]
    request = PlacementRequest(items=(DeviceItem("gpu", 1),), policy="one_enclosure")
    refused = place(request, world())
    assert isinstance(refused, Rejection) and refused.code == "invalid"


def test_the_engine_places_under_a_registered_policy(one_enclosure: policies.Policy) -> None:
    # a1: 4 GPUs and a2: 2 behind leaf 1, b1: 4 behind leaf 2; a2 has 2 free of 4
    request = PlacementRequest(items=(DeviceItem("gpu", 3),), policy="one_enclosure")
    result = place(request, world(gpus={"a1": 4, "a2": 2, "b1": 0}))
    assert isinstance(result, Placement), result
    assert {p.enclosure for p in result.devices} == {"enclosure:a1"}
    # "none" would have taken 5 from two enclosures; this policy refuses, in its words.
    five = PlacementRequest(items=(DeviceItem("gpu", 5),), policy="one_enclosure")
    refused = place(five, world(gpus={"a1": 4, "a2": 2, "b1": 0}))
    assert isinstance(refused, Rejection), refused
    assert refused.code == "domain_conflict"
    assert refused.message == "No host reaches 5 GPUs from one enclosure."
    assert ("hosts: one enclosure", 2, 0) in refused.funnel
    placed = place(
        PlacementRequest(items=(DeviceItem("gpu", 5),)), world(gpus={"a1": 4, "a2": 2, "b1": 0})
    )
    assert isinstance(placed, Placement)
