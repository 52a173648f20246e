"""Requests that name their devices: composed as named, refused naming the device, and
never the same device to two concurrent requests."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from composer.choices import CompositionState
from composer.errors import QuotaExceeded, SpecError
from composer.models import Allocation, Composition, Quota
from composer.placement.request import Placement, Rejection
from composer.services.compositions import composition_preview, composition_request
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager
from tests.composer.services.test_allocation_race import run_race
from tests.factories.composer import TenantFactory
from tests.support import race

pytestmark = pytest.mark.django_db


def gpu(index: int = 0) -> Device:
    return Device.objects.filter(kind="gpu").order_by("name")[index]


def test_a_named_free_gpu_is_composed_as_named(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    device = gpu(1)
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(
            tenant=acme, requested_by=alice, spec={"devices": [{"device": device.name}]}, name="p1"
        )
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY  # the compose job ran eagerly
    held = list(composition.allocations.values_list("device_id", flat=True))
    assert held == [device.pk]
    assert str(composition.placement["explanation"][0]).startswith("Named devices taken as asked")


def test_a_named_memory_device_without_gib_gives_all_its_free_gib(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    memory = Device.objects.filter(kind="cxl_memory").first()
    assert memory is not None
    spec = {"devices": [{"device": memory.pk}], "items": [{"kind": "gpu", "count": 1}]}
    composition = composition_request(tenant=acme, requested_by=alice, spec=spec, name="p2")
    slice_ = composition.allocations.get(gib__isnull=False)
    assert (slice_.device_id, slice_.gib) == (memory.pk, memory.memory_gib)


def test_a_named_busy_gpu_is_rejected_naming_it(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    device = gpu()
    spec = {"devices": [{"device": device.name}]}
    composition_request(tenant=acme, requested_by=alice, spec=spec, name="first")
    second = composition_request(tenant=acme, requested_by=alice, spec=spec, name="second")
    assert second.state == CompositionState.REJECTED
    assert second.failure_reason == f"GPU {device.name} is already composed."
    preview = composition_preview(tenant=acme, spec=spec)
    assert isinstance(preview, Rejection) and preview.message == second.failure_reason


def test_preview_of_a_named_device_explains_the_choice(synced: FabricManager, acme: Any) -> None:
    device = gpu()
    plan = composition_preview(tenant=acme, spec={"devices": [{"device": device.pk}]})
    assert isinstance(plan, Placement)
    assert f"GPU {device.name}" in plan.explanation[0].operator
    assert not Allocation.objects.exists()


def test_an_unknown_device_is_a_field_error(synced: FabricManager, acme: Any) -> None:
    with pytest.raises(SpecError) as caught:
        composition_preview(tenant=acme, spec={"devices": [{"device": "gpu-99"}]})
    assert caught.value.field == "devices[0].device"
    assert "no device named 'gpu-99'" in str(caught.value)


def test_gib_on_a_gpu_is_a_field_error(synced: FabricManager, acme: Any) -> None:
    with pytest.raises(SpecError) as caught:
        composition_preview(tenant=acme, spec={"devices": [{"device": gpu().pk, "gib": 8}]})
    assert caught.value.field == "devices[0].gib"


def test_named_devices_count_against_quotas(synced: FabricManager, acme: Any) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=1)
    spec = {"devices": [{"device": gpu(0).pk}, {"device": gpu(1).pk}]}
    with pytest.raises(QuotaExceeded) as caught:
        composition_preview(tenant=acme, spec=spec)
    assert caught.value.field == "devices[0].device"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_naming_the_same_gpu_never_both_get_it(
    postgres: None, synced: FabricManager
) -> None:
    device = gpu()
    tenants = [TenantFactory.create() for _ in range(4)]
    jobs = [
        {"tenant": t.pk, "name": f"pin-{i}", "spec": {"devices": [{"device": device.pk}]}}
        for i, t in enumerate(tenants)
    ]

    outcomes = run_race(race.request_child, jobs)

    granted = Counter(state == CompositionState.PLACING for _, state, _ in outcomes)
    assert granted == {True: 1, False: 3}, outcomes
    assert Allocation.objects.filter(device=device, released_at__isnull=True).count() == 1
    rejected = Composition.objects.filter(state=CompositionState.REJECTED)
    assert {c.failure_reason for c in rejected} == {f"GPU {device.name} is already composed."}
    device.refresh_from_db()
    assert device.state == DeviceState.BOUND


@pytest.mark.parametrize("value", ["²", "١٢", "99999999999999999999999", 2**70])
def test_a_device_that_looks_like_an_id_but_is_none_is_a_field_error(
    synced: FabricManager, acme: Any, value: Any
) -> None:
    with pytest.raises(SpecError) as caught:
        composition_preview(tenant=acme, spec={"devices": [{"device": value}]})
    assert caught.value.field == "devices[0].device"


def test_a_device_named_with_digits_is_found_by_its_name(synced: FabricManager, acme: Any) -> None:
    device, other = gpu(0), gpu(1)
    Device.objects.filter(pk=device.pk).update(name=str(other.pk))
    plan = composition_preview(tenant=acme, spec={"devices": [{"device": str(other.pk)}]})
    assert isinstance(plan, Placement)
    assert [p.device for p in plan.devices] == [f"device:{device.pk}"]
    by_id = composition_preview(tenant=acme, spec={"devices": [{"device": other.pk}]})
    assert isinstance(by_id, Placement)
    assert [p.device for p in by_id.devices] == [f"device:{other.pk}"]


def test_digits_no_device_is_named_are_its_id(synced: FabricManager, acme: Any) -> None:
    device = gpu(1)
    plan = composition_preview(tenant=acme, spec={"devices": [{"device": str(device.pk)}]})
    assert isinstance(plan, Placement)
    assert [p.device for p in plan.devices] == [f"device:{device.pk}"]
