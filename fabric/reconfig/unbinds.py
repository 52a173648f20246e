"""Undoing: unbind with retries and back-off, and report what could not be undone.

A rollback or a swap unbinds what it no longer wants. A transient driver error is tried
again at once, with back-off, a few times within a few seconds (COMPOSER_UNBIND_ATTEMPTS,
COMPOSER_UNBIND_BACKOFF_MS): a busy manager usually answers the second time, and the
caller must not wait minutes either. What still fails is handed back with its last error,
for the caller to keep (composer holds the device with an `UnbindPending` row and the
reconciler tries again): recorded or undone, never forgotten.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from django.conf import settings

from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.reconfig.narration import Narrator
from fabric.reconfig.targets import BindTarget, T, binding_matches

logger = logging.getLogger(__name__)

__all__ = ["unbind", "undo", "undo_each"]


def unbind(
    driver: FabricDriver, binding_id: str, *, sleep: Callable[[float], None] = time.sleep
) -> DriverError | None:
    """Unbind `binding_id`; a transient error is tried again after COMPOSER_UNBIND_BACKOFF_MS,
    doubling, up to COMPOSER_UNBIND_ATTEMPTS tries in all. Returns None once it is unbound
    (an unbind is idempotent: a binding the manager no longer knows is unbound), or the
    last error (a permanent one at once: trying again would not change the answer)."""
    attempts = max(1, int(getattr(settings, "COMPOSER_UNBIND_ATTEMPTS", 3)))
    delay = max(0, int(getattr(settings, "COMPOSER_UNBIND_BACKOFF_MS", 250))) / 1000
    error: DriverError | None = None
    for attempt in range(1, attempts + 1):
        try:
            driver.unbind(binding_id=binding_id)
            return None
        except DriverError as exc:
            error = exc
            if exc.permanent or attempt == attempts:
                break
            logger.info(
                "unbind of %s failed (%s); try %s of %s in %.2f s",
                binding_id,
                exc.message,
                attempt + 1,
                attempts,
                delay,
            )
            sleep(delay)
            delay *= 2
    return error


def undo(
    driver: FabricDriver,
    target: BindTarget[T],
    *,
    reported: Sequence[Binding] | None,
    narrator: Narrator[T],
    raise_transient: bool = False,
) -> dict[str, str]:
    """Unbind what `target` bound: its recorded `binding_id`, and the bindings the manager
    reports for it (`reported`, None when it could not be read) that a lost reply never
    recorded; each with its retries (`unbind`), each outcome told to `narrator`. Returns
    the binding ids not undone, with their last error.

    `raise_transient`: a transient error (after the retries) goes up instead, for a caller
    that may still try again later with a longer back-off (a decompose job's task).
    """
    ids = {target.binding_id} if target.binding_id else set()
    if reported is not None:
        ids |= {b.binding_id for b in reported if binding_matches(b, target)}
    left: dict[str, str] = {}
    for binding_id in sorted(ids):
        error = unbind(driver, binding_id)
        if error is None:
            narrator.unbound(target, binding_id)
            continue
        if raise_transient and not error.permanent:
            raise error
        narrator.unbind_failed(target, binding_id, error)
        left[binding_id] = error.message
    return left


def undo_each(
    driver: FabricDriver,
    targets: Sequence[BindTarget[T]],
    *,
    reported: Sequence[Binding] | None,
    narrator: Narrator[T],
) -> list[tuple[BindTarget[T], dict[str, str]]]:
    """`undo` for each of `targets`, in order, each to the end whatever the others did;
    returns those not fully undone, each with {binding id: last error}."""
    failed: list[tuple[BindTarget[T], dict[str, str]]] = []
    for target in targets:
        left = undo(driver, target, reported=reported, narrator=narrator)
        if left:
            failed.append((target, left))
    return failed
