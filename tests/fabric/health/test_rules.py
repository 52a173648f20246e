"""The health rules: damping, duplicates, escalation, recovery. No database."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from fabric.health.rules import (
    DAMPING,
    Action,
    Condition,
    Damping,
    Observation,
    RuleState,
    decide,
    evaluate,
)

HEALTH = Path(__file__).resolve().parents[3] / "fabric" / "health"

GPU = Observation(target_type="device", name="gpu-1", health="ok", state="enabled")


@pytest.mark.parametrize(
    ("module", "may_import"),
    [("conditions.py", set()), ("rules.py", {"fabric.health.conditions"})],
)
def test_the_rules_import_nothing_from_django_or_the_database(
    module: str, may_import: set[str]
) -> None:
    tree = ast.parse((HEALTH / module).read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    assert not {n for n in names if n.split(".")[0] in ("django", "rest_framework", "composer")}
    assert {n for n in names if n.startswith("fabric.")} <= may_import


# --- decisions: damping, duplicates, escalation, recovery -------------------------------------

WARN = Condition("temperature", "warning", "hot")
CRIT = Condition("temperature", "critical", "very hot")
FAILED = Condition("element_failed", "critical", "failed")


def run(rule: str, sequence: list[Condition | None], *, start: float = 0.0, step: float = 5.0,
        damping: Damping = DAMPING) -> list[Action]:  # fmt: skip
    """The actions for a condition (or None) per poll, `step` seconds apart."""
    state = RuleState()
    actions = []
    for i, condition in enumerate(sequence):
        decision = decide(rule, state, condition, now=start + i * step, damping=damping)
        actions.append(decision.action)
        state = decision.state
    return actions


@pytest.mark.parametrize(
    ("rule", "sequence", "expected"),
    [
        # A warning opens after two polls in a row; one poll alone never opens.
        ("temperature", [WARN, None, None], ["pending", "none", "none"]),
        ("temperature", [WARN, WARN, WARN], ["pending", "open", "repeat"]),
        # A failure opens at once.
        ("element_failed", [FAILED, FAILED], ["open", "repeat"]),
        # Duplicates are suppressed while open; recovery closes after two clean polls.
        ("element_failed", [FAILED, FAILED, None, None], ["open", "repeat", "clearing", "close"]),
        # A return before the close keeps the same alert open.
        (
            "element_failed",
            [FAILED, None, FAILED, None, None],
            ["open", "clearing", "repeat", "clearing", "close"],
        ),
        # Severity moves up and down on the open alert.
        (
            "temperature",
            [WARN, WARN, CRIT, WARN, None, None],
            ["pending", "open", "escalate", "deescalate", "clearing", "close"],
        ),
        # A critical temperature still needs two polls (a spike is not a failure).
        ("temperature", [CRIT, CRIT], ["pending", "open"]),
        # The manager closes on the first good answer.
        (
            "manager_unreachable",
            [Condition("manager_unreachable", "critical", "x"), None],
            ["open", "close"],
        ),
    ],
)
def test_decisions_damp_suppress_escalate_and_close(
    rule: str, sequence: list[Condition | None], expected: list[str]
) -> None:
    assert run(rule, sequence) == expected


def test_a_flapping_condition_opens_marked_flapping_and_stays_open_until_quiet() -> None:
    # Bad one poll, clean one poll, again and again: never two polls in a row, so a plain
    # warning would never open; the fourth return within the window opens it, flapping.
    sequence: list[Condition | None] = [WARN, None] * 5
    actions = run("temperature", sequence, step=10)
    assert actions[:7] == ["pending", "none", "pending", "none", "pending", "none", "pending"]
    assert "open" in actions
    opened = actions.index(Action.OPEN)
    state = RuleState()
    for i, condition in enumerate(sequence[: opened + 1]):
        state = decide("temperature", state, condition, now=i * 10).state
    assert state.is_open and state.is_flapping

    # Clean polls do not close it while flaps are recent...
    now = opened * 10.0
    for _ in range(5):
        now += 10
        decision = decide("temperature", state, None, now=now)
        assert decision.action == "clearing"
        state = decision.state
    # ...but once the window passes without a flap, it closes.
    decision = decide("temperature", state, None, now=now + DAMPING.flap_window_s)
    assert decision.action == "close"
    assert not decision.state.is_open and not decision.state.is_flapping


def test_an_open_alert_that_starts_flapping_is_updated_once() -> None:
    damping = Damping(flap_limit=1, close_after=3)
    actions = run("element_failed", [FAILED, None, FAILED, None, FAILED, FAILED], damping=damping)
    assert actions == ["open", "clearing", "repeat", "clearing", "flapping", "repeat"]


def test_returns_outside_the_window_are_not_flaps() -> None:
    far = DAMPING.flap_window_s + 1
    actions = run("temperature", [WARN, None, WARN, None, WARN, None, WARN, None, WARN], step=far)
    assert "open" not in actions


def test_state_is_forgettable_once_nothing_is_open_or_recent() -> None:
    state = decide("temperature", RuleState(), WARN, now=0).state
    assert not state.is_forgettable(0)
    state = decide("temperature", state, None, now=5).state
    assert not state.is_forgettable(5)  # seen recently: a return would be a flap
    assert state.is_forgettable(5 + DAMPING.flap_window_s + 1)
    assert RuleState().is_forgettable(0)


def test_evaluate_covers_remembered_rules_and_may_only_follow_open_alerts() -> None:
    hot = replace(GPU, temperature_c=90, correctable_errors=200)
    open_ecc = RuleState(bad_streak=3, is_open=True, severity="warning", last_bad_at=0.0)
    decisions = evaluate(hot, {"ecc_correctable": open_ecc}, now=5, may_open=False)
    # In maintenance (or folded): the open ECC alert repeats, no temperature alert starts.
    assert set(decisions) == {"ecc_correctable"}
    assert decisions["ecc_correctable"].action == "repeat"

    decisions = evaluate(GPU, {"ecc_correctable": open_ecc}, now=5)
    assert decisions["ecc_correctable"].action == "clearing"
    decisions = evaluate(hot, {}, now=5)
    assert {rule: d.action for rule, d in decisions.items()} == {
        "temperature": "pending",
        "ecc_correctable": "pending",
    }
