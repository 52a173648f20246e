"""Composer's side of the reconfiguration workflow (`fabric.reconfig`): its allocations as
what to bind, its words in a job's log, its records and its errors.

`fabric.reconfig` talks to the driver: it binds (reconciling a timeout with `bindings()`),
binds side by side, adopts on resume, verifies and undoes with retries. It knows nothing
of allocations, tenants or job logs; this module supplies them. An allocation becomes a
`BindTarget` (the device's and host's external ids, the slice); each event is logged in
the words of the job's readers (`JobNarrator`: operators read the manager's answer and
binding ids, the tenant reads `for_tenants` words); a failed bind is retold as a
`BindingFailed` in composer's words, which the job's error and the composition's failure
reason carry to its tenant; and adopting on resume asks the database which bindings an
allocation or an `UnbindPending` row already holds. Used by the compose, decompose and
heal jobs and the reconciler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

from composer.errors import BindingFailed
from composer.joblog import for_tenants, job_log_adopter
from composer.lease import LeaseLost
from composer.models import Allocation, UnbindPending
from fabric import reconfig
from fabric.choices import DeviceKind
from fabric.drivers.base import Binding, DriverError, FabricDriver
from fabric.models import Host
from fabric.reconfig import BindError, BindTarget

logger = logging.getLogger(__name__)

__all__ = [
    "JobNarrator",
    "allocation_bind",
    "allocation_label",
    "allocation_target",
    "allocation_unbind",
    "allocation_words",
    "allocations_bind",
    "allocations_unbind",
    "allocations_verify",
    "bindings_adopt",
]

KIND_LABELS: dict[str, str] = dict(DeviceKind.choices)

Target = BindTarget[Allocation]


def allocation_label(allocation: Allocation) -> str:
    """How a job's log names what an allocation binds: "gpu-a-02-1", "mem-a-01-1 (256 GiB)",
    "gpu-a-02-2 (250/1000 share)"."""
    if allocation.share:
        whole = allocation.device.shares_per_device
        return f"{allocation.device.name} ({allocation.share}/{whole} share)"
    return allocation.device.name + (f" ({allocation.gib} GiB)" if allocation.gib else "")


def allocation_words(allocation: Allocation) -> str:
    """The same for the tenant's lines, with the kind: "GPU gpu-a-02-1"."""
    kind = KIND_LABELS.get(allocation.device.kind, "")
    return f"{kind} {allocation_label(allocation)}".strip()


def allocation_target(allocation: Allocation, host: Host) -> Target:
    """`allocation` on `host` in the manager's terms, with its recorded binding id."""
    return BindTarget(
        item=allocation,
        device_id=allocation.device.external_id,
        host_id=host.external_id,
        size_gib=allocation.gib,
        binding_id=allocation.binding_id,
    )


def _failure_words(name: str, host: Host, *, permanent: bool) -> str:
    if permanent:
        return f"The fabric manager refused to bind {name} to {host.name}."
    return f"The fabric manager did not bind {name} to {host.name} in time."


class JobNarrator:
    """Tells `fabric.reconfig`'s events for allocations on `host` in a job's log: each line
    for operators, with the tenant's words where the tenant may read it (never the
    manager's own answer, nor a binding id)."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def bind_timed_out(self, target: Target) -> None:
        logger.warning(
            "binding %s timed out; asking the fabric manager whether it happened",
            target.item.device.name,
            extra=for_tenants(),
        )

    def bind_found(self, target: Target, binding: Binding) -> None:
        name = target.item.device.name
        logger.info(
            "the binding of %s exists: %s",
            name,
            binding.binding_id,
            extra=for_tenants(f"The binding of {name} exists."),
        )

    def bind_failed(self, target: Target, error: DriverError) -> None:
        name = target.item.device.name
        logger.warning(
            "binding %s to %s failed: %s",
            name,
            self.host.name,
            error.message,
            extra=for_tenants(_failure_words(name, self.host, permanent=error.permanent)),
        )

    def adopted(self, target: Target, binding: Binding) -> None:
        allocation = target.item
        logger.info(
            "the fabric manager already reports %s bound to %s (%s), a bind whose reply was "
            "never recorded: recorded, not bound again",
            allocation_label(allocation),
            self.host.name,
            binding.binding_id,
            extra=for_tenants(f"{allocation_words(allocation)} was already bound; recorded."),
        )

    def record_failed(self, target: Target, error: BaseException) -> None:
        if isinstance(error, LeaseLost):
            return  # recorded; the step after it found the job taken over
        # The rollback still finds it: it asks the manager.
        logger.exception("could not record the binding of %s", target.item.device.name)

    def unbound(self, target: Target, binding_id: str) -> None:
        name = target.item.device.name
        logger.info("unbound %s (%s)", name, binding_id, extra=for_tenants(f"Unbound {name}."))

    def unbind_failed(self, target: Target, binding_id: str, error: DriverError) -> None:
        name = target.item.device.name
        logger.error(
            "could not unbind %s (%s): %s; the reconciler retries it",
            name,
            binding_id,
            error.message,
            extra=for_tenants(f"Could not unbind {name} yet; it is retried automatically."),
        )


def _retold(exc: BindError, host: Host) -> BindingFailed:
    """A failed bind in composer's words (the manager's answer is in the operators' line)."""
    name = exc.target.item.device.name
    words = _failure_words(name, host, permanent=exc.permanent)
    return BindingFailed(words, permanent=exc.permanent)


