"""What a reported fault takes with it: health propagated along the fabric's failure domains.

Pure Python over a `FabricGraph` (nothing here imports Django). A fabric manager reports what
it sees, and a real one reports "enclosure failed", not that each device in it failed too;
the console derives the rest from the topology it holds, the same way whatever the driver:

- a failed element fails everything its failure domain takes
  (`fabric.topology.domains.domain_of`, the walk every blast radius is measured on): a rack
  its hosts, switches and enclosures, their devices and links; a power feed what it powers,
  the devices of the enclosures on it and their links; an enclosure its devices and links; a
  switch or a host its links; a link itself;
- a degraded (warning) element degrades the hosts, switches, enclosures and devices of its
  domain, not its links: a link's own reading says whether traffic suffers;
- a port follows its owner: it is down when the switch, host or enclosure it belongs to
  failed (ports are not nodes of the graph, so their owner is given by the caller).

Only the manager's own readings are causes, so recovering the cause recovers everything
it took down at the same poll. An element keeps its own reading when that is worse than
what it inherits; when it is not, its trouble is the cause's, and the health rules fold it
into the cause's alert (`rules.explained_by_ancestor`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabric.topology.domains import domain_of
from fabric.topology.graph import FabricGraph

__all__ = ["CAUSE_ORDER", "Effect", "port_effect", "propagate"]

OK = "ok"
WARNING = "warning"
CRITICAL = "critical"
_RANK = {WARNING: 1, CRITICAL: 2}

# Broadest first: when two causes reach an element equally, it names the broader one (a
# device of a failed enclosure on a failed power feed lost its power).
CAUSE_ORDER = ("rack", "power_feed", "enclosure", "switch", "host", "link")
_LABELS = {
    "rack": "rack",
    "power_feed": "power feed",
    "enclosure": "enclosure",
    "memory_box": "memory box",
    "switch": "switch",
    "host": "host",
    "link": "link",
}


@dataclass(frozen=True, slots=True)
class Effect:
    """What an element inherits from a reported fault: the health ("warning" or
    "critical"), the element that caused it ("enclosure:5"), and why, in the console's words
    ("enclosure gpu-a-01 failed")."""

    health: str
    cause: str
    detail: str


def _order(item: tuple[str, str]) -> tuple[int, int, str]:
    element, health = item
    kind = element.partition(":")[0]
    position = CAUSE_ORDER.index(kind) if kind in CAUSE_ORDER else len(CAUSE_ORDER)
    return (-_RANK.get(health, 0), position, element)


def propagate(graph: FabricGraph, reported: Mapping[str, str]) -> dict[str, Effect]:
    """The effects of the reported faults: element id -> Effect, for every node and link of
    `graph` that a fault in `reported` reaches (the cause itself excluded).

    `reported`: element id ("enclosure:5", "power_feed:2", "link:9", ...) -> the health its
    manager reported for it; only warning and critical ones are causes, and elements that
    are not in the graph take nothing with them. A stronger effect wins over a weaker one;
    between equals, the broadest cause (`CAUSE_ORDER`), then the lowest id, so the result
    does not depend on the order of the readings.
    """
    effects: dict[str, Effect] = {}
    for cause, health in sorted(reported.items(), key=_order):
        rank = _RANK.get(health, 0)
        if not rank:
            continue
        spec = domain_of(graph, cause)
        if spec is None or spec.kind == "device":
            continue
        verb = "failed" if health == CRITICAL else "degraded"
        detail = f"{_LABELS.get(spec.kind, spec.kind)} {spec.name} {verb}"
        effect = Effect(health, cause, detail)
        for element in spec.elements:
            if element == cause or element.startswith("rack:"):
                continue
            if health == WARNING and element in graph.edges:
                continue  # a degraded domain's links carry on; their own readings tell
            known = effects.get(element)
            if known is None or _RANK[known.health] < rank:
                effects[element] = effect
    return effects


def port_effect(
    owner: str, owner_health: str, effects: Mapping[str, Effect], names: Mapping[str, str]
) -> Effect | None:
    """What a port inherits from its owner (`owner`: "switch:3", "host:7", "enclosure:5"):
    down when the owner failed, by its own reading (`owner_health`, named `names[owner]`)
    or by what the owner inherited (`effects`); nothing otherwise."""
    if owner_health == CRITICAL:
        kind = owner.partition(":")[0]
        return Effect(
            CRITICAL, owner, f"{_LABELS.get(kind, kind)} {names.get(owner, owner)} failed"
        )
    inherited = effects.get(owner)
    if inherited is not None and inherited.health == CRITICAL:
        return inherited
    return None
