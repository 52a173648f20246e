"""The server-shape catalogue's writes: seeding it from a machine list.

Operators also add, change and delete shapes in the admin (audited there, as templates).
Seeding adds the list's shapes it lacks and brings the machine counts of those it has up
to date; each add or change is a ChangeRecord in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from composer.counterfactual.machine_spec import SOURCE, machine_shapes
from composer.models import ServerShape
from composer.services.changes import audited_values, changed_fields, composer_change_record
from fabric.choices import ChangeAction

__all__ = ["SeedOutcome", "server_shapes_seed"]


@dataclass(frozen=True)
class SeedOutcome:
    """What a seeding did: the names it added, changed and found as they were."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]


def server_shapes_seed(
    *, path: Path, actor: Any = None, source: str = "seed_server_shapes"
) -> SeedOutcome:
    """Add each distinct machine shape of the list at `path` as a ServerShape (by its name),
    or update the machine count of one already there; an operator's edits to a seeded
    shape's GPUs, cores, memory or model are left alone. Raises OSError when the file
    cannot be read and ValueError on a malformed line (nothing is written then)."""
    with path.open(newline="") as lines:
        shapes = machine_shapes(lines)
    added: list[str] = []
    changed: list[str] = []
    unchanged: list[str] = []
    with transaction.atomic():
        for shape in shapes:
            row = ServerShape.objects.select_for_update().filter(name=shape.name).first()
            if row is None:
                row = ServerShape(
                    name=shape.name,
                    gpu_model=shape.gpu_model,
                    gpus=shape.gpus,
                    cores=shape.cores,
                    memory_gib=shape.memory_gib,
                    machines=shape.machines,
                    source=SOURCE,
                )
                row.full_clean()
                row.save()
                _record(
                    row, ChangeAction.ADDED, changed_fields({}, audited_values(row)), actor, source
                )
                added.append(row.name)
                continue
            if row.machines == shape.machines:
                unchanged.append(row.name)
                continue
            before = audited_values(row)
            row.machines = shape.machines
            row.full_clean()
            row.save(update_fields=["machines", "updated_at"])
            _record(
                row,
                ChangeAction.CHANGED,
                changed_fields(before, audited_values(row)),
                actor,
                source,
            )
            changed.append(row.name)
    return SeedOutcome(tuple(added), tuple(changed), tuple(unchanged))


def _record(
    row: ServerShape, action: ChangeAction, changes: dict[str, Any], actor: Any, source: str
) -> None:
    composer_change_record(
        row,
        action,
        changes,
        actor=actor,
        source=source,
        remote_addr=None,
        message="seeded from the machine list",
        label=row.name,
    )
