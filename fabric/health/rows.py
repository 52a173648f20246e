"""The console's rows as a health poll needs them: one per element a reading may name.

`inventory_rows(manager)` maps (kind, external id) to the row's id, name, health and state,
and to its parents (power feed, enclosure, port owner) for the maintenance rule; the health
poll matches readings to them, and the propagation of faults (fabric.health.derived) maps
its effects back to external ids with them. Eight queries whatever the size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from fabric.choices import ComponentState, DeviceState
from fabric.models import (
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.topology.names import End, link_names

__all__ = ["ElementRow", "in_maintenance", "inventory_rows"]


@dataclass(slots=True)
class ElementRow:
    """One console row a reading maps to, with what the rules need. `ancestors`: what it
    hangs off (its power feed, its enclosure, its ports' owners), for the maintenance rule;
    what a fault takes with it is the failure domains' (fabric.health.propagation)."""

    kind: str
    pk: int
    name: str
    health: str
    state: str = ""
    ancestors: tuple[tuple[str, int], ...] = ()
    width_nominal: float | None = None
    speed_nominal: float | None = None


def inventory_rows(manager: FabricManager) -> dict[tuple[str, str], ElementRow]:
    """(kind, external id) -> row, for every present element of `manager`: eight queries."""
    rows: dict[tuple[str, str], ElementRow] = {}
    names: dict[str, dict[int, str]] = defaultdict(dict)
    for kind, model in (("rack", Rack), ("power_feed", PowerFeed)):
        for pk, ext, name, health in model.objects.filter(
            manager=manager, is_present=True
        ).values_list("pk", "external_id", "name", "health"):
            rows[kind, ext] = ElementRow(kind, pk, name, health)
    for kind, gear in (("switch", Switch), ("host", Host), ("enclosure", Enclosure)):
        for pk, ext, name, health, state, feed in (
            gear.objects.filter(manager=manager)
            .exclude(state=ComponentState.ABSENT)
            .values_list("pk", "external_id", "name", "health", "state", "power_feed_id")
        ):
            ancestors = (("power_feed", feed),) if feed else ()
            rows[kind, ext] = ElementRow(kind, pk, name, health, state, ancestors)
            names[kind][pk] = name
    for pk, ext, name, health, state, enclosure in (
        Device.objects.filter(manager=manager)
        .exclude(state=DeviceState.ABSENT)
        .values_list("pk", "external_id", "name", "health", "state", "enclosure_id")
    ):
        rows["device", ext] = ElementRow(
            "device", pk, name, health, state, (("enclosure", enclosure),) if enclosure else ()
        )
    ports: dict[int, tuple[End, tuple[str, int], float, float]] = {}
    for pk, ext, name, health, switch, host, enclosure, lanes, speed in Port.objects.filter(
        manager=manager, is_present=True
    ).values_list(
        "pk", "external_id", "name", "health", "switch_id", "host_id", "enclosure_id", "lanes",
        "speed_gts",
    ):  # fmt: skip
        owner = (
            ("switch", switch) if switch else ("host", host) if host else ("enclosure", enclosure)
        )
        rows["port", ext] = ElementRow("port", pk, name, health, "", (owner,))
        end = (names[owner[0]].get(owner[1], owner[0]), name)
        ports[pk] = (end, owner, float(lanes), float(speed))
    links = list(
        Link.objects.filter(manager=manager, is_present=True).values_list(
            "pk", "external_id", "health", "state", "a_port_id", "b_port_id"
        )
    )
    unknown = ("?", "?")
    link_name = link_names(
        {
            pk: (
                ports[a_port][0] if a_port in ports else unknown,
                ports[b_port][0] if b_port in ports else unknown,
            )
            for pk, _, _, _, a_port, b_port in links
        }
    )
    for pk, ext, health, state, a_port, b_port in links:
        a, b = ports.get(a_port), ports.get(b_port)
        owners = tuple(end[1] for end in (a, b) if end is not None)
        rows["link", ext] = ElementRow(
            "link",
            pk,
            link_name[pk],
            health,
            state,
            owners,
            width_nominal=a[2] if a else None,
            speed_nominal=a[3] if a else None,
        )
    return rows


def in_maintenance(row: ElementRow, by_key: Mapping[tuple[str, int], ElementRow]) -> bool:
    """An operator took it (or the enclosure, switch or host it hangs off) out of service."""
    if row.state == DeviceState.MAINTENANCE:  # same value as ComponentState.MAINTENANCE
        return True
    return any(
        (ancestor := by_key.get(key)) is not None
        and ancestor.kind in ("switch", "enclosure", "host")
        and ancestor.state == ComponentState.MAINTENANCE
        for key in row.ancestors
    )
