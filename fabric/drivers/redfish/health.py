"""Health readings of a Redfish service: one per element from its own `Status` (Health;
State), with the numbers of the metrics resources it links to (fabric.drivers.redfish.metrics;
none where the service has none). A link reads what its ports' metrics say.
"""

from __future__ import annotations

from fabric.drivers.base import HealthReading
from fabric.drivers.redfish.metrics import MetricsReader, elements_of
from fabric.drivers.redfish.reader import Reader
from fabric.drivers.redfish.state import State


def readings_of(state: State, reader: Reader, max_reads: int) -> list[HealthReading]:
    """Every element `state` holds as a reading, its metrics read through `reader` (at most
    `max_reads` metrics resources)."""
    inventory = state.inventory
    numbers = MetricsReader(reader, max_reads=max_reads).of(elements_of(state.snapshot))
    readings: list[HealthReading] = []
    for kind, items in (
        ("rack", inventory.racks),
        ("power_feed", inventory.power_feeds),
        ("switch", inventory.switches),
        ("host", inventory.hosts),
        ("enclosure", inventory.enclosures),
        ("device", inventory.devices),
        ("port", inventory.ports),
    ):
        for item in items:
            status = str(item.attributes.get("state") or "")
            readings.append(
                HealthReading(
                    target_kind=kind,  # type: ignore[arg-type]
                    external_id=item.external_id,
                    health=item.health,
                    state=status,
                    detail=""
                    if item.health in ("ok", "unknown")
                    else f"the manager reports {item.health} ({status or 'no state'})",
                    metrics=numbers.get(item.external_id, {}),
                )
            )
    for link_info in inventory.links:
        readings.append(
            HealthReading(
                target_kind="link",
                external_id=link_info.external_id,
                health=link_info.health,
                state=link_info.state,
                metrics={
                    **numbers.get(link_info.b_port_id, {}),
                    **numbers.get(link_info.a_port_id, {}),
                },
                detail=""
                if link_info.health in ("ok", "unknown")
                else f"the manager reports its ports' link {link_info.state}",
            )
        )
    return readings
