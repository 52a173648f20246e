"""How injected faults spread through the simulated data centre, as its manager's own bind
rule sees them (pure: no database).

An element's *own* fault is what someone injected on it, and its own health is what the
simulated manager reports for it (`own_health`): like a real manager it says "enclosure
failed", and the console derives what that takes with it (fabric.health.propagation). The
*effective* health, after propagation along the physical dependencies, is what the manager
itself acts on: it refuses to bind a device or host that is failed or unpowered.

- a failed power feed fails the switches, hosts and enclosures it powers (a degraded
  feed degrades them); a rack is critical when all of its feeds fail;
- a failed enclosure fails its devices (a degraded one degrades them);
- a port is down when its owner (switch, host, enclosure) fails;
- a link is down when it failed itself or either end's port is down, and degraded when
  it was degraded itself.

Computed on every read, so recovering the cause recovers everything it took down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

OK = "ok"
WARNING = "warning"
CRITICAL = "critical"
_RANK = {OK: 0, WARNING: 1, CRITICAL: 2}
_OWN = {"failed": CRITICAL, "degraded": WARNING, "": OK}
_LINK_STATE = {OK: "up", WARNING: "degraded", CRITICAL: "down"}


class ElementLike(Protocol):
    """The fields of a SimulatedElement that propagation reads (read only: a row, or the
    frozen element of a served world)."""

    @property
    def kind(self) -> str: ...

    @property
    def external_id(self) -> str: ...

    @property
    def data(self) -> Mapping[str, Any]: ...

    @property
    def fault(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Effective:
    """An element's reported health, and why it is not ok ("" when it is)."""

    health: str
    detail: str = ""

    @property
    def link_state(self) -> str:
        """The state a link in this health reports: up, degraded or down."""
        return _LINK_STATE[self.health]


_FINE = Effective(OK)


def own_health(element: ElementLike) -> Effective:
    """The element's own health: its injected fault alone, what the manager reports."""
    health = _OWN.get(element.fault or "", OK)
    if health == OK:
        return _FINE
    return Effective(health, f"{element.fault} (injected fault)")


def _worst(*candidates: Effective) -> Effective:
    best = _FINE
    for candidate in candidates:
        if _RANK[candidate.health] > _RANK[best.health]:
            best = candidate
    return best


def _inherited(cause: Effective | None, label: str, *, critical_only: bool = False) -> Effective:
    """What an element inherits from the thing it depends on (`label` names that thing)."""
    if cause is None or cause.health == OK:
        return _FINE
    if cause.health == CRITICAL:
        return Effective(CRITICAL, f"{label} failed")
    if critical_only:
        return _FINE
    return Effective(WARNING, f"{label} degraded")


def effective_health(elements: Iterable[ElementLike]) -> dict[str, Effective]:
    """Map every element's external id to its effective health.

    The elements passed in must include the ancestors of those whose health matters (a
    device's enclosure and that enclosure's power feed); a missing ancestor is taken as ok.
    """
    by_kind: dict[str, list[ElementLike]] = {}
    for element in elements:
        by_kind.setdefault(element.kind, []).append(element)
    result: dict[str, Effective] = {}

    for feed in by_kind.get("power_feed", ()):
        result[feed.external_id] = own_health(feed)

    feeds_by_rack: dict[str, list[str]] = {}
    for feed in by_kind.get("power_feed", ()):
        rack_id = feed.data.get("rack_id")
        if rack_id:
            feeds_by_rack.setdefault(rack_id, []).append(feed.external_id)
    for rack in by_kind.get("rack", ()):
        feeds = [result[f] for f in feeds_by_rack.get(rack.external_id, [])]
        failed = [f for f in feeds if f.health != OK]
        if feeds and all(f.health == CRITICAL for f in feeds):
            result[rack.external_id] = Effective(CRITICAL, "all power feeds failed")
        elif failed:
            result[rack.external_id] = Effective(WARNING, "running on reduced power")
        else:
            result[rack.external_id] = own_health(rack)

    for kind in ("switch", "host", "enclosure"):
        for item in by_kind.get(kind, ()):
            feed_id = item.data.get("power_feed_id")
            result[item.external_id] = _worst(
                own_health(item), _inherited(result.get(feed_id or ""), f"power feed {feed_id}")
            )

    for device in by_kind.get("device", ()):
        enclosure_id = device.data.get("enclosure_id")
        result[device.external_id] = _worst(
            own_health(device),
            _inherited(result.get(enclosure_id or ""), f"enclosure {enclosure_id}"),
        )

    for port in by_kind.get("port", ()):
        owner_kind, owner_id = port.data.get("owner_kind"), port.data.get("owner_id")
        result[port.external_id] = _worst(
            own_health(port),
            _inherited(result.get(owner_id or ""), f"{owner_kind} {owner_id}", critical_only=True),
        )

    for link in by_kind.get("link", ()):
        ends = []
        for key in ("a_port_id", "b_port_id"):
            port_id = link.data.get(key) or ""
            end = result.get(port_id)
            if end is not None and end.health == CRITICAL:
                ends.append(Effective(CRITICAL, f"port {port_id} down: {end.detail}"))
        result[link.external_id] = _worst(own_health(link), *ends)

    return result