def allocation_bind(driver: FabricDriver, allocation: Allocation, host: Host) -> Binding:
    """Bind one allocation (`fabric.reconfig.bind`: after a timeout, the manager is asked).

    Raises BindingFailed in composer's words, from the driver's error.
    """
    try:
        return reconfig.bind(
            driver, allocation_target(allocation, host), narrator=JobNarrator(host)
        )
    except BindError as exc:
        raise _retold(exc, host) from exc.cause


def allocations_bind(
    driver: FabricDriver,
    allocations: Sequence[Allocation],
    host: Host,
    record: Callable[[Allocation, Binding], None],
) -> None:
    """Bind `allocations` (`fabric.reconfig.bind_many`: side by side when the manager is
    slow) and `record` each binding as soon as it is made. The helper threads' lines are the
    running job's log. Raises BindingFailed for the first bind that failed, in composer's
    words, or whatever else stopped it (a time limit, a lost lease)."""
    try:
        reconfig.bind_many(
            driver,
            [allocation_target(a, host) for a in allocations],
            record=lambda target, binding: record(target.item, binding),
            narrator=JobNarrator(host),
            log_adopter=job_log_adopter(),
        )
    except BindError as exc:
        raise _retold(exc, host) from exc.cause


def _claimed(ids: Collection[str]) -> set[str]:
    """Which of the binding ids `ids` an active allocation records, or an open
    `UnbindPending` row holds (a released slice of the same device on the same host looks
    alike: it is the reconciler's, never a resumed job's)."""
    taken = set(
        Allocation.objects.filter(binding_id__in=list(ids), released_at__isnull=True).values_list(
            "binding_id", flat=True
        )
    )
    taken |= set(
        UnbindPending.objects.filter(binding_id__in=list(ids), undone_at__isnull=True).values_list(
            "binding_id", flat=True
        )
    )
    return taken


def bindings_adopt(
    driver: FabricDriver,
    allocations: Sequence[Allocation],
    host: Host,
    record: Callable[[Allocation, Binding], None],
    reported: list[Binding] | None = None,
) -> list[Allocation]:
    """Record the bindings the manager already has for unbound `allocations`; return the
    allocations still to bind (`fabric.reconfig.adopt`, for a job that resumes after its
    worker died: a bind made just before the death may never have been recorded). A
    binding another active allocation or a binding still to undo holds is never taken."""
    rest = reconfig.adopt(
        driver,
        [allocation_target(a, host) for a in allocations],
        record=lambda target, binding: record(target.item, binding),
        claimed=_claimed,
        narrator=JobNarrator(host),
        reported=reported,
    )
    return [target.item for target in rest]


def allocations_verify(
    driver: FabricDriver, allocations: Sequence[Allocation], host: Host
) -> list[Binding]:
    """Check every allocation's recorded binding against the manager's report
    (`fabric.reconfig.verify`); return the report. Raises BindingFailed (permanent) naming
    the devices it does not report bound to `host`, DriverError when it cannot be read."""
    verification = reconfig.verify(driver, [allocation_target(a, host) for a in allocations])
    if verification.missing:
        names = ", ".join(t.item.device.name for t in verification.missing)
        raise BindingFailed(
            f"Verification failed: the fabric manager does not report {names} "
            f"bound to {host.name}.",
            permanent=True,
        )
    return verification.reported


def allocation_unbind(
    driver: FabricDriver,
    allocation: Allocation,
    host: Host,
    reported: Sequence[Binding] | None,
    *,
    raise_transient: bool = False,
) -> dict[str, str]:
    """Unbind what `allocation` bound (`fabric.reconfig.undo`: its recorded id, and bindings
    the manager reports for it that a lost reply never recorded, each with its retries).
    Returns the binding ids not undone, with their last error, for an `UnbindPending` row.

    `raise_transient`: a transient error (after the retries) goes up instead, for a job
    whose task may still retry with back-off (decompose). Used by the compose rollback,
    the heal's swap and rollback, and decompose: one loop, one wording.
    """
    return reconfig.undo(
        driver,
        allocation_target(allocation, host),
        reported=reported,
        narrator=JobNarrator(host),
        raise_transient=raise_transient,
    )


def allocations_unbind(
    driver: FabricDriver,
    allocations: Sequence[Allocation],
    host: Host,
    reported: Sequence[Binding] | None,
) -> dict[int, dict[str, str]]:
    """`allocation_unbind` for each of `allocations`; returns, for those not fully undone,
    {allocation id: {binding id: last error}}."""
    failed = reconfig.undo_each(
        driver,
        [allocation_target(a, host) for a in allocations],
        reported=reported,
        narrator=JobNarrator(host),
    )
    return {target.item.pk: left for target, left in failed}
