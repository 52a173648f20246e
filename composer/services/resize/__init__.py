"""Resize: add devices to, or remove devices from, a READY composition, as a job.

`resize_preview(composition=, add=, remove=)` answers what a resize would do now and holds
nothing: the devices, slices and shares it would add (placed on the composition's host by
the placement engine, with the explanation in words, `placing`), what it removes, and the
composition's request once resized; or the rejection with the rule that blocks and the
nearest alternative. `resize_request(..., requested_by=, remote_addr=, source=)` does the
same checks, then in one transaction claims the additions (the request path's database
safety: `allocations_claim` under the placement lock, placed again once on a lost race),
records the resize on the composition (`placement["resizing"]`: the claims, what goes,
the resized request) and moves it READY -> RESIZING, audited with who, from where and
what changes; then queues a RESIZE job, `composition_resize_run`:

    RESIZING: bind each addition -> verify them -> (phase "removing", committed)
              -> unbind and release each removal -> swap the resized request and plan in
              -> READY
    RESIZING -> READY   with what it had, when the additions could not be bound or
                        verified: they are unbound and released, the reason recorded
                        (`failure_reason`) and shown on its page

The composition stays in use throughout with what it keeps: nothing it keeps is touched,
and what it drops goes only once the additions are bound and verified. RESIZING (rather
than READY with a job running) keeps everything else off it meanwhile: a decompose, a heal
or a second resize is refused, the health pass leaves it to its job (a device lost
meanwhile degrades it once it is READY again, at the next pass), and the reconciler never
binds again a removal being unbound.

Input (`asks`): `add` lists device items as a request has them (kind, model, count,
minima; share for a share of a GPU) and amounts of CXL memory (`{"kind": "cxl_memory",
"gib": 256}`); `remove` the ids of allocations the composition holds. Each error names its
entry (`add[1].count`, `remove[0]`). Removing everything is refused: that is a decompose.
Quotas count what is added less what is given back.

Crash recovery: every step is recorded before the next. The claims and the record are one
transaction; each binding's id is committed on its Allocation the moment it is made, so a
retried or redelivered job skips what is bound and, after a worker's death, adopts a bind
whose reply was never recorded (`bindings_adopt`): nothing is bound twice. The phase is
committed once the additions are verified; a release is committed per removal. A job
that fails for good before that phase rolls the additions back; after it, it finishes the
removals (an unbind that fails leaves an `UnbindPending` row, never an orphan) and the
resize is swapped in. A resize no job works on any more (its job failed past its resume
limit, or was lost) is ended the same way by the reconciler (`resize_reconcile`).
"""

from __future__ import annotations

from composer.services.resize.common import (
    RESIZED_KEY,
    RESIZING_KEY,
    ResizeAsk,
    ResizeRejected,
    resizing_record,
)
from composer.services.resize.job import composition_resize_run
from composer.services.resize.request import resize_preview, resize_request
from composer.services.resize.undo import resize_reconcile, resize_rollback

__all__ = [
    "RESIZED_KEY",
    "RESIZING_KEY",
    "ResizeAsk",
    "ResizeRejected",
    "composition_resize_run",
    "resize_preview",
    "resize_reconcile",
    "resize_request",
    "resize_rollback",
    "resizing_record",
]
