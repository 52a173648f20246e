"""The effects of what a manager reported, on the console's rows: the one place the health
poll and inventory sync apply fault propagation (fabric.health.propagation).

A driver reports each element's own health; here the faults among them are propagated over
the topology the console holds (`fabric.topology.load.load_graph`, the graph every blast
radius is measured on), and the effects come back keyed by (kind, external id), the
driver's own terms. The graph is loaded only when some rack, power feed, switch, host,
enclosure or link is reported unwell: a healthy fabric costs no query here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from fabric.drivers.base import HealthReading, Inventory
from fabric.health.propagation import CAUSE_ORDER, CRITICAL, WARNING, Effect, port_effect, propagate
from fabric.health.rows import ElementRow, inventory_rows
from fabric.models import FabricManager
from fabric.topology.load import load_graph

__all__ = ["Effect", "effects_of", "inventory_derived", "reading_derived", "unreported"]

_CAUSE_KINDS = frozenset(CAUSE_ORDER)
_UNWELL = frozenset({WARNING, CRITICAL})
_RANK = {WARNING: 1, CRITICAL: 2}
_OWNERS = frozenset({"switch", "host", "enclosure"})
LINK_DOWN = "down"  # fabric.choices.LinkState.DOWN


def effects_of(
    manager: FabricManager,
    reported: Iterable[tuple[str, str, str]],
    rows: Mapping[tuple[str, str], ElementRow] | None = None,
) -> dict[tuple[str, str], Effect]:
    """(kind, external id) -> Effect for every element of `manager` that a reported fault
    reaches. `reported`: (kind, external id, health) of every element the manager reported;
    `rows`: `inventory_rows(manager)` when the caller has them (read here when needed).
    No query when nothing that takes others with it is unwell."""
    reported = list(reported)
    if not any(kind in _CAUSE_KINDS and health in _UNWELL for kind, _, health in reported):
        return {}
    rows = inventory_rows(manager) if rows is None else rows
    health_of: dict[str, str] = {}
    for kind, external_id, health in reported:
        row = rows.get((kind, external_id))
        if row is not None:
            health_of[f"{kind}:{row.pk}"] = health
    causes = {
        element: health
        for element, health in health_of.items()
        if element.partition(":")[0] in _CAUSE_KINDS and health in _UNWELL
    }
    effects = propagate(load_graph(managers=[manager.pk]), causes)
    found: dict[tuple[str, str], Effect] = {}
    external: dict[str, tuple[str, str]] = {}
    names: dict[str, str] = {}
    for (kind, external_id), row in rows.items():
        element = f"{kind}:{row.pk}"
        external[element] = (kind, external_id)
        if kind in _OWNERS:
            names[element] = row.name
    for element, effect in effects.items():
        key = external.get(element)
        if key is not None:
            found[key] = effect
    for (kind, external_id), row in rows.items():
        if kind != "port" or not row.ancestors:
            continue
        owner = "{}:{}".format(*row.ancestors[0])
        inherited = port_effect(owner, health_of.get(owner, ""), effects, names)
        if inherited is not None:
            found[kind, external_id] = inherited
    return found


def reading_derived(reading: HealthReading, effect: Effect | None) -> HealthReading:
    """`reading` with what it inherits, when that is worse than its own health: the health
    and the reason (a link that fails with its domain is down). As the manager said it
    otherwise, and its metrics always."""
    if effect is None or _RANK[effect.health] <= _RANK.get(reading.health, 0):
        return reading
    state = LINK_DOWN if reading.target_kind == "link" and effect.health == CRITICAL else None
    return dataclasses.replace(
        reading,
        health=effect.health,  # type: ignore[arg-type]  # warning or critical
        state=state if state is not None else reading.state,
        detail=effect.detail,
    )


def unreported(
    effects: Mapping[tuple[str, str], Effect], reported: set[tuple[str, str]]
) -> list[HealthReading]:
    """Readings for the elements a fault reaches that the manager did not report at all (it
    cannot read a device behind a failed enclosure): what they inherit, and no metrics."""
    return [
        reading_derived(
            HealthReading(target_kind=kind, external_id=external_id, health="unknown"),  # type: ignore[arg-type]
            effect,
        )
        for (kind, external_id), effect in effects.items()
        if (kind, external_id) not in reported
    ]


def inventory_derived(manager: FabricManager, inventory: Inventory) -> Inventory:
    """`inventory` with the effects of the faults it reports (over the topology the console
    holds, i.e. as of the last sync): the health inventory sync writes, as a poll would."""
    kinds: dict[str, tuple[Any, ...]] = {
        "rack": inventory.racks,
        "power_feed": inventory.power_feeds,
        "switch": inventory.switches,
        "host": inventory.hosts,
        "enclosure": inventory.enclosures,
        "device": inventory.devices,
        "port": inventory.ports,
        "link": inventory.links,
    }
    effects = effects_of(
        manager,
        ((kind, i.external_id, i.health) for kind, infos in kinds.items() for i in infos),
    )
    if not effects and all(link.health != CRITICAL for link in inventory.links):
        return inventory

    def derived(kind: str, info: Any) -> Any:
        effect = effects.get((kind, info.external_id))
        if effect is None or _RANK[effect.health] <= _RANK.get(info.health, 0):
            if kind == "link" and info.health == CRITICAL and info.state != LINK_DOWN:
                return dataclasses.replace(info, state=LINK_DOWN)  # failed: carries nothing
            return info
        if kind == "link" and effect.health == CRITICAL:
            return dataclasses.replace(info, health=effect.health, state=LINK_DOWN)
        return dataclasses.replace(info, health=effect.health)

    return Inventory(
        racks=tuple(derived("rack", i) for i in inventory.racks),
        power_feeds=tuple(derived("power_feed", i) for i in inventory.power_feeds),
        switches=tuple(derived("switch", i) for i in inventory.switches),
        hosts=tuple(derived("host", i) for i in inventory.hosts),
        enclosures=tuple(derived("enclosure", i) for i in inventory.enclosures),
        devices=tuple(derived("device", i) for i in inventory.devices),
        ports=tuple(derived("port", i) for i in inventory.ports),
        links=tuple(derived("link", i) for i in inventory.links),
    )
