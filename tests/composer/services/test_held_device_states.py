"""A device a composition holds keeps the state its holding says through failure and
recovery: the health poll and inventory sync bring a recovered one back RESERVED or BOUND,
never FREE, and every capacity figure counts it as allocated while it is held."""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import Composition
from composer.services.allocations import Claim, allocations_claim
from composer.services.compositions import composition_decompose
from fabric.choices import DeviceState, Health
from fabric.health.poll import health_poll
from fabric.models import ChangeRecord, Device, FabricManager, Pool
from fabric.selectors import pool_capacity
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.composer.services.test_health import L40S, compose, fault, gpu_of

pytestmark = pytest.mark.django_db


def recover(manager: FabricManager, device: Device, *, by: str) -> Device:
    """Recover `device` on the manager; the console learns it from a poll or a sync."""
    fault_inject(manager=manager, target_type="device", target_id=device.name, action="recover")
    if by == "poll":
        health_poll(manager=manager)
    else:
        inventory_sync(manager=manager)
    device.refresh_from_db()
    return device


def claimed(acme: Any, kind: str) -> Device:
    """A device of `kind` claimed (RESERVED) by a composition being built: a whole GPU, or a
    256 GiB slice of the memory device."""
    composition = Composition.objects.create(tenant=acme, name="building", spec={})
    device = Device.objects.filter(kind=kind).order_by("pk").first()
    assert device is not None
    gib = 256 if kind == "cxl_memory" else None
    allocations_claim(composition=composition, claims=[Claim(device.pk, gib)], host=None)
    return device


def test_a_failed_gpu_still_bound_to_its_host_counts_as_allocated(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    ready = compose(acme, alice, L40S)
    gpu = gpu_of(ready)
    pool = Pool.objects.create(slug="l40s", name="L40S", kind="gpu", model=gpu.model)
    Device.objects.filter(kind="gpu", model=gpu.model).update(pool=pool)

    fault(synced, "device", gpu.name)  # the sync, which knows the bindings, sets FAILED

    gpu.refresh_from_db()
    assert (gpu.state, gpu.bound_host_id) == (DeviceState.FAILED, ready.host_id)
    # Held, whatever its state: allocated, not unavailable (and not free).
    assert (gpu.capacity.allocated, gpu.capacity.unavailable) == (1, 0)
    cap = pool_capacity(pool=pool)
    assert (cap.allocated, cap.unavailable) == (1, 0)


@pytest.mark.parametrize("by", ["poll", "sync"])
def test_a_bound_gpu_that_recovers_is_bound_again(
    synced: FabricManager, acme: Any, alice: Any, by: str
) -> None:
    gpu = gpu_of(compose(acme, alice, L40S))
    fault(synced, "device", gpu.name)

    gpu = recover(synced, gpu, by=by)

    assert (gpu.health, gpu.state) == (Health.OK, DeviceState.BOUND)
    assert Device.objects.filter(kind="gpu", state=DeviceState.BOUND).get() == gpu
    record = ChangeRecord.objects.filter(target_type="device", target_id=gpu.pk).latest("pk")
    assert record.changes["state"] == [DeviceState.FAILED, DeviceState.BOUND]


@pytest.mark.parametrize("kind", ["gpu", "cxl_memory"])
@pytest.mark.parametrize("by", ["poll", "sync"])
def test_a_claimed_device_that_recovers_is_reserved_again_never_free(
    synced: FabricManager, acme: Any, kind: str, by: str
) -> None:
    device = claimed(acme, kind)
    fault(synced, "device", device.name)
    device.refresh_from_db()
    assert device.state == DeviceState.FAILED

    device = recover(synced, device, by=by)

    assert (device.health, device.state) == (Health.OK, DeviceState.RESERVED)
    assert not device.is_usable or kind == "cxl_memory"  # a whole one is nobody else's
    if kind == "cxl_memory":
        assert (device.allocated_gib, device.free_gib) == (256, device.memory_gib - 256)


def test_a_device_nothing_holds_recovers_free(synced: FabricManager) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    fault(synced, "device", gpu.name)

    gpu = recover(synced, gpu, by="poll")

    assert (gpu.health, gpu.state) == (Health.OK, DeviceState.FREE)


def test_a_failed_gpu_given_back_is_held_by_nothing_and_recovers_free(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    ready = compose(acme, alice, L40S)
    gpu = gpu_of(ready)
    fault(synced, "device", gpu.name)  # FAILED, still bound to its host

    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=ready, actor=alice)

    gpu.refresh_from_db()
    assert (gpu.state, gpu.bound_host) == (DeviceState.FAILED, None)
    assert (gpu.capacity.allocated, gpu.capacity.unavailable) == (0, 1)
    gpu = recover(synced, gpu, by="poll")
    assert (gpu.health, gpu.state) == (Health.OK, DeviceState.FREE)
