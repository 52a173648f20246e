"""Binding a composition's allocations through its fabric driver, and undoing them.

A bind that times out may have happened: the manager is asked (`bindings()`) and what it
reports is taken. Binds run side by side when the manager is slow (up to
COMPOSER_BIND_PARALLELISM at once), each recorded as soon as it is made. A driver error is
logged with the manager's own answer (for operators) and raised on as a `BindingFailed` in
composer's words, which the job's error and the composition's failure reason carry to its
tenant. Used by the compose, decompose and heal jobs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import connection

from composer.errors import BindingFailed
from composer.lease import LeaseLost
from composer.models import Allocation, UnbindPending
from composer.runner import for_tenants
from composer.services.unbinds import unbind_with_retries
from fabric.choices import DeviceKind
from fabric.drivers.base import Binding, DriverError, DriverTimeout, FabricDriver
from fabric.models import Host

logger = logging.getLogger(__name__)

KIND_LABELS: dict[str, str] = dict(DeviceKind.choices)


def _matches(binding: Binding, allocation: Allocation, host: Host) -> bool:
    return (
        binding.device_id == allocation.device.external_id
        and binding.host_id == host.external_id
        and binding.size_gib == allocation.gib
    )


def allocation_label(allocation: Allocation) -> str:
    """How a job's log names what an allocation binds: "gpu-a-02-1", "mem-a-01-1 (256 GiB)"."""
    return allocation.device.name + (f" ({allocation.gib} GiB)" if allocation.gib else "")


def allocation_words(allocation: Allocation) -> str:
    """The same for the tenant's lines, with the kind: "GPU gpu-a-02-1"."""
    kind = KIND_LABELS.get(allocation.device.kind, "")
    return f"{kind} {allocation_label(allocation)}".strip()


def _bind(driver: FabricDriver, allocation: Allocation, host: Host) -> Binding:
    """Bind one allocation; after a timeout, look for the binding on the manager.

    A driver error is logged with the manager's answer (operators' line) and raised on as
    a BindingFailed in composer's words, which the job's error and the composition's
    failure reason carry to its tenant.
    """
    name = allocation.device.name
    try:
        try:
            return driver.bind(
                device_id=allocation.device.external_id,
                host_id=host.external_id,
                size_gib=allocation.gib,
            )
        except DriverTimeout:
            logger.warning(
                "binding %s timed out; asking the fabric manager whether it happened",
                name,
                extra=for_tenants(),
            )
            for binding in driver.bindings():
                if _matches(binding, allocation, host):
                    logger.info(
                        "the binding of %s exists: %s",
                        name,
                        binding.binding_id,
                        extra=for_tenants(f"The binding of {name} exists."),
                    )
                    return binding
            raise
    except DriverError as exc:
        if exc.permanent:
            words = f"The fabric manager refused to bind {name} to {host.name}."
        else:
            words = f"The fabric manager did not bind {name} to {host.name} in time."
        logger.warning(
            "binding %s to %s failed: %s", name, host.name, exc.message, extra=for_tenants(words)
        )
        raise BindingFailed(words, permanent=exc.permanent) from exc


def _bind_in_thread(
    driver: FabricDriver, allocation: Allocation, host: Host, adopt: Callable[[], None]
) -> Binding:
    """`_bind` from a thread of the compose job's pool: its log lines are the job's, and the
    database connection it opened (Django's are per thread) is closed when it is done."""
    adopt()
    try:
        return _bind(driver, allocation, host)
    finally:
        connection.close()


def _parallel_binds(count: int) -> int:
    """How many of `count` binds to run at once (1: one after the other, in this thread).

    In parallel only outside a transaction: each bind runs in a thread with its own
    connection, which sees only what is committed. (On SQLite the threads take the one
    write lock in turn; the manager's latency, outside any transaction, still overlaps.)"""
    width = int(getattr(settings, "COMPOSER_BIND_PARALLELISM", 4))
    if count < 2 or width < 2:
        return 1
    return 1 if connection.in_atomic_block else min(width, count)


def _slow(seconds: float) -> bool:
    """Whether a bind that took `seconds` makes the rest worth a thread and a connection
    each (opening a database connection costs a few milliseconds: a fast manager binds
    sooner than that)."""
    return seconds * 1000 >= float(getattr(settings, "COMPOSER_BIND_PARALLEL_AFTER_MS", 20))


