"""How the workflow tells what happened: a `Narrator` its caller supplies.

Who may read what is the caller's to decide, not fabric's: a compose job's tenant reads
"Unbound GPU gpu-a-01-1." in the job's log, its operators read the binding id and the
manager's own answer, and the reconciler speaks to operators only. So the workflow never
words a line itself for those readers; it calls the narrator at each event, in the thread
where the event happened (a helper thread of a parallel bind included), and the caller
logs in its readers' words.
"""

from __future__ import annotations

from typing import Protocol

from fabric.drivers.base import Binding, DriverError
from fabric.reconfig.targets import BindTarget, T


class Narrator(Protocol[T]):
    """The events of a bind, an adoption and an undo, told to whoever runs them."""

    def bind_timed_out(self, target: BindTarget[T]) -> None:
        """The bind of `target` timed out; the manager is asked whether it happened."""
        ...

    def bind_found(self, target: BindTarget[T], binding: Binding) -> None:
        """A bind that timed out did happen: the manager reports `binding`, taken as its."""
        ...

    def bind_failed(self, target: BindTarget[T], error: DriverError) -> None:
        """The bind of `target` failed with the driver's `error` (a `BindError` follows)."""
        ...

    def adopted(self, target: BindTarget[T], binding: Binding) -> None:
        """The manager already holds `binding` for `target` (a bind whose reply was never
        recorded): it is recorded, not bound again."""
        ...

    def record_failed(self, target: BindTarget[T], error: BaseException) -> None:
        """A binding of `target` was made while another failure went up, and recording it
        raised `error`, which is dropped: the first failure is the one raised. Called from
        inside the `except` block (a log call may take the traceback)."""
        ...

    def unbound(self, target: BindTarget[T], binding_id: str) -> None:
        """`binding_id` of `target` is undone."""
        ...

    def unbind_failed(self, target: BindTarget[T], binding_id: str, error: DriverError) -> None:
        """`binding_id` of `target` could not be undone, retries spent; `error` is the last."""
        ...
