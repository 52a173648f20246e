"""What the parts of a resize share: what was asked, the record it keeps on the composition,
its errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from composer.errors import ComposerError
from composer.models import Allocation, Composition

__all__ = [
    "RESIZED_KEY",
    "RESIZING_KEY",
    "ResizeAsk",
    "ResizeRejected",
    "active_allocations",
    "resizing_record",
]

RESIZING_KEY = "resizing"  # placement: the resize under way (what it claimed, what goes)
RESIZED_KEY = "resized"  # placement: what each resize added and removed, for the record
PHASE_ADDING = "adding"  # the additions are claimed; binding and verifying them
PHASE_REMOVING = "removing"  # the additions are bound and verified; the removals go


@dataclass(frozen=True)
class ResizeAsk:
    """A resize's input, its shape checked (`composer.services.resize.asks.resize_normalise`).

    `items`: the devices to add as normalised spec items (`composer.specs`: kind, model,
    count, minima, and share for a share of a GPU), `item_at` the index of each in the
    `add` list as sent (errors name `add[<index>]`); `memory_gib` the GiB of CXL memory to
    add, `memory_at` the index of the first memory entry; `remove` the allocation ids to
    give back, as sent.
    """

    items: tuple[dict[str, Any], ...] = ()
    item_at: tuple[int, ...] = ()
    memory_gib: int = 0
    memory_at: int | None = None
    remove: tuple[int, ...] = field(default_factory=tuple)

    @property
    def adds(self) -> bool:
        """Whether anything is added (else the resize only removes)."""
        return bool(self.items or self.memory_gib)


class ResizeRejected(ComposerError):
    """The additions cannot be placed on the composition's host now: `plan` is the
    rejection as a stored plan (message, funnel, nearest alternative). Nothing is written."""

    code = "placement_rejected"
    status_code = 422

    def __init__(self, message: str, *, plan: dict[str, Any]) -> None:
        super().__init__(message)
        self.plan = plan


def resizing_record(composition: Composition) -> dict[str, Any] | None:
    """The resize under way on `composition` (what its request claimed and what goes), or
    None."""
    record = (composition.placement or {}).get(RESIZING_KEY)
    return dict(record) if isinstance(record, dict) else None


def active_allocations(ids: list[int]) -> list[Allocation]:
    """The allocations of `ids` not released yet, with their devices, in id order."""
    return list(
        Allocation.objects.select_related("device")
        .filter(pk__in=list(ids), released_at__isnull=True)
        .order_by("pk")
    )
