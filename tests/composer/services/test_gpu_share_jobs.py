"""Two compositions sharing one GPU through the real job path (simulated driver): the first
share binds the GPU to its host, the second needs no fabric operation, the first released
leaves it bound for the other, the last released unbinds it and the GPU is whole again."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import JobKind
from composer.models import Allocation, Composition, Job
from composer.services.compositions import composition_decompose
from fabric.choices import DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from tests.support.compose import composed

pytestmark = pytest.mark.django_db

QUARTER = {"items": [{"kind": "gpu", "share": 250}]}
HALF = {"items": [{"kind": "gpu", "share": 500}]}


def held(composition: Composition) -> Allocation:
    return composition.allocations.select_related("device").get(released_at__isnull=True)


def test_two_compositions_share_one_gpu_bound_once_and_unbound_with_the_last(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    driver = get_driver(synced)
    first = composed(tenant=acme, user=alice, name="first", spec=QUARTER)
    share = held(first)
    gpu = share.device
    assert share.share == 250 and share.binding_id
    assert len(driver.bindings()) == 1

    second = composed(tenant=acme, user=alice, name="second", spec={**HALF, "host": first.host_id})
    other = held(second)
    # The GPU already shared on the host takes the share (best fit), bound once.
    assert (other.device_id, other.share, other.binding_id) == (gpu.pk, 500, share.binding_id)
    assert len(driver.bindings()) == 1
    gpu.refresh_from_db()
    assert (gpu.state, gpu.allocated_shares, gpu.shared_host_id, gpu.bound_host_id) == (
        DeviceState.BOUND,
        750,
        first.host_id,
        first.host_id,
    )
    assert first.placement["devices"][0]["share"] == 250
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=second.pk)
    lines = list(job.log_lines.values_list("message", "tenant_message"))
    assert any("(500/1000 share) is bound to" in m and "already" in t for m, t in lines), lines

    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=first, actor=alice)
    gpu.refresh_from_db()
    assert (gpu.state, gpu.allocated_shares, gpu.bound_host_id) == (
        DeviceState.BOUND,
        500,
        first.host_id,
    )
    assert len(driver.bindings()) == 1  # still bound for the second

    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=second, actor=alice)
    gpu.refresh_from_db()
    assert (gpu.state, gpu.allocated_shares, gpu.shared_host_id, gpu.bound_host_id) == (
        DeviceState.FREE,
        0,
        None,
        None,
    )
    assert driver.bindings() == []
    assert not Allocation.objects.filter(released_at__isnull=True).exists()
    assert Device.objects.get(pk=gpu.pk).is_usable
