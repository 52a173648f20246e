"""Allocations: claiming devices and memory slices for a composition, binding, releasing.

`claims` claims and binds; `release` releases and gives memory and shares back; `shares`
claims and gives back shares of a GPU.

Rule 1 (never allocate a device or a GiB twice) is enforced in the database:

- the Device rows are locked (`SELECT ... FOR UPDATE`, in id order so that two claims
  never wait on each other in a cycle) before anything is checked;
- a whole device moves FREE -> RESERVED by compare-and-set on its state, and a partial
  unique index on Allocation(device) (whole, unreleased) refuses a second holder even if
  the Python checks were wrong;
- a CXL memory slice is granted by one conditional UPDATE of the device's
  `allocated_gib` (`allocated_gib + gib <= memory_gib`, in the WHERE clause), under the
  device's row lock, in the same transaction as the Allocation row: the figure every page
  and the placement snapshot read (`fabric.capacity`) is the one the claim checked.

A memory device's state follows its slices (`fabric.capacity`): FREE -> RESERVED at its
first claim, -> BOUND when a slice is bound, and back to FREE when the last GiB is given
back. A slice whose unbind failed stays in `allocated_gib` until the unbind succeeds, as a
whole device in that case stays BOUND: an `UnbindPending` row holds it
(`composer.services.unbinds`) until the reconciler gives it back (`slices_give_back`).

A share of a GPU is granted by one conditional UPDATE of the device's `allocated_shares`
and `shared_host` under its row lock, with check constraints on the device that keep the
shares within the kind's count and on one host (`shares`, which says why that suffices).

A claim that loses raises ClaimConflict and writes nothing (its savepoint is rolled back).
"""

from __future__ import annotations

from composer.services.allocations.claims import (
    Claim,
    allocation_mark_bound,
    allocations_claim,
)
from composer.services.allocations.release import allocations_release, slices_give_back

__all__ = [
    "Claim",
    "allocation_mark_bound",
    "allocations_claim",
    "allocations_release",
    "slices_give_back",
]
