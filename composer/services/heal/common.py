"""What the parts of a heal share: the records it keeps on the composition, its error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from composer.errors import ComposerError
from composer.models import Allocation, Composition

HEALING_KEY = "healing"  # placement: replacements claimed and not yet swapped in
HEALED_KEY = "healed"  # placement: what each heal replaced, for the record
HEAL_ROUNDS = 3  # devices that fail while a heal runs are replaced too, this many times


class HealRejected(ComposerError):
    """No replacement can be had now (no spare, the host is unusable, races lost twice)."""

    code = "heal_rejected"
    status_code = 409


def healing_records(composition: Composition) -> list[dict[str, Any]]:
    """The replacements a heal of `composition` claimed and has not swapped in yet."""
    return list((composition.placement or {}).get(HEALING_KEY) or [])


def active_allocations(ids: Sequence[int]) -> list[Allocation]:
    """The allocations of `ids` not released yet, with their devices, in id order."""
    return list(
        Allocation.objects.select_related("device")
        .filter(pk__in=list(ids), released_at__isnull=True)
        .order_by("pk")
    )
