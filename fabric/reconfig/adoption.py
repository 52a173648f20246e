"""Adopting on resume: the bindings the manager already holds for what is still to bind.

A job whose worker died may have bound a device just before the death, its reply never
recorded. Binding again would bind the device twice on a manager whose bind is not
idempotent; the manager is asked instead, and a binding that matches (device, host, slice)
and that nothing else claims is taken as the target's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from fabric.drivers.base import Binding, FabricDriver
from fabric.reconfig.narration import Narrator
from fabric.reconfig.targets import BindTarget, Record, T, binding_matches

__all__ = ["adopt"]


def adopt(
    driver: FabricDriver,
    targets: Sequence[BindTarget[T]],
    *,
    record: Record[T],
    claimed: Callable[[Collection[str]], Collection[str]],
    narrator: Narrator[T],
    reported: Sequence[Binding] | None = None,
) -> list[BindTarget[T]]:
    """Record the bindings the manager already has for `targets`; return the targets still
    to bind, in order.

    `reported` is what the manager reports (read here when None; a DriverError goes up).
    `claimed(ids)` answers which of those binding ids something else already holds (the
    caller's records: another allocation, a binding waiting to be undone, which looks alike
    when it is a released slice of the same device on the same host): those are never
    taken. Each adopted binding is told to `narrator`, then handed to `record`.
    """
    if not targets:
        return []
    reported = driver.bindings() if reported is None else reported
    taken = set(claimed([b.binding_id for b in reported]))
    rest: list[BindTarget[T]] = []
    for target in targets:
        found = next(
            (b for b in reported if b.binding_id not in taken and binding_matches(b, target)),
            None,
        )
        if found is None:
            rest.append(target)
            continue
        taken.add(found.binding_id)
        narrator.adopted(target, found)
        record(target, found)
    return rest
