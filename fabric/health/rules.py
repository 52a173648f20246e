"""Health rules: from conditions to alert decisions, with flap damping.

Pure Python: nothing here imports Django or touches a database (a test checks the imports),
so every damping case is tested table-driven, and `poll.py` does the I/O around these
functions. Frozen dataclasses in, frozen decisions out. What one sample means (the rule
keys, `Observation`, the thresholds, `conditions()`) is `conditions.py`; this module
decides what to do about a condition over time, so it keeps what was remembered between
polls and is the only one that needs a clock. Its `__all__` also re-exports the names of
`conditions.py` the rest of the code reads as `rules.X`: `fabric.health.rules` stays the one
import for the health rules.

Two steps per element and poll:

1. `conditions(observation)` (`conditions.py`) says which conditions hold now, each with a
   severity and a message, by the thresholds of one table (`THRESHOLDS`).

2. `decide(rule, previous, condition, now=...)` turns a condition (or its absence) and what
   was remembered about that element and rule (`RuleState`) into an `Action`, with flap
   damping (`DAMPING`):

   - a condition opens an alert after holding for `open_after` (2) consecutive polls;
     failures, uncorrectable errors, power loss and an unreachable manager open at once;
   - while open, the same condition again is a suppressed duplicate (REPEAT: the poller
     bumps `occurrences` and `last_seen_at`); a different severity ESCALATEs or
     DEESCALATEs the open alert;
   - an open alert closes after `close_after` (2) consecutive clean polls (1 for the
     manager: one good answer proves it is back);
   - a condition that comes back within `flap_window_s` (10 min) of its last sighting is a
     flap; more than `flap_limit` (3) flaps in the window mark the alert FLAPPING, open it
     at once if it was not, and keep it open until the window passes with no flap.

`evaluate(observation, previous, now=...)` runs both steps for every rule of one element.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from fabric.health.conditions import (
    ECC_CORRECTABLE,
    ECC_UNCORRECTABLE,
    ELEMENT_DEGRADED,
    ELEMENT_FAILED,
    LINK_DOWNTRAINED,
    LINK_ERRORS,
    MANAGER_UNREACHABLE,
    POWER_OFF,
    RULES,
    SEVERITY_RANK,
    TEMPERATURE,
    THRESHOLDS,
    Condition,
    Observation,
    TemperatureLimits,
    Thresholds,
    conditions,
    explained_by_ancestor,
    manager_condition,
)

__all__ = [
    "DAMPING",
    "ECC_CORRECTABLE",
    "ECC_UNCORRECTABLE",
    "ELEMENT_DEGRADED",
    "ELEMENT_FAILED",
    "LINK_DOWNTRAINED",
    "LINK_ERRORS",
    "MANAGER_UNREACHABLE",
    "POWER_OFF",
    "RULES",
    "TEMPERATURE",
    "THRESHOLDS",
    "Action",
    "Condition",
    "Damping",
    "Decision",
    "Observation",
    "RuleState",
    "TemperatureLimits",
    "Thresholds",
    "conditions",
    "decide",
    "evaluate",
    "explained_by_ancestor",
    "manager_condition",
]


@dataclass(frozen=True, slots=True)
class Damping:
    """How long a condition must hold before an alert opens and be gone before it closes."""

    open_after: int = 2
    close_after: int = 2
    flap_limit: int = 3
    flap_window_s: float = 600.0
    open_at_once: frozenset[str] = frozenset(
        {ELEMENT_FAILED, ECC_UNCORRECTABLE, POWER_OFF, MANAGER_UNREACHABLE}
    )
    close_at_once: frozenset[str] = frozenset({MANAGER_UNREACHABLE})

    def opens_after(self, rule: str) -> int:
        return 1 if rule in self.open_at_once else max(1, self.open_after)

    def closes_after(self, rule: str) -> int:
        return 1 if rule in self.close_at_once else max(1, self.close_after)


DAMPING = Damping()


@dataclass(frozen=True, slots=True)
class RuleState:
    """What the rules remember about one element and rule between polls.

    `bad_streak` / `clean_streak`: consecutive polls with / without the condition.
    `is_open` / `severity`: whether an alert is open, and at what severity. `flaps`: when
    (epoch seconds) the condition came back within the flap window; `last_bad_at`: when it
    last held. The default is "nothing known": a healthy element needs no stored state.
    """

    bad_streak: int = 0
    clean_streak: int = 0
    is_open: bool = False
    severity: str = ""
    is_flapping: bool = False
    flaps: tuple[float, ...] = ()
    last_bad_at: float | None = None

    def is_forgettable(self, now: float, damping: Damping = DAMPING) -> bool:
        """Nothing worth keeping: no alert, no streak, no flap or sighting in the window."""
        return (
            not self.is_open
            and self.bad_streak == 0
            and not _recent(self.flaps, now, damping)
            and (self.last_bad_at is None or now - self.last_bad_at > damping.flap_window_s)
        )


class Action(StrEnum):
    """What the poller does with the alert of one element and rule."""

    NONE = "none"  # healthy, no alert: nothing to do
    PENDING = "pending"  # the condition holds, not yet long enough to open
    OPEN = "open"  # open a new alert
    REPEAT = "repeat"  # the open alert's condition again: suppressed duplicate
    ESCALATE = "escalate"  # the open alert's severity rises
    DEESCALATE = "deescalate"  # the open alert's severity falls
    FLAPPING = "flapping"  # the open alert is now marked flapping
    CLEARING = "clearing"  # the condition is gone; the alert stays open for now
    CLOSE = "close"  # recovered for long enough: close the alert


# Actions that change an open alert's visible fields (an event for the browsers).
ALERT_CHANGES = frozenset({Action.OPEN, Action.ESCALATE, Action.DEESCALATE, Action.FLAPPING})


@dataclass(frozen=True, slots=True)
class Decision:
    """The action for one element and rule, the state to remember, and the alert's text."""

    action: Action
    state: RuleState
    severity: str = ""
    message: str = ""


