"""Binding and unbinding shares of a GPU: the GPU is bound to its host once, by the first
share bound, and unbound once, when the last share is released.

The fabric manager binds devices, not shares: every share of a GPU is on the one host it is
bound to (`composer.services.allocations.shares`), so a later share records the binding the
first one made and needs no fabric operation, and a share released while others hold the
GPU only gives its part back. Both decisions are taken under the GPU's row lock, which the
claims, binds and releases of its shares all take: two compositions bound at once never
both bind it, and two released at once never both leave it bound (the second to get the
lock sees the first's share released, is the last, and unbinds).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from django.db import transaction

from composer.joblog import for_tenants
from composer.models import Allocation, Composition
from composer.services.allocations import allocations_release
from composer.services.allocations.shares import give_back_shares
from composer.services.bindings import (
    allocation_bind,
    allocation_label,
    allocation_unbind,
    allocation_words,
)
from composer.services.unbinds import allocation_release_unbind_pending
from fabric.drivers.base import Binding, FabricDriver
from fabric.models import Device, Host

logger = logging.getLogger(__name__)

__all__ = ["allocation_unbind_release", "shares_bind", "shares_unbind_release"]


def _other_binding(allocation: Allocation) -> str:
    """The binding id another live share of the same GPU recorded ("" for none)."""
    return (
        Allocation.objects.filter(
            device_id=allocation.device_id, released_at__isnull=True, share__isnull=False
        )
        .exclude(pk=allocation.pk)
        .exclude(binding_id="")
        .values_list("binding_id", flat=True)
        .first()
        or ""
    )


def shares_bind(
    driver: FabricDriver,
    allocations: Sequence[Allocation],
    host: Host,
    record: Callable[[Allocation, Binding], None],
) -> None:
    """Bind each share of `allocations` (their GPUs shared on `host`): the first share of a
    GPU binds it through the fabric (`allocation_bind`), a later one records the binding
    already made. `record` as for `allocations_bind`. Raises BindingFailed as it does."""
    for allocation in allocations:
        with transaction.atomic():
            Device.objects.select_for_update().filter(pk=allocation.device_id).first()
            existing = _other_binding(allocation)
            if existing:
                binding = Binding(existing, allocation.device.external_id, host.external_id)
                logger.info(
                    "%s is bound to %s already (%s): the share needs no fabric operation",
                    allocation_label(allocation),
                    host.name,
                    existing,
                    extra=for_tenants(
                        f"{allocation_words(allocation)} is bound to {host.name} already."
                    ),
                )
            else:
                binding = allocation_bind(driver, allocation, host)
            record(allocation, binding)


def allocation_unbind_release(
    *,
    driver: FabricDriver,
    composition: Composition,
    allocation: Allocation,
    host: Host,
    reported: Sequence[Binding] | None,
    raise_transient: bool,
    source: str,
) -> None:
    """Unbind what `allocation` of `composition` bound on `host` and release it; what could
    not be undone is held by an `UnbindPending` row instead (`allocation_unbind`,
    `raise_transient` as there). A share of a GPU other shares still hold needs no fabric
    operation: its part is given back and the GPU stays bound; the last one unbinds it."""
    # A share decides under its GPU's row lock, and unbinds (the last one) under it, so a
    # share released at the same time waits, then finds the GPU free; a whole device or a
    # slice unbinds outside any transaction, as before.
    with transaction.atomic() if allocation.share else nullcontext():
        if allocation.share:
            Device.objects.select_for_update().filter(pk=allocation.device_id).first()
            others = (
                Allocation.objects.filter(device_id=allocation.device_id, released_at__isnull=True)
                .exclude(pk=allocation.pk)
                .exists()
            )
            if others:
                logger.info(
                    "%s stays bound to %s for the other shares",
                    allocation.device.name,
                    host.name,
                    extra=for_tenants(f"Gave back the share of {allocation_words(allocation)}."),
                )
                allocations_release(composition=composition, source=source, only=[allocation.pk])
                return
        not_undone = allocation_unbind(
            driver, allocation, host, reported, raise_transient=raise_transient
        )
        if not not_undone:
            allocations_release(composition=composition, source=source, only=[allocation.pk])
            return
        with transaction.atomic():
            allocation_release_unbind_pending(
                composition=composition,
                allocation=allocation,
                host=host,
                not_undone=not_undone,
                source=source,
            )
            if allocation.share:
                # The GPU stays bound, held by the UnbindPending row as a whole device is;
                # its last share is given back so that its figure is what compositions hold.
                device = Device.objects.select_related("shared_host").get(pk=allocation.device_id)
                give_back_shares(
                    device,
                    allocation.share,
                    message=f"Released by composition {composition.name}",
                    actor=None,
                    source=source,
                    still_bound=True,
                ).save()


def shares_unbind_release(
    *,
    driver: FabricDriver,
    composition: Composition,
    allocations: Sequence[Allocation],
    host: Host,
    reported: Sequence[Binding] | None,
    source: str,
) -> list[Allocation]:
    """Undo the shares among `allocations` of `composition` (`allocation_unbind_release`,
    what could not be unbound held by an `UnbindPending` row, transient errors never
    raised): each GPU stays bound while another composition holds a share of it. Returns
    the other allocations (whole devices, slices), left for the caller to unbind. Used by
    the compose and heal rollbacks, so that undoing a share never unbinds a GPU that
    another composition on the host still uses."""
    for share in [a for a in allocations if a.share]:
        allocation_unbind_release(
            driver=driver,
            composition=composition,
            allocation=share,
            host=host,
            reported=reported,
            raise_transient=False,
            source=source,
        )
    return [a for a in allocations if not a.share]
