"""The one road from a reconfiguration to a fabric manager: bind, reconcile, verify, undo.

Compose, decompose, heal and the reconciler all change what is bound on the fabric, and a
manager's faults are the same whoever meets them: a bind that times out may have happened,
a worker may die between a bind and its record, a bind that answered may not hold, an
unbind may fail for a moment or for good. Each answer to those lives here, once, so every
caller gets the same guarantees (rule 2: whatever is bound is recorded or undone):

- `bind` one target; after a timeout the manager is asked (`bindings()`) and a binding
  that matches is taken. `bind_many` binds several, side by side when the manager is slow
  (COMPOSER_BIND_PARALLELISM, COMPOSER_BIND_PARALLEL_AFTER_MS), recording each at once.
- `adopt`, for a caller that resumes: the bindings the manager already holds for what is
  still to bind are recorded rather than bound twice.
- `verify` the recorded bindings against the manager's report.
- `undo` (and `undo_each`): unbind what a target bound, recorded or only reported, with
  retries and back-off (`unbind`: COMPOSER_UNBIND_ATTEMPTS, COMPOSER_UNBIND_BACKOFF_MS),
  handing back what could not be undone.

Only the `FabricDriver` protocol is used, so the same code faces the simulated manager and
real ones. Nothing here knows the console's tables (fabric never imports composer): a
caller describes each binding as a `BindTarget` in the manager's terms with its own handle
(`item`), keeps its own records through the `record` callback and its `claimed` answer,
and tells its readers what happened through its `Narrator`. A failed bind is a
`BindError` naming its target, for the caller to retell in its own words.
"""

from __future__ import annotations

from fabric.reconfig.adoption import adopt
from fabric.reconfig.binds import bind, bind_many, bind_parallelism
from fabric.reconfig.narration import Narrator
from fabric.reconfig.targets import BindError, BindTarget, Record, binding_matches
from fabric.reconfig.unbinds import unbind, undo, undo_each
from fabric.reconfig.verification import (
    Verification,
    reported_bindings,
    reported_bindings_or_none,
    verify,
)

__all__ = [
    "BindError",
    "BindTarget",
    "Narrator",
    "Record",
    "Verification",
    "adopt",
    "bind",
    "bind_many",
    "bind_parallelism",
    "binding_matches",
    "reported_bindings",
    "reported_bindings_or_none",
    "unbind",
    "undo",
    "undo_each",
    "verify",
]
