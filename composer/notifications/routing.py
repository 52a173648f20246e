"""Which routes an alert goes to and which silences hold it back: pure rules, no queries.

The caller (`composer.notifications.evaluate`) loads the routes, silences and audiences once
per health poll and asks these questions of plain values, so that the rules are tested
without a database and read the same wherever they are applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = [
    "SEVERITY_RANK",
    "AlertFacts",
    "RouteLike",
    "SilenceLike",
    "route_hears",
    "route_matches",
    "silenced",
]

# How severe, in order: a route's floor lets through its own severity and those above.
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True)
class AlertFacts:
    """What the rules need to know of an alert."""

    severity: str
    rule: str
    source_type: str
    source_id: int


class RouteLike(Protocol):
    @property
    def tenant_id(self) -> int | None: ...
    @property
    def min_severity(self) -> str: ...
    @property
    def rules(self) -> Sequence[str]: ...
    @property
    def source_types(self) -> Sequence[str]: ...
    @property
    def is_enabled(self) -> bool: ...


class SilenceLike(Protocol):
    @property
    def tenant_id(self) -> int | None: ...
    @property
    def rule(self) -> str: ...
    @property
    def source_type(self) -> str: ...
    @property
    def source_id(self) -> int | None: ...
    @property
    def starts_at(self) -> datetime: ...
    @property
    def ends_at(self) -> datetime: ...


def route_matches(route: RouteLike, alert: AlertFacts) -> bool:
    """Whether an enabled `route` wants `alert`: its severity at or above the route's floor,
    its rule among the route's rules (none listed: any) and its kind of source among the
    route's (none listed: any)."""
    if not route.is_enabled:
        return False
    floor = SEVERITY_RANK.get(route.min_severity, 0)
    if SEVERITY_RANK.get(alert.severity, -1) < floor:
        return False
    if route.rules and alert.rule not in route.rules:
        return False
    return not (route.source_types and alert.source_type not in route.source_types)


def route_hears(route: RouteLike, *, audience: Iterable[int]) -> bool:
    """Whether the route's owner may hear of the alert at all: operators hear of every alert,
    a tenant only of one that hurt it (the alert's audience)."""
    return route.tenant_id is None or route.tenant_id in set(audience)


def silenced(
    alert: AlertFacts, silences: Iterable[SilenceLike], *, owner: int | None, at: datetime
) -> bool:
    """Whether one of `silences`, owned by `owner` (a tenant id; None: operators) and in
    force at `at`, covers `alert`: its rule (when it names one) and its element (when it
    names one) both match. An expired or not yet started silence covers nothing."""
    for silence in silences:
        if silence.tenant_id != owner:
            continue
        if not (silence.starts_at <= at < silence.ends_at):
            continue
        if silence.rule and silence.rule != alert.rule:
            continue
        if silence.source_id is not None and (
            silence.source_type != alert.source_type or silence.source_id != alert.source_id
        ):
            continue
        return True
    return False
