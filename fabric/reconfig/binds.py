"""Binding: one target, reconciled with the manager after a timeout; many, side by side.

A bind that times out may have happened on the manager: binding again would bind twice on
a manager whose bind is not idempotent, and giving up would leave a binding nobody
recorded. So the manager is asked (`bindings()`) and a binding that matches is taken.

A fabric manager binds devices independently, and a real one takes a while per bind: five
400 ms binds take 800 ms side by side, not 2 s. Past the first bind, when it was slow
(COMPOSER_BIND_PARALLEL_AFTER_MS), up to COMPOSER_BIND_PARALLELISM binds are in flight at
once, each in a thread of its own with its own database connection (the caller's `record`
writes there). Each binding is handed to `record` the moment it is made, so a caller that
dies mid-way finds it recorded (rule 2: a binding is recorded or undone).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import connection

from fabric.drivers.base import Binding, DriverError, DriverTimeout, FabricDriver
from fabric.reconfig.narration import Narrator
from fabric.reconfig.targets import BindError, BindTarget, Record, T, binding_matches

logger = logging.getLogger(__name__)

__all__ = ["bind", "bind_many", "bind_parallelism"]


def bind(driver: FabricDriver, target: BindTarget[T], *, narrator: Narrator[T]) -> Binding:
    """Bind `target` and return the manager's binding; after a timeout, the binding the
    manager reports for it, if any.

    Raises `BindError` (the driver's error as its cause, told to `narrator` first) when the
    bind failed, or timed out and the manager does not report it (transient), or the
    manager could not be asked.
    """
    try:
        try:
            return driver.bind(
                device_id=target.device_id, host_id=target.host_id, size_gib=target.size_gib
            )
        except DriverTimeout:
            narrator.bind_timed_out(target)
            for binding in driver.bindings():
                if binding_matches(binding, target):
                    narrator.bind_found(target, binding)
                    return binding
            raise
    except DriverError as exc:
        narrator.bind_failed(target, exc)
        raise BindError(target, exc) from exc


def bind_parallelism(count: int) -> int:
    """How many of `count` binds may run at once (1: one after the other, in this thread).

    In parallel only outside a transaction: each bind runs in a thread with its own
    connection, which sees only what is committed. (On SQLite the threads take the one
    write lock in turn; the manager's latency, outside any transaction, still overlaps.)
    """
    width = int(getattr(settings, "COMPOSER_BIND_PARALLELISM", 4))
    if count < 2 or width < 2:
        return 1
    return 1 if connection.in_atomic_block else min(width, count)


def _slow(seconds: float) -> bool:
    """Whether a bind that took `seconds` makes the rest worth a thread and a connection
    each (opening a database connection costs a few milliseconds: a fast manager binds
    sooner than that)."""
    return seconds * 1000 >= float(getattr(settings, "COMPOSER_BIND_PARALLEL_AFTER_MS", 20))


def _bind_in_thread(
    driver: FabricDriver,
    target: BindTarget[T],
    narrator: Narrator[T],
    log_adopter: Callable[[], None],
) -> Binding:
    """`bind` from a helper thread: `log_adopter` first (what it logs is the caller's, e.g.
    a job's log), and the database connection it opened (Django's are per thread) is
    closed when it is done."""
    log_adopter()
    try:
        return bind(driver, target, narrator=narrator)
    finally:
        connection.close()


def bind_many(
    driver: FabricDriver,
    targets: Sequence[BindTarget[T]],
    *,
    record: Record[T],
    narrator: Narrator[T],
    log_adopter: Callable[[], None] = lambda: None,
) -> None:
    """Bind `targets` and `record` each binding as soon as it is made.

    The first bind runs here. When it was slow, up to COMPOSER_BIND_PARALLELISM of the
    others are in flight at once (`log_adopter` is called first in each helper thread); a
    fast manager binds the rest here too, one after the other. The first failure (a
    `BindError`, or an interruption such as a time limit, or a failed `record`) cancels
    the binds not yet started and is raised once every bind in flight has ended and every
    one that succeeded is recorded (a record that fails then is told to the narrator and
    dropped: the caller's rollback asks the manager anyway).
    """
    width = bind_parallelism(len(targets))
    rest = list(targets)
    while rest:
        target = rest.pop(0)
        started = time.monotonic()
        binding = bind(driver, target, narrator=narrator)
        slow = _slow(time.monotonic() - started)
        record(target, binding)
        if width > 1 and rest and slow:
            break
    if rest:
        _bind_side_by_side(driver, rest, min(width, len(rest)), record, narrator, log_adopter)


def _bind_side_by_side(
    driver: FabricDriver,
    targets: list[BindTarget[T]],
    width: int,
    record: Record[T],
    narrator: Narrator[T],
    log_adopter: Callable[[], None],
) -> None:
    """`targets` bound by `width` helper threads, each recorded here as it ends (those that
    end together, in request order)."""
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="bind")
    futures = [
        pool.submit(_bind_in_thread, driver, target, narrator, log_adopter) for target in targets
    ]
    pending: dict[Future[Binding], BindTarget[T]] = dict(zip(futures, targets, strict=True))
    failure: BaseException | None = None
    try:
        while pending and failure is None:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in [f for f in futures if f in finished]:  # in request order
                target = pending.pop(future)
                error = future.exception()
                if error is not None:
                    failure = failure or error
                else:
                    record(target, future.result())
    except BaseException as exc:  # a time limit while waiting, a failed record
        failure = exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        # Binds that ended while the failure was handled are recorded before it goes up.
        for future, target in pending.items():
            if future.cancelled() or future.exception() is not None:
                continue
            try:
                record(target, future.result())
            except Exception as exc:  # the caller's rollback still finds it: it asks the manager
                narrator.record_failed(target, exc)
    if failure is not None:
        raise failure
