"""The composition lifecycle: allowed moves, refusals, compare-and-set, the audit trail."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState
from composer.errors import InvalidTransition, StaleState
from composer.models import Composition, StateChange
from composer.states import COMPOSITION_ALLOWED, composition_transition

pytestmark = pytest.mark.django_db
S = CompositionState


@pytest.fixture
def composition(acme: Any) -> Composition:
    return Composition.objects.create(tenant=acme, name="c1", spec={})


def test_every_state_has_a_row_in_the_table() -> None:
    assert set(COMPOSITION_ALLOWED) == set(S)
    assert COMPOSITION_ALLOWED[S.RELEASED] == COMPOSITION_ALLOWED[S.REJECTED] == frozenset()


def test_the_happy_path_is_audited_with_who_why_and_from_where(
    composition: Composition, alice: Any
) -> None:
    for to in (S.PLACING, S.BINDING, S.READY, S.DECOMPOSING, S.RELEASED):
        composition_transition(
            composition, to, reason=f"to {to}", actor=alice, remote_addr="192.0.2.1"
        )

    composition.refresh_from_db()
    assert composition.state == S.RELEASED
    trail = list(
        StateChange.objects.filter(composition=composition).values_list(
            "from_state", "to_state", "actor", "remote_addr"
        )
    )
    assert trail == [
        ("requested", "placing", alice.pk, "192.0.2.1"),
        ("placing", "binding", alice.pk, "192.0.2.1"),
        ("binding", "ready", alice.pk, "192.0.2.1"),
        ("ready", "decomposing", alice.pk, "192.0.2.1"),
        ("decomposing", "released", alice.pk, "192.0.2.1"),
    ]


@pytest.mark.parametrize(
    ("path", "to"),
    [
        ((), S.READY),
        ((S.PLACING, S.BINDING, S.READY), S.FAILED),
        ((S.PLACING, S.BINDING, S.READY), S.RELEASED),
        ((S.PLACING, S.REJECTED), S.PLACING),
        ((S.PLACING, S.BINDING), S.DECOMPOSING),
    ],
)
def test_moves_outside_the_table_are_refused_and_not_audited(
    composition: Composition, path: tuple[S, ...], to: S
) -> None:
    for step in path:
        composition_transition(composition, step, reason="setup")
    before = StateChange.objects.count()

    with pytest.raises(InvalidTransition) as caught:
        composition_transition(composition, to, reason="nope")

    assert caught.value.field == "state"
    assert StateChange.objects.count() == before


def test_a_stale_instance_loses_the_compare_and_set(composition: Composition) -> None:
    other = Composition.objects.get(pk=composition.pk)
    composition_transition(other, S.PLACING, reason="first")

    with pytest.raises(StaleState):
        composition_transition(composition, S.REJECTED, reason="second")

    composition.refresh_from_db()
    assert composition.state == S.PLACING
    assert StateChange.objects.filter(composition=composition).count() == 1


def test_a_resize_leaves_ready_and_comes_back_to_ready_and_nothing_else(
    composition: Composition,
) -> None:
    for to in (S.PLACING, S.BINDING, S.READY, S.RESIZING):
        composition_transition(composition, to, reason=f"to {to}")

    for refused in (S.DECOMPOSING, S.DEGRADED, S.HEALING, S.FAILED, S.RELEASED):
        with pytest.raises(InvalidTransition):
            composition_transition(composition, refused, reason="nope")
    composition_transition(composition, S.READY, reason="Resized")
    assert composition.state == S.READY


def test_every_state_is_shown_and_served_through_redfish() -> None:
    from composer.choices import ACTIVE_COMPOSITION_STATES, LIVE_COMPOSITION_STATES
    from composer.redfish.event_records import SYSTEM_STATE
    from composer.redfish.systems import LIFECYCLE, SYSTEM_STATES
    from composer.templatetags.composer_tags import composition_badge

    # Every state a composed system can be in (a hold is none) has its Redfish status.
    assert set(LIFECYCLE) >= SYSTEM_STATES and set(SYSTEM_STATE) >= SYSTEM_STATES
    assert LIFECYCLE[S.RESIZING] == ("Updating", "OK", "On")
    assert S.RESIZING in ACTIVE_COMPOSITION_STATES and S.RESIZING in LIVE_COMPOSITION_STATES
    assert S.RESIZING in SYSTEM_STATES  # still a composed system while it resizes
    for state in S:
        assert "bi-dot" not in composition_badge(state), state
