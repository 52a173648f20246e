"""The health conditions: one sample against the table of thresholds. No database."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabric.health.conditions import (
    RULES,
    Condition,
    Observation,
    conditions,
    explained_by_ancestor,
    manager_condition,
)

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
    assert all(c.rule in RULES and c.message for c in found)


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