def _recent(flaps: tuple[float, ...], now: float, damping: Damping) -> tuple[float, ...]:
    return tuple(t for t in flaps if now - t <= damping.flap_window_s)


def decide(
    rule: str,
    previous: RuleState,
    condition: Condition | None,
    *,
    now: float,
    damping: Damping = DAMPING,
) -> Decision:
    """What to do with the alert of one element and `rule`, given the condition now (None
    when it does not hold) and what was remembered (see the module docstring)."""
    flaps = _recent(previous.flaps, now, damping)
    if condition is not None:
        came_back = (
            previous.bad_streak == 0
            and previous.last_bad_at is not None
            and now - previous.last_bad_at <= damping.flap_window_s
        )
        if came_back:
            flaps = (*flaps, now)
        flapping = previous.is_flapping or len(flaps) > damping.flap_limit
        state = RuleState(
            bad_streak=previous.bad_streak + 1,
            clean_streak=0,
            is_open=previous.is_open,
            severity=previous.severity,
            is_flapping=flapping,
            flaps=flaps,
            last_bad_at=now,
        )
        if previous.is_open:
            before = SEVERITY_RANK.get(previous.severity, 0)
            after = SEVERITY_RANK[condition.severity]
            if after > before:
                action = Action.ESCALATE
            elif after < before:
                action = Action.DEESCALATE
            elif flapping and not previous.is_flapping:
                action = Action.FLAPPING
            else:
                action = Action.REPEAT
            state = replace(state, severity=condition.severity)
        elif flapping or state.bad_streak >= damping.opens_after(rule):
            action = Action.OPEN
            state = replace(state, is_open=True, severity=condition.severity)
        else:
            action = Action.PENDING
        return Decision(action, state, condition.severity, condition.message)

    clean = previous.clean_streak + 1
    if not previous.is_open:
        return Decision(
            Action.NONE,
            RuleState(clean_streak=clean, flaps=flaps, last_bad_at=previous.last_bad_at),
        )
    quiet = not flaps  # no flap in the window: a flapping alert may close now
    if clean >= damping.closes_after(rule) and (not previous.is_flapping or quiet):
        return Decision(
            Action.CLOSE,
            RuleState(clean_streak=clean, flaps=flaps, last_bad_at=previous.last_bad_at),
            previous.severity,
        )
    return Decision(
        Action.CLEARING,
        replace(previous, bad_streak=0, clean_streak=clean, flaps=flaps),
        previous.severity,
    )


def evaluate(
    observation: Observation,
    previous: Mapping[str, RuleState],
    *,
    now: float,
    may_open: bool = True,
    thresholds: Thresholds = THRESHOLDS,
    damping: Damping = DAMPING,
) -> dict[str, Decision]:
    """Decisions for every rule of one element that holds now or was remembered.

    With `may_open` false (the element is in maintenance, or its trouble is an ancestor's),
    conditions only count for rules whose alert is already open: those still escalate and
    close on recovery, but nothing new opens or starts pending.
    """
    found = {c.rule: c for c in conditions(observation, thresholds)}
    if not may_open:
        found = {rule: c for rule, c in found.items() if previous.get(rule, _NOTHING).is_open}
    decisions = {}
    for rule in (*found, *(r for r in previous if r not in found)):
        decisions[rule] = decide(
            rule, previous.get(rule, _NOTHING), found.get(rule), now=now, damping=damping
        )
    return decisions


_NOTHING = RuleState()
