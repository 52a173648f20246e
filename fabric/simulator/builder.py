"""Builds a simulated data centre: the demo world, or a large one for benchmarks.

`world_write(...)` stores the world of a `WorldSpec` in the simulated manager's tables
idempotently; what that world holds is laid out by `layout.world_elements(spec)`, which
needs no database. The console never reads these tables; it learns the world by discovery.
`WorldSpec` and the layout's names are re-exported here, the one import for callers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from fabric.simulator import store
from fabric.simulator.layout import WorldElement, world_elements
from fabric.simulator.models import SimulatedBinding, SimulatedElement
from fabric.simulator.spec import WorldSpec

__all__ = ["WorldElement", "WorldSpec", "WorldWriteResult", "world_elements", "world_write"]

Kind = SimulatedElement.Kind


@dataclass(frozen=True, slots=True)
class WorldWriteResult:
    """What `world_write` did to the simulated fabric's elements."""

    fabric_id: int
    created: int
    updated: int
    removed: int
    unchanged: int

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed)


def world_write(
    *,
    fabric_name: str,
    spec: WorldSpec,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> WorldWriteResult:
    """Store the world of `spec` as simulated fabric `fabric_name`, idempotently.

    New elements are created, changed ones updated (their injected faults are kept),
    elements the spec no longer has are marked not present (as if removed from the data
    centre; their bindings go with them). Running it twice changes nothing the second time.
    """
    wanted = world_elements(spec)
    with transaction.atomic():
        fabric = store.fabric_ensure(fabric_name)
        existing = {e.external_id: e for e in SimulatedElement.objects.filter(fabric=fabric)}
        to_create: list[SimulatedElement] = []
        to_update: list[SimulatedElement] = []
        seen: set[str] = set()
        for element in wanted:
            seen.add(element.external_id)
            row = existing.get(element.external_id)
            if row is None:
                to_create.append(
                    SimulatedElement(
                        fabric=fabric,
                        kind=element.kind,
                        external_id=element.external_id,
                        data=element.data,
                    )
                )
            elif row.kind != element.kind or row.data != element.data or not row.is_present:
                row.kind, row.data, row.is_present = element.kind, element.data, True
                to_update.append(row)
        gone = [row for key, row in existing.items() if key not in seen and row.is_present]
        for row in gone:
            row.is_present = False
        SimulatedElement.objects.bulk_create(to_create, batch_size=500)
        if to_update or gone:
            SimulatedElement.objects.bulk_update(
                [*to_update, *gone], ["kind", "data", "is_present"], batch_size=500
            )
        gone_devices = [row.external_id for row in gone if row.kind == Kind.DEVICE]
        gone_hosts = [row.external_id for row in gone if row.kind == Kind.HOST]
        if gone_devices or gone_hosts:
            SimulatedBinding.objects.filter(fabric=fabric, device_id__in=gone_devices).delete()
            SimulatedBinding.objects.filter(fabric=fabric, host_id__in=gone_hosts).delete()
    result = WorldWriteResult(
        fabric_id=fabric.pk,
        created=len(to_create),
        updated=len(to_update),
        removed=len(gone),
        unchanged=len(wanted) - len(to_create) - len(to_update),
    )
    if on_progress is not None:
        on_progress(len(wanted), len(wanted), f"simulated fabric {fabric_name} written")
    return result
