"""What the reconfiguration workflow binds, verifies and undoes, and how a failed bind is told.

The workflow knows nothing of the console's tables: a caller (composer's jobs, the
reconciler) hands it one `BindTarget` per binding it wants, in the manager's terms
(external ids, a slice's size), with the caller's own handle (`item`: an allocation) that
comes back untouched in every callback, so the caller keeps its bookkeeping and its words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fabric.drivers.base import Binding, DriverError

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class BindTarget(Generic[T]):
    """One binding a caller wants (or made): `device_id` bound to `host_id`, whole
    (`size_gib` None) or a slice of that many GiB.

    `binding_id` is the id the caller recorded for it ("" while none is): verification and
    undo go by it, and by what the manager reports that matches. `item` is the caller's own
    handle, never looked into here.
    """

    item: T
    device_id: str
    host_id: str
    size_gib: int | None = None
    binding_id: str = ""


Record = Callable[[BindTarget[T], Binding], None]
"""`record(target, binding)`: the caller keeps a binding made (or adopted) for `target`,
the moment it is made; a caller that dies right after finds it recorded."""


def binding_matches(binding: Binding, target: BindTarget[T]) -> bool:
    """Whether the manager's `binding` is what `target` asks for: the same device, host and
    slice size. (A manager keeps one slice of a memory device per host, so this is how a
    binding whose reply was lost is recognised.)"""
    return (
        binding.device_id == target.device_id
        and binding.host_id == target.host_id
        and binding.size_gib == target.size_gib
    )


class BindError(DriverError):
    """A bind of `target` failed; `cause` is the driver's error (its message, permanence).

    Raised in place of the driver's error so that a caller binding many devices at once
    knows which one failed, and can retell it in its own words (composer turns it into a
    `BindingFailed` its tenants may read). Transient or permanent as the cause was.
    """

    def __init__(self, target: BindTarget[Any], cause: DriverError) -> None:
        super().__init__(cause.message, permanent=cause.permanent)
        self.target = target
        self.cause = cause
