"""The health rules: thresholds, damping, duplicates, escalation, recovery. No database."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from fabric.health import rules
from fabric.health.rules import (
    DAMPING,
    Action,
    Condition,
    Damping,
    Observation,
    RuleState,
    conditions,
    decide,
    evaluate,
    explained_by_ancestor,
    manager_condition,
)

RULES_PY = Path(__file__).resolve().parents[3] / "fabric" / "health" / "rules.py"

GPU = Observation(target_type="device", name="gpu-1", health="ok", state="enabled")
LINK = Observation(
    target_type="link",
    name="sw:p1 <-> enc:p0",
    health="ok",
    state="up",
    link_width=16,
    link_width_nominal=16,
    link_speed_gts=32,
    link_speed_nominal_gts=32,
)


def test_the_rules_import_nothing_from_django_or_the_database() -> None:
    tree = ast.parse(RULES_PY.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    assert not {n for n in names if n.split(".")[0] in ("django", "rest_framework", "composer")}
    assert not {n for n in names if n.startswith("fabric.")}


# --- conditions: one table of thresholds ------------------------------------------------------


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        (GPU, []),
        (replace(GPU, temperature_c=84.9), []),
        (replace(GPU, temperature_c=85), [("temperature", "warning")]),
        (replace(GPU, temperature_c=95), [("temperature", "critical")]),
        (replace(GPU, target_type="switch", temperature_c=80), [("temperature", "warning")]),
        (replace(GPU, target_type="switch", temperature_c=79), []),
        (replace(GPU, target_type="rack", temperature_c=90), [("temperature", "critical")]),
        (replace(GPU, correctable_errors=99), []),
        (replace(GPU, correctable_errors=100), [("ecc_correctable", "warning")]),
        (replace(GPU, uncorrectable_errors=1), [("ecc_uncorrectable", "critical")]),
        (replace(GPU, poison_count=2), [("ecc_uncorrectable", "critical")]),
        (replace(GPU, uncorrectable_errors=0, poison_count=0), []),
        (replace(GPU, power_state="off"), [("power_off", "critical")]),
        (replace(GPU, power_state="off", expected_on=False), []),
        (replace(GPU, power_state="on"), []),
        (replace(GPU, health="warning"), [("element_degraded", "warning")]),
        (replace(GPU, health="unknown"), []),
        (replace(GPU, health="critical"), [("element_failed", "critical")]),
        (replace(GPU, state="Unavailable"), [("element_failed", "critical")]),
        (replace(LINK, state="down"), [("element_failed", "critical")]),
        (LINK, []),
        (replace(LINK, link_errors=9, link_retrains=2), []),
        (replace(LINK, link_errors=10), [("link_errors", "warning")]),
        (replace(LINK, link_retrains=3), [("link_errors", "warning")]),
        (replace(LINK, link_width=8), [("link_downtrained", "warning")]),
        (replace(LINK, link_speed_gts=16), [("link_downtrained", "warning")]),
        (replace(LINK, link_width=8, link_width_nominal=None), []),
    ],
)
def test_conditions_follow_the_threshold_table(
    observation: Observation, expected: list[tuple[str, str]]
) -> None:
    found = conditions(observation)
    assert [(c.rule, c.severity) for c in found] == expected
    assert all(c.rule in rules.RULES and c.message for c in found)


def test_a_failed_element_reports_only_its_failure_with_its_poison_in_the_message() -> None:
    memory = replace(
        GPU,
        target_type="device",
        name="mem-1",
        health="critical",
        detail="failed (injected fault)",
        temperature_c=0,
        power_state="off",
        poison_count=4,
        uncorrectable_errors=2,
    )
    (only,) = conditions(memory)
    assert (only.rule, only.severity) == ("element_failed", "critical")
    assert only.message == (
        "Device mem-1 failed: failed (injected fault) "
        "(2 uncorrectable ECC error(s), 4 poisoned line(s))"
    )


def test_a_degraded_element_is_explained_by_its_specific_conditions_first() -> None:
    degraded_link = replace(LINK, health="warning", link_width=8, link_errors=14, link_retrains=4)
    found = conditions(degraded_link)
    assert {c.rule for c in found} == {"link_downtrained", "link_errors"}
    assert "x8 of x16" in next(c.message for c in found if c.rule == "link_downtrained")


def test_conditions_come_worst_first() -> None:
    hot_and_erroring = replace(GPU, temperature_c=96, correctable_errors=500)
    assert [c.severity for c in conditions(hot_and_erroring)] == ["critical", "warning"]


def test_an_unreachable_manager_is_critical() -> None:
    assert manager_condition(None) is None
    found = manager_condition("timed out", name="fm-1")
    assert found == Condition(
        "manager_unreachable", "critical", "Fabric manager fm-1 unreachable: timed out"
    )


@pytest.mark.parametrize(
    ("health", "ancestors", "folded"),
    [
        ("critical", ["critical"], True),  # a device in a failed enclosure
        ("warning", ["critical"], True),
        ("warning", ["warning"], True),  # a degraded feed degrades what it powers
        ("critical", ["warning"], False),  # a failed device in a degraded enclosure: its own
        ("critical", ["ok", "ok"], False),
        ("critical", ["ok", "critical"], True),  # a link whose switch failed
        ("ok", ["critical"], False),
        ("critical", [], False),
    ],
)
def test_trouble_folds_into_an_ancestor_at_least_as_unwell(
    health: str, ancestors: list[str], folded: bool
) -> None:
    assert explained_by_ancestor(health, ancestors) is folded


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