def _bind_each(
    driver: FabricDriver,
    allocations: Sequence[Allocation],
    host: Host,
    record: Callable[[Allocation, Binding], None],
    adopt: Callable[[], None],
) -> None:
    """Bind `allocations` and `record` each binding as soon as it is made.

    The first bind runs here. When it was slow (COMPOSER_BIND_PARALLEL_AFTER_MS), up to
    COMPOSER_BIND_PARALLELISM of the others are in flight at once: a fabric manager binds
    devices independently, so five 400 ms binds take 800 ms, not 2 s. A fast manager
    binds the rest here too, one after the other. The first failure (or an interruption,
    such as the time limit) cancels the binds not yet started and is raised once every
    bind in flight has ended and every one that succeeded is recorded (rule 2: a binding
    is recorded or undone; the rollback and a retry also ask the manager).
    """
    width = _parallel_binds(len(allocations))
    rest = list(allocations)
    while rest:
        allocation = rest.pop(0)
        started = time.monotonic()
        binding = _bind(driver, allocation, host)
        slow = _slow(time.monotonic() - started)
        record(allocation, binding)
        if width > 1 and rest and slow:
            break
    if not rest:
        return
    pool = ThreadPoolExecutor(max_workers=min(width, len(rest)), thread_name_prefix="bind")
    futures = [pool.submit(_bind_in_thread, driver, allocation, host, adopt) for allocation in rest]
    pending = dict(zip(futures, rest, strict=True))
    failure: BaseException | None = None
    try:
        while pending and failure is None:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in [f for f in futures if f in finished]:  # in request order
                allocation = pending.pop(future)
                error = future.exception()
                if error is not None:
                    failure = failure or error
                else:
                    record(allocation, future.result())
    except BaseException as exc:  # a time limit while waiting, a failed record
        failure = exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        # Binds that ended while the failure was handled are recorded before it goes up.
        for future, allocation in pending.items():
            if future.cancelled() or future.exception() is not None:
                continue
            try:
                record(allocation, future.result())
            except LeaseLost:  # recorded; the step after it found the job taken over
                pass
            except Exception:  # the rollback still finds it: it asks the manager
                logger.exception("could not record the binding of %s", allocation.device.name)
    if failure is not None:
        raise failure


def bindings_adopt(
    driver: FabricDriver,
    allocations: Sequence[Allocation],
    host: Host,
    record: Callable[[Allocation, Binding], None],
    reported: list[Binding] | None = None,
) -> list[Allocation]:
    """Record the bindings the manager already has for unbound `allocations`; return the
    allocations still to bind.

    For a job that resumes after its worker died: a bind may have happened just before
    the death, its reply never recorded. Binding again would bind the device twice on a
    manager whose bind is not idempotent; the manager is asked instead (`reported`, or
    `bindings()`), and a binding that matches (device, host, slice) and that no other
    active allocation records is taken as this allocation's.
    """
    if not allocations:
        return []
    reported = driver.bindings() if reported is None else reported
    ids = [b.binding_id for b in reported]
    taken = set(
        Allocation.objects.filter(binding_id__in=ids, released_at__isnull=True).values_list(
            "binding_id", flat=True
        )
    )
    # A binding waiting to be undone (a released slice of the same device on the same host
    # looks alike) is the reconciler's, never a resumed job's.
    taken |= set(
        UnbindPending.objects.filter(binding_id__in=ids, undone_at__isnull=True).values_list(
            "binding_id", flat=True
        )
    )
    rest: list[Allocation] = []
    for allocation in allocations:
        found = next(
            (b for b in reported if b.binding_id not in taken and _matches(b, allocation, host)),
            None,
        )
        if found is None:
            rest.append(allocation)
            continue
        taken.add(found.binding_id)
        name = allocation_label(allocation)
        logger.info(
            "the fabric manager already reports %s bound to %s (%s), a bind whose reply was "
            "never recorded: recorded, not bound again",
            name,
            host.name,
            found.binding_id,
            extra=for_tenants(f"{allocation_words(allocation)} was already bound; recorded."),
        )
        record(allocation, found)
    return rest


def manager_bindings(driver: FabricDriver) -> list[Binding] | None:
    """What the manager reports bound, or None when it cannot be read: an undo then goes by
    the recorded binding ids alone (a reply that was lost stays for the reconciliation)."""
    try:
        return driver.bindings()
    except DriverError:
        return None


def allocation_unbind(
    driver: FabricDriver,
    allocation: Allocation,
    host: Host | None,
    reported: list[Binding] | None,
    *,
    raise_transient: bool = False,
) -> dict[str, str]:
    """Unbind what `allocation` bound (its recorded id, and bindings the manager reports
    for it that a lost reply never recorded), each with its retries (`unbind_with_retries`).
    Returns the binding ids not undone, with their last error, for an `UnbindPending` row.

    `raise_transient`: a transient error (after the retries) goes up instead, for a job
    whose task may still retry with back-off (decompose). Used by the compose rollback,
    the heal's swap and rollback, and decompose: one loop, one wording.
    """
    ids = {allocation.binding_id} if allocation.binding_id else set()
    if reported is not None and host is not None:
        ids |= {b.binding_id for b in reported if _matches(b, allocation, host)}
    left: dict[str, str] = {}
    name = allocation.device.name
    for binding_id in sorted(ids):
        error = unbind_with_retries(driver, binding_id)
        if error is None:
            logger.info("unbound %s (%s)", name, binding_id, extra=for_tenants(f"Unbound {name}."))
            continue
        if raise_transient and not error.permanent:
            raise error
        logger.error(
            "could not unbind %s (%s): %s; the reconciler retries it",
            name,
            binding_id,
            error.message,
            extra=for_tenants(f"Could not unbind {name} yet; it is retried automatically."),
        )
        left[binding_id] = error.message
    return left


def _undo(
    driver: FabricDriver,
    allocations: Iterable[Allocation],
    host: Host | None,
    reported: list[Binding] | None,
) -> dict[int, dict[str, str]]:
    """`allocation_unbind` for each of `allocations`; returns, for those not fully undone,
    {allocation id: {binding id: last error}}."""
    failed: dict[int, dict[str, str]] = {}
    for allocation in allocations:
        left = allocation_unbind(driver, allocation, host, reported)
        if left:
            failed[allocation.pk] = left
    return failed
