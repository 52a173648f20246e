"""A stand-in fabric manager driver for health tests: raw readings only.

It reports each element's own health and nothing more, as a real manager does ("enclosure
failed", not each of its devices): every element the console holds is ok but those a test
names. What a fault takes with it is then the console's alone to derive.
"""

from __future__ import annotations

from fabric.drivers.base import HealthReading
from fabric.health.readings import MODELS
from fabric.models import FabricManager


class RawDriver:
    """Reports every element the console holds as ok, except `faults` ((kind, external id)
    -> health); with `only`, reports the faults alone (nothing else could be read)."""

    def __init__(self, manager: FabricManager) -> None:
        self.manager = manager
        self.faults: dict[tuple[str, str], str] = {}
        self.only = False

    def health(self) -> list[HealthReading]:
        readings = []
        for kind, model in MODELS.items():
            for external_id in model._default_manager.filter(manager=self.manager).values_list(
                "external_id", flat=True
            ):
                health = self.faults.get((kind, external_id), "ok")
                if self.only and health == "ok":
                    continue
                readings.append(
                    HealthReading(
                        target_kind=kind,  # type: ignore[arg-type]
                        external_id=external_id,
                        health=health,  # type: ignore[arg-type]
                        detail="reported by the manager" if health != "ok" else "",
                    )
                )
        return readings
