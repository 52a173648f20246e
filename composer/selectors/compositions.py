"""Which compositions hold which devices, as far as the viewer may know.

Operators see every holder; a tenant member sees a holder only when it is a composition of
one of their tenants. Another tenant's composition is never named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.db.models import Count, Q, Sum
from django.urls import reverse

from composer.models import Allocation, Composition
from fabric.holders import Holder
from fabric.models import Device
from fabric.permissions import is_operator

if TYPE_CHECKING:
    from fabric.models import Pool

__all__ = [
    "PoolHolder",
    "SharedDevice",
    "device_holder_rows",
    "device_holders",
    "pool_holders",
    "pool_shared_devices",
]


def device_holders(*, device: Device, user: Any) -> list[Allocation]:
    """The unreleased allocations of `device` in compositions `user` may see (a CXL memory
    device may be shared by several, one slice each; a GPU by several on one host, a share
    each), tenant and host joined."""
    return list(
        Allocation.objects.filter(
            device=device,
            released_at__isnull=True,
            composition__in=Composition.objects.for_user(user).values("pk"),
        )
        .select_related("composition__tenant", "composition__host")
        .order_by("composition__name", "pk")
    )


def device_holder_rows(device: Device, user: Any) -> list[Holder]:
    """`device_holders` as the fabric's generic rows: registered with fabric.holders in
    ComposerConfig.ready(), so the device page names the composition without fabric
    importing composer. The tenant is named to operators only."""
    operator = is_operator(user)
    return [
        Holder(
            name=allocation.composition.name,
            url=reverse("composer:composition_detail", args=[allocation.composition_id]),
            state=allocation.get_state_display(),
            owner=allocation.composition.tenant.name if operator else None,
            owner_url=(
                f"{reverse('composer:composition_list')}?"
                f"{urlencode({'tenant': allocation.composition.tenant.slug})}"
                if operator
                else None
            ),
            gib=allocation.gib,
            share=allocation.share,
            host=allocation.composition.host.name if allocation.composition.host else None,
        )
        for allocation in device_holders(device=device, user=user)
    ]


@dataclass(frozen=True)
class PoolHolder:
    """A composition holding devices (or GiB, or shares of GPUs) of a pool."""

    composition: Composition
    devices: int
    gib: int
    shares: int = 0


def pool_holders(*, pool: Pool, user: Any) -> list[PoolHolder]:
    """The compositions `user` may see that hold devices or slices of `pool`."""
    rows = (
        Allocation.objects.filter(
            device__pool=pool,
            released_at__isnull=True,
            composition__in=Composition.objects.for_user(user).values("pk"),
        )
        .values("composition")
        .annotate(
            devices=Count("id", filter=Q(gib__isnull=True, share__isnull=True)),
            gib=Sum("gib"),
            shares=Sum("share"),
        )
        .order_by()
    )
    counts = {row["composition"]: row for row in rows}
    compositions = Composition.objects.filter(pk__in=counts).select_related("tenant")
    return sorted(
        (
            PoolHolder(
                composition=c,
                devices=counts[c.pk]["devices"] or 0,
                gib=counts[c.pk]["gib"] or 0,
                shares=counts[c.pk]["shares"] or 0,
            )
            for c in compositions
        ),
        key=lambda h: (h.composition.tenant.name, h.composition.name, h.composition.pk),
    )


@dataclass(frozen=True)
class SharedDevice:
    """A GPU of a pool split into shares: how many of its `shares` are free, and the host
    they are on (named to operators only: it tells of other tenants' compositions)."""

    device: Device
    free: int
    shares: int
    host: str | None


def pool_shared_devices(*, pool: Pool, user: Any) -> list[SharedDevice]:
    """The GPUs of `pool` some composition holds shares of, fewest free shares first. One
    query."""
    operator = is_operator(user)
    devices = (
        Device.objects.filter(pool=pool, allocated_shares__gt=0)
        .select_related("shared_host")
        .order_by("-allocated_shares", "name")
    )
    return [
        SharedDevice(
            device=device,
            free=device.free_shares or 0,
            shares=device.shares_per_device,
            host=device.shared_host.name if operator and device.shared_host else None,
        )
        for device in devices
    ]
