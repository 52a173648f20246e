"""Which routes want an alert and which silences hold it back: the pure rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from composer.notifications.routing import AlertFacts, route_hears, route_matches, silenced

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
SWITCH_FAILED = AlertFacts(
    severity="critical", rule="element_failed", source_type="switch", source_id=7
)
LINK_WARNING = AlertFacts(severity="warning", rule="link_errors", source_type="link", source_id=3)


@dataclass
class Route:
    tenant_id: int | None = None
    min_severity: str = "warning"
    rules: list[str] = field(default_factory=list)
    source_types: list[str] = field(default_factory=list)
    is_enabled: bool = True


@dataclass
class Silence:
    tenant_id: int | None = None
    rule: str = ""
    source_type: str = ""
    source_id: int | None = None
    starts_at: datetime = NOW - timedelta(hours=1)
    ends_at: datetime = NOW + timedelta(hours=1)


@pytest.mark.parametrize(
    ("floor", "severity", "matches"),
    [
        ("info", "info", True),
        ("warning", "info", False),
        ("warning", "warning", True),
        ("warning", "critical", True),
        ("critical", "warning", False),
        ("critical", "critical", True),
    ],
)
def test_a_route_takes_its_severity_and_those_above(
    floor: str, severity: str, matches: bool
) -> None:
    alert = AlertFacts(severity=severity, rule="element_failed", source_type="switch", source_id=1)
    assert route_matches(Route(min_severity=floor), alert) is matches


def test_rules_and_kinds_of_source_narrow_a_route_and_none_listed_means_any() -> None:
    assert route_matches(Route(), SWITCH_FAILED)
    assert route_matches(Route(rules=["element_failed"]), SWITCH_FAILED)
    assert not route_matches(Route(rules=["temperature"]), SWITCH_FAILED)
    assert route_matches(Route(source_types=["switch", "link"]), SWITCH_FAILED)
    assert not route_matches(Route(source_types=["device"]), SWITCH_FAILED)


def test_a_disabled_route_wants_nothing() -> None:
    assert not route_matches(Route(is_enabled=False), SWITCH_FAILED)


def test_operators_hear_every_alert_a_tenant_only_those_that_hurt_it() -> None:
    assert route_hears(Route(tenant_id=None), audience=())
    assert route_hears(Route(tenant_id=1), audience={1, 2})
    assert not route_hears(Route(tenant_id=3), audience={1, 2})
    assert not route_hears(Route(tenant_id=1), audience=())


def test_a_rule_silence_covers_that_rule_on_every_element() -> None:
    silence = Silence(rule="element_failed")
    assert silenced(SWITCH_FAILED, [silence], owner=None, at=NOW)
    assert not silenced(LINK_WARNING, [silence], owner=None, at=NOW)


def test_an_element_silence_covers_every_rule_on_that_element_only() -> None:
    silence = Silence(source_type="switch", source_id=7)
    assert silenced(SWITCH_FAILED, [silence], owner=None, at=NOW)
    other_switch = AlertFacts(
        severity="critical", rule="element_failed", source_type="switch", source_id=8
    )
    assert not silenced(other_switch, [silence], owner=None, at=NOW)
    same_id_other_kind = AlertFacts(
        severity="critical", rule="element_failed", source_type="link", source_id=7
    )
    assert not silenced(same_id_other_kind, [silence], owner=None, at=NOW)


def test_a_rule_on_an_element_needs_both() -> None:
    silence = Silence(rule="temperature", source_type="switch", source_id=7)
    assert not silenced(SWITCH_FAILED, [silence], owner=None, at=NOW)
    hot = AlertFacts(severity="warning", rule="temperature", source_type="switch", source_id=7)
    assert silenced(hot, [silence], owner=None, at=NOW)


def test_an_expired_or_future_silence_covers_nothing() -> None:
    expired = Silence(rule="element_failed", starts_at=NOW - timedelta(hours=2), ends_at=NOW)
    future = Silence(rule="element_failed", starts_at=NOW + timedelta(minutes=1))
    assert not silenced(SWITCH_FAILED, [expired, future], owner=None, at=NOW)
    assert silenced(SWITCH_FAILED, [expired], owner=None, at=NOW - timedelta(minutes=1))


def test_a_silence_mutes_its_owner_s_routes_only() -> None:
    tenants = Silence(tenant_id=1, rule="element_failed")
    assert silenced(SWITCH_FAILED, [tenants], owner=1, at=NOW)
    assert not silenced(SWITCH_FAILED, [tenants], owner=None, at=NOW)
    assert not silenced(SWITCH_FAILED, [tenants], owner=2, at=NOW)
    operators = Silence(rule="element_failed")
    assert not silenced(SWITCH_FAILED, [operators], owner=1, at=NOW)
