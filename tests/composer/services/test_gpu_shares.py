"""Shares of a GPU in the database: `allocated_shares` and `shared_host` follow every claim,
bind and release under the device's row lock, the database's constraints refuse what the
claims must never do, and the pool's figures count a shared GPU by the shares it holds."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction

from composer.errors import ClaimConflict
from composer.models import Allocation, Composition
from composer.services.allocations import (
    Claim,
    allocation_mark_bound,
    allocations_claim,
    allocations_release,
)
from composer.services.allocations.shares import devices_shares_reconcile, shares_held
from fabric.choices import ChangeAction, DeviceState
from fabric.models import ChangeRecord, Device, FabricManager, Host, Pool
from fabric.selectors import pool_capacity

pytestmark = pytest.mark.django_db


def gpu() -> Device:
    found = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert found is not None
    return found


def hosts() -> tuple[Host, Host]:
    first, second = Host.objects.order_by("pk")[:2]
    return first, second


def composition(tenant: Any, name: str, host: Host) -> Composition:
    return Composition.objects.create(tenant=tenant, name=name, spec={}, host=host)


def share(tenant: Any, name: str, host: Host, device: Device, amount: int) -> Allocation:
    [allocation] = allocations_claim(
        composition=composition(tenant, name, host),
        claims=[Claim(device.pk, share=amount)],
        host=host,
    )
    return allocation


def figures(device: Device) -> tuple[str, int, int | None, int | None]:
    device.refresh_from_db()
    return device.state, device.allocated_shares, device.shared_host_id, device.bound_host_id


def test_shares_fit_on_a_free_gpu_and_on_the_same_host_up_to_the_whole(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, _) = gpu(), hosts()
    share(acme, "a", host, device, 250)
    assert figures(device) == (DeviceState.RESERVED, 250, host.pk, None)
    share(acme, "b", host, device, 750)
    assert figures(device) == (DeviceState.RESERVED, 1000, host.pk, None)
    assert device.free_shares == 0 and not device.is_usable
    assert shares_held([device.pk]) == {device.pk: 1000}


def test_a_share_never_over_allocates_the_gpu(synced: FabricManager, acme: Any) -> None:
    device, (host, _) = gpu(), hosts()
    share(acme, "a", host, device, 600)
    with pytest.raises(ClaimConflict, match="400/1000 free; a 500/1000 share asked"):
        share(acme, "b", host, device, 500)
    assert figures(device) == (DeviceState.RESERVED, 600, host.pk, None)
    assert Allocation.objects.filter(device=device).count() == 1  # nothing written


def test_a_share_of_a_gpu_shared_on_another_host_is_refused(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, other) = gpu(), hosts()
    share(acme, "a", host, device, 250)
    with pytest.raises(ClaimConflict, match="shared on another host"):
        share(acme, "b", other, device, 250)
    assert figures(device) == (DeviceState.RESERVED, 250, host.pk, None)


def test_a_shared_gpu_is_never_claimed_whole(synced: FabricManager, acme: Any) -> None:
    device, (host, _) = gpu(), hosts()
    share(acme, "a", host, device, 250)
    whole = composition(acme, "whole", host)
    with pytest.raises(ClaimConflict, match="is shared"):
        allocations_claim(composition=whole, claims=[Claim(device.pk)], host=host)


def test_a_gpu_claimed_whole_takes_no_share(synced: FabricManager, acme: Any) -> None:
    device, (host, _) = gpu(), hosts()
    allocations_claim(
        composition=composition(acme, "whole", host), claims=[Claim(device.pk)], host=host
    )
    with pytest.raises(ClaimConflict, match="no longer free"):
        share(acme, "a", host, device, 250)


def test_a_share_is_never_a_whole_gpu_nor_a_share_of_a_device_taken_whole(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, _) = gpu(), hosts()
    with pytest.raises(ClaimConflict, match="1 to 999 of 1000"):
        share(acme, "a", host, device, 1000)
    nvme = Device.objects.filter(kind="nvme").first()
    assert nvme is not None
    with pytest.raises(ClaimConflict, match="taken whole, never shared"):
        share(acme, "b", host, nvme, 250)
    with pytest.raises(ClaimConflict, match="claimed for a host"):
        allocations_claim(
            composition=composition(acme, "c", host),
            claims=[Claim(device.pk, share=250)],
            host=None,
        )


def test_the_first_bound_share_binds_the_gpu_to_its_host_and_the_last_release_frees_it(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, _) = gpu(), hosts()
    first = share(acme, "a", host, device, 250)
    second = share(acme, "b", host, device, 500)
    allocation_mark_bound(allocation=first, binding_id="bind-1", host=host)
    assert figures(device) == (DeviceState.BOUND, 750, host.pk, host.pk)
    allocation_mark_bound(allocation=second, binding_id="bind-1", host=host)

    assert allocations_release(composition=first.composition) == 1
    assert figures(device) == (DeviceState.BOUND, 500, host.pk, host.pk)  # the other stays
    assert allocations_release(composition=second.composition) == 1
    assert figures(device) == (DeviceState.FREE, 0, None, None)  # whole and free again
    assert device.is_usable
    last = ChangeRecord.objects.filter(
        target_type="device", target_id=device.pk, action=ChangeAction.CHANGED
    ).latest("pk")
    assert last.changes["allocated_shares"] == [500, 0]
    assert last.changes["state"] == [DeviceState.BOUND, DeviceState.FREE]
    # A whole claim may take it now, and another host may share it.
    allocations_claim(
        composition=composition(acme, "whole", host), claims=[Claim(device.pk)], host=host
    )


def test_the_database_refuses_over_allocated_shares_a_shared_gpu_without_host_or_free(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, _) = gpu(), hosts()
    bad = [
        {"allocated_shares": 1001, "shared_host": host, "state": DeviceState.RESERVED},
        {"allocated_shares": 250, "shared_host": None, "state": DeviceState.RESERVED},
        {"allocated_shares": 0, "shared_host": host, "state": DeviceState.FREE},
        {"allocated_shares": 250, "shared_host": host, "state": DeviceState.FREE},
    ]
    for fields in bad:
        with pytest.raises(IntegrityError), transaction.atomic():
            Device.objects.filter(pk=device.pk).update(**fields)
    nvme = Device.objects.filter(kind="nvme").first()
    assert nvme is not None
    with pytest.raises(IntegrityError), transaction.atomic():
        Device.objects.filter(pk=nvme.pk).update(
            allocated_shares=1, shared_host=host, state=DeviceState.RESERVED
        )


def test_a_shared_gpu_counts_in_its_pool_by_the_shares_held(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, _) = gpu(), hosts()
    pool, _ = Pool.objects.get_or_create(slug="gpus", defaults={"name": "GPUs", "kind": "gpu"})
    Device.objects.filter(kind="gpu").update(pool=pool)
    before = pool_capacity(pool=pool)
    share(acme, "a", host, device, 250)
    after = pool_capacity(pool=pool)
    assert after.capacity == before.capacity
    assert after.allocated == before.allocated + 0.25
    assert after.free == before.free - 0.25
    split = Device.objects.get(pk=device.pk).capacity
    assert (split.allocated, split.free) == (0.25, 0.75)


def test_the_reconciler_recounts_a_gpu_s_shares_from_those_held(
    synced: FabricManager, acme: Any
) -> None:
    device, (host, _) = gpu(), hosts()
    share(acme, "a", host, device, 250)
    Device.objects.filter(pk=device.pk).update(allocated_shares=900)  # drifted: too high
    stray = Device.objects.filter(kind="gpu").exclude(pk=device.pk).first()
    assert stray is not None
    Device.objects.filter(pk=stray.pk).update(  # held by nothing at all
        allocated_shares=300, shared_host=host, state=DeviceState.RESERVED
    )

    assert sorted(devices_shares_reconcile()) == sorted([device.pk, stray.pk])

    assert figures(device) == (DeviceState.RESERVED, 250, host.pk, None)
    assert figures(stray) == (DeviceState.FREE, 0, None, None)
    assert devices_shares_reconcile() == []  # settled
    record = ChangeRecord.objects.filter(target_type="device", target_id=stray.pk).latest("pk")
    assert record.source == "reconciliation" and record.changes["allocated_shares"] == [300, 0]
