"""The free pool as ResourceSlices: pools per model and fabric, only what a pod may be
given, and writes only when a pool changes (its generation moved, stale writes refused)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.kubernetes.api import Conflict
from composer.kubernetes.slices import (
    MAX_DEVICES,
    Pool,
    fabric_labels,
    pools_free,
    slices_planned,
)
from composer.services.bookings import booking_request
from composer.services.compositions import composition_request
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager
from tests.support.kube import FakeKube

pytestmark = pytest.mark.django_db

H100 = "sim/h100-pcie-80gb"


def apply(kube: FakeKube, pools: dict[str, Pool]) -> None:
    plan = slices_planned(kube.slices_list(), pools)
    for body in plan.create:
        kube.slice_create(body)
    for body in plan.replace:
        kube.slice_replace(body)
    for name in plan.delete:
        kube.slice_delete(name)


def names(pool: Pool) -> list[str]:
    return [d["name"] for d in pool.devices]


def test_free_devices_are_pooled_by_model_and_fabric_with_binding_conditions(
    synced: FabricManager,
) -> None:
    pools = pools_free()

    # GPUs, NICs and drives; never CXL memory (sliced, not handed out whole).
    assert set(pools) == {H100, "sim/l40s-48gb", "sim/connectx-7-400gbe", "sim/pm1743-7-68tb"}
    assert all(p.fabric == "sim" for p in pools.values())
    h100 = pools[H100].devices
    assert h100 and all(d["attributes"]["model"] == {"string": "H100 PCIe 80GB"} for d in h100)
    device = h100[0]
    assert device["bindsToNode"] is True
    assert device["bindingConditions"] == ["FabricDeviceReady"]
    assert device["bindingFailureConditions"] == ["FabricDeviceReschedule", "FabricDeviceFailed"]
    assert device["capacity"]["memory"] == {"value": "80Gi"}
    pk = device["attributes"]["composerId"]["int"]
    assert device["name"] == f"gpu-{pk}"


def test_devices_composed_failed_or_booked_are_not_offered(
    synced: FabricManager, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    gpus = list(Device.objects.filter(kind="gpu").order_by("pk"))
    before = {d["name"] for p in pools_free().values() for d in p.devices}
    with django_capture_on_commit_callbacks(execute=True):
        composition_request(
            tenant=acme, requested_by=None, name="c",
            spec={"devices": [{"device": gpus[0].pk}]},
        )  # fmt: skip
    Device.objects.filter(pk=gpus[1].pk).update(state=DeviceState.FAILED)
    start = timezone.now() + timedelta(days=1)
    booking_request(
        tenant=acme, requested_by=None, name="b", spec={"devices": [{"device": gpus[2].pk}]},
        starts_at=start, ends_at=start + timedelta(hours=2),
    )  # fmt: skip

    after = {d["name"] for p in pools_free().values() for d in p.devices}

    assert before - after == {f"gpu-{g.pk}" for g in gpus[:3]}


def test_a_pool_is_written_only_when_it_changes_at_a_new_generation(
    synced: FabricManager,
) -> None:
    kube = FakeKube()
    apply(kube, pools_free())
    assert len(kube.slices) == 4 and {w[0] for w in kube.writes} == {"create"}
    created = len(kube.writes)

    apply(kube, pools_free())  # nothing changed: nothing written
    assert len(kube.writes) == created

    gpu = Device.objects.filter(kind="gpu", model="H100 PCIe 80GB").order_by("pk").first()
    assert gpu is not None
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.MAINTENANCE)
    apply(kube, pools_free())

    assert kube.writes[created:] == [("replace", "composer-sim-h100-pcie-80gb-0")]
    (h100,) = [s for s in kube.slices.values() if s["spec"]["pool"]["name"] == H100]
    assert h100["spec"]["pool"]["generation"] == 2
    assert f"gpu-{gpu.pk}" not in [d["name"] for d in h100["spec"]["devices"]]
    others = [s for s in kube.slices.values() if s["spec"]["pool"]["name"] != H100]
    assert all(s["spec"]["pool"]["generation"] == 1 for s in others)


def test_a_pool_gone_is_deleted_and_a_stale_replace_is_a_conflict(
    synced: FabricManager,
) -> None:
    kube = FakeKube()
    apply(kube, pools_free())
    Device.objects.filter(model="H100 PCIe 80GB").update(state=DeviceState.MAINTENANCE)
    plan = slices_planned(kube.slices_list(), pools_free())
    assert plan.delete == ["composer-sim-h100-pcie-80gb-0"] and not plan.create and not plan.replace

    Device.objects.filter(model="H100 PCIe 80GB").update(state=DeviceState.FREE)
    one = Device.objects.filter(model="L40S 48GB").order_by("pk").first()
    assert one is not None
    Device.objects.filter(pk=one.pk).update(state=DeviceState.MAINTENANCE)
    plan = slices_planned(kube.slices_list(), pools_free())
    (replace,) = plan.replace
    # Someone else writes that slice between the read and the write: the write is refused.
    kube.slice_replace(dict(kube.slices[replace["metadata"]["name"]]))
    with pytest.raises(Conflict):
        kube.slice_replace(replace)


def test_large_pools_are_split_into_slices_of_at_most_128_devices() -> None:
    devices = tuple({"name": f"gpu-{i}", "attributes": {}} for i in range(300))
    plan = slices_planned([], {"big": Pool("big", "f1", devices)})

    assert [len(s["spec"]["devices"]) for s in plan.create] == [MAX_DEVICES, MAX_DEVICES, 44]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in plan.create} == {3}
    other = {
        "metadata": {"name": "theirs"},
        "spec": {"driver": "gpu.example.com", "pool": {"name": "big"}},
    }
    again = slices_planned([other, *plan.create], {"big": Pool("big", "f1", devices)})
    assert not again  # another driver's slice is neither counted nor touched


def test_a_slice_read_back_in_the_server_s_canonical_form_is_not_rewritten(
    synced: FabricManager,
) -> None:
    kube = FakeKube()
    apply(kube, pools_free())
    written = len(kube.writes)
    for item in kube.slices.values():  # quantities canonicalised, a gated field dropped
        for device in item["spec"]["devices"]:
            device.pop("bindingFailureConditions", None)
            if "storage" in device["capacity"]:
                device["capacity"]["storage"] = {"value": "7680000M"}

    apply(kube, pools_free())

    assert len(kube.writes) == written


def test_fabrics_whose_names_fold_alike_get_labels_of_their_own(synced: FabricManager) -> None:
    other = FabricManager.objects.create(name="SIM", driver="simulated", endpoint="sim://other")

    labels = fabric_labels()

    assert labels == {synced.pk: f"sim-{synced.pk}", other.pk: f"sim-{other.pk}"}
    assert {p.fabric for p in pools_free().values()} == {f"sim-{synced.pk}"}
