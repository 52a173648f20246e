"""Health conditions: what one element's sample means, by one table of thresholds.

Pure Python: nothing here imports Django or touches a database (a test checks the imports).
It stands apart from `rules.py`, which decides what to do about a condition over time: this
module only reads one sample, so a threshold can change without touching the damping, and
the rule keys and `Observation` have one home that the poller, the wording and the API share.

`conditions(observation)` says which conditions hold now, each with a severity and a
message. The thresholds are in one table, `THRESHOLDS`:

| rule | holds when | severity |
|---|---|---|
| `element_failed` | health critical, or state unavailable / down / offline | critical |
| `temperature` | `temperature_c` >= the warning / critical limit of its kind | warn / crit |
| `ecc_uncorrectable` | `uncorrectable_errors` > 0 or `poison_count` > 0 | critical |
| `ecc_correctable` | `correctable_errors` >= 100 in the manager's current period | warning |
| `link_errors` | `link_errors` >= 10 or `link_retrains` >= 3 in the current period | warning |
| `link_downtrained` | link width or speed below the link's nominal (maximum) | warning |
| `power_off` | power state off while the element should be on | critical |
| `element_degraded` | health is warning and no rule above explains why | warning |
| `manager_unreachable` | the driver call failed (`manager_condition`) | critical |

Temperature limits by kind (warning / critical, °C): devices 85 / 95 (GPUs throttle
around 87), switches, hosts and enclosures 80 / 90 (inlet and ASIC sensors).
Error counters are per period as the manager reports them (Redfish's
`CurrentPeriod`), so no rule needs the previous sample. A failed element reports only
`element_failed`: its other readings (temperature 0, power off) follow from the failure
and would only repeat it; a failed memory device's poison count goes into the message.
`explained_by_ancestor` says when an element's trouble is what it inherited from a reported
fault, so that its conditions fold into that fault's alert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "CRITICAL",
    "ECC_CORRECTABLE",
    "ECC_UNCORRECTABLE",
    "ELEMENT_DEGRADED",
    "ELEMENT_FAILED",
    "HEALTH_RANK",
    "INFO",
    "LINK_DOWNTRAINED",
    "LINK_ERRORS",
    "MANAGER_UNREACHABLE",
    "POWER_OFF",
    "RULES",
    "SEVERITY_RANK",
    "TEMPERATURE",
    "THRESHOLDS",
    "WARNING",
    "Condition",
    "Observation",
    "TemperatureLimits",
    "Thresholds",
    "conditions",
    "explained_by_ancestor",
    "manager_condition",
]

# Severities: the values of fabric.choices.AlertSeverity, spelt out so this module stays pure.
INFO = "info"
WARNING = "warning"
CRITICAL = "critical"
SEVERITY_RANK = {"": 0, INFO: 1, WARNING: 2, CRITICAL: 3}
# Health values (fabric.choices.Health); unknown counts as nothing known to be wrong.
HEALTH_RANK = {"ok": 0, "unknown": 0, "warning": 1, "critical": 2}

# Rule keys, stored in Alert.rule.
ELEMENT_FAILED = "element_failed"
ELEMENT_DEGRADED = "element_degraded"
TEMPERATURE = "temperature"
ECC_UNCORRECTABLE = "ecc_uncorrectable"
ECC_CORRECTABLE = "ecc_correctable"
LINK_ERRORS = "link_errors"
LINK_DOWNTRAINED = "link_downtrained"
POWER_OFF = "power_off"
MANAGER_UNREACHABLE = "manager_unreachable"

RULES: dict[str, str] = {
    ELEMENT_FAILED: "Element failed",
    ELEMENT_DEGRADED: "Element degraded",
    TEMPERATURE: "Temperature",
    ECC_UNCORRECTABLE: "Uncorrectable memory errors",
    ECC_CORRECTABLE: "Correctable memory errors",
    LINK_ERRORS: "Link errors",
    LINK_DOWNTRAINED: "Link downtrained",
    POWER_OFF: "Powered off",
    MANAGER_UNREACHABLE: "Fabric manager unreachable",
}

# Operational states (the manager's words, lower-cased) that mean "not working".
DOWN_STATES = frozenset({"unavailable", "down", "offline", "disabled"})


@dataclass(frozen=True, slots=True)
class TemperatureLimits:
    """Warning and critical temperatures of one kind of element, in °C."""

    warning_c: float
    critical_c: float


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Every threshold the rules use (see the module docstring for the table)."""

    temperature: Mapping[str, TemperatureLimits] = field(
        default_factory=lambda: {
            "device": TemperatureLimits(85.0, 95.0),
            "switch": TemperatureLimits(80.0, 90.0),
            "host": TemperatureLimits(80.0, 90.0),
            "enclosure": TemperatureLimits(80.0, 90.0),
        }
    )
    temperature_default: TemperatureLimits = TemperatureLimits(80.0, 90.0)
    correctable_errors: float = 100.0  # per period
    link_errors: float = 10.0  # per period
    link_retrains: float = 3.0  # per period

    def temperature_of(self, target_type: str) -> TemperatureLimits:
        return self.temperature.get(target_type, self.temperature_default)


THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class Observation:
    """One element's health at one poll, as the rules read it (a stored sample's fields).

    Metrics the manager did not report are None. `link_*_nominal` are what the link should
    train at (its ports' width and speed). `expected_on` is false for an element an operator
    took out of service, whose power may be off on purpose.
    """

    target_type: str
    name: str = ""
    health: str = "unknown"
    state: str = ""
    detail: str = ""
    temperature_c: float | None = None
    correctable_errors: float | None = None
    uncorrectable_errors: float | None = None
    poison_count: float | None = None
    link_errors: float | None = None
    link_retrains: float | None = None
    link_width: float | None = None
    link_width_nominal: float | None = None
    link_speed_gts: float | None = None
    link_speed_nominal_gts: float | None = None
    power_state: str = ""  # "on" | "off" | "" (not reported)
    utilisation_pct: float | None = None
    expected_on: bool = True

    @property
    def label(self) -> str:
        """ "Switch cxl-leaf-a": how messages name the element."""
        kind = self.target_type.replace("_", " ")
        return f"{kind[:1].upper()}{kind[1:]} {self.name}".strip()


@dataclass(frozen=True, slots=True)
class Condition:
    """A rule that holds now: its key, how bad, and a sentence for people."""

    rule: str
    severity: str
    message: str


def _n(value: float) -> str:
    return f"{value:g}"


def _memory_errors(obs: Observation) -> str:
    parts = []
    if obs.uncorrectable_errors:
        parts.append(f"{_n(obs.uncorrectable_errors)} uncorrectable ECC error(s)")
    if obs.poison_count:
        parts.append(f"{_n(obs.poison_count)} poisoned line(s)")
    return ", ".join(parts)


def conditions(obs: Observation, thresholds: Thresholds = THRESHOLDS) -> tuple[Condition, ...]:
    """The conditions that hold for `obs` now (empty when it is healthy), worst first."""
    label = obs.label
    if obs.health == "critical" or obs.state.lower() in DOWN_STATES:
        why = obs.detail or (f"reported {obs.state}" if obs.state else "reported critical")
        memory = _memory_errors(obs)
        return (
            Condition(
                ELEMENT_FAILED, CRITICAL, f"{label} failed: {why}{f' ({memory})' if memory else ''}"
            ),
        )
    found: list[Condition] = []
    if obs.power_state == "off" and obs.expected_on:
        found.append(Condition(POWER_OFF, CRITICAL, f"{label} is powered off"))
    memory = _memory_errors(obs)
    if memory:
        found.append(Condition(ECC_UNCORRECTABLE, CRITICAL, f"{label}: {memory}"))
    if obs.temperature_c is not None:
        limits = thresholds.temperature_of(obs.target_type)
        if obs.temperature_c >= limits.critical_c:
            found.append(
                Condition(
                    TEMPERATURE,
                    CRITICAL,
                    f"{label} at {_n(obs.temperature_c)} °C "
                    f"(critical at {_n(limits.critical_c)} °C)",
                )
            )
        elif obs.temperature_c >= limits.warning_c:
            found.append(
                Condition(
                    TEMPERATURE,
                    WARNING,
                    f"{label} at {_n(obs.temperature_c)} °C (warning at {_n(limits.warning_c)} °C)",
                )
            )
    if obs.correctable_errors is not None and obs.correctable_errors >= (
        thresholds.correctable_errors
    ):
        found.append(
            Condition(
                ECC_CORRECTABLE,
                WARNING,
                f"{label}: {_n(obs.correctable_errors)} correctable ECC errors this period "
                f"(warning at {_n(thresholds.correctable_errors)})",
            )
        )
    link_parts = []
    if obs.link_errors is not None and obs.link_errors >= thresholds.link_errors:
        link_parts.append(f"{_n(obs.link_errors)} errors")
    if obs.link_retrains is not None and obs.link_retrains >= thresholds.link_retrains:
        link_parts.append(f"{_n(obs.link_retrains)} retrains")
    if link_parts:
        found.append(
            Condition(LINK_ERRORS, WARNING, f"{label}: {' and '.join(link_parts)} this period")
        )
    trained = []
    if (
        obs.link_width is not None
        and obs.link_width_nominal
        and (obs.link_width < obs.link_width_nominal)
    ):
        trained.append(f"x{_n(obs.link_width)} of x{_n(obs.link_width_nominal)}")
    if (
        obs.link_speed_gts is not None
        and obs.link_speed_nominal_gts
        and (obs.link_speed_gts < obs.link_speed_nominal_gts)
    ):
        trained.append(f"{_n(obs.link_speed_gts)} of {_n(obs.link_speed_nominal_gts)} GT/s")
    if trained:
        found.append(
            Condition(LINK_DOWNTRAINED, WARNING, f"{label} downtrained: {', '.join(trained)}")
        )
    if obs.health == "warning" and not found:
        why = obs.detail or "reported degraded"
        found.append(Condition(ELEMENT_DEGRADED, WARNING, f"{label} degraded: {why}"))
    found.sort(key=lambda c: -SEVERITY_RANK[c.severity])
    return tuple(found)


def manager_condition(error: str | None, *, name: str = "") -> Condition | None:
    """The condition of a fabric manager: unreachable (critical) when its driver failed."""
    if not error:
        return None
    who = f"Fabric manager {name}" if name else "Fabric manager"
    return Condition(MANAGER_UNREACHABLE, CRITICAL, f"{who} unreachable: {error}")


def explained_by_ancestor(health: str, ancestors: Iterable[str]) -> bool:
    """Whether an element's trouble is its cause's: what it inherited from a reported fault
    (fabric.health.propagation: its power feed, its enclosure, the switch its link leaves)
    is at least as unwell. Such an element's conditions fold into the cause's alert instead
    of opening their own, so a failed power feed is one alert whose blast radius lists what
    it took down, not hundreds."""
    rank = HEALTH_RANK.get(health, 0)
    return rank > 0 and any(HEALTH_RANK.get(a, 0) >= rank for a in ancestors)
