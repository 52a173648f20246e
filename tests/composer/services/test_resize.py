"""Resizing a ready composition against the simulated driver: a GPU, CXL GiB and a share of
a GPU added, a device removed, each bound (or unbound) and the request and plan reshaped;
quotas, the composition's own rules and its state refuse what they must, naming why; the
preview holds nothing; every step is audited."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from composer.choices import AllocationState, CompositionState, JobKind, JobStatus
from composer.errors import InvalidTransition, QuotaExceeded, SpecError
from composer.models import Allocation, Composition, Job, Quota, StateChange
from composer.services.compositions import composition_decompose
from composer.services.resize import (
    RESIZING_KEY,
    ResizeRejected,
    resize_preview,
    resize_request,
)
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from fabric.services.pools import pools_assign, pools_ensure_defaults
from fabric.services.sync import inventory_sync
from tests.composer.services.test_health import compose
from tests.fabric.simulated_world import TINY, simulated_manager

pytestmark = pytest.mark.django_db

ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}
ONE_H100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}
GPU_AND_MEMORY = {"items": [{"kind": "gpu", "count": 1}], "memory_gib": 128}
SPREAD = {"items": [{"kind": "gpu", "count": 2}], "policy": "enclosure"}


def held(composition: Composition) -> set[str]:
    """Names of the devices the composition holds now."""
    return set(
        composition.allocations.filter(released_at__isnull=True).values_list(
            "device__name", flat=True
        )
    )


def bound(driver: FabricDriver, composition: Composition) -> set[str]:
    """Names of the devices the fabric manager reports bound to the composition's host."""
    host = composition.host
    assert host is not None
    external = {b.device_id for b in driver.bindings() if b.host_id == host.external_id}
    return set(Device.objects.filter(external_id__in=external).values_list("name", flat=True))


def resize_job(composition: Composition) -> Job:
    return Job.objects.filter(kind=JobKind.RESIZE, target_id=composition.pk).latest("id")


def resize(
    composition: Composition, user: Any, capture: Any, **kwargs: Any
) -> tuple[Job, Composition]:
    """Request a resize; its job runs (eagerly) once the request commits."""
    with capture(execute=True):
        job = resize_request(
            composition=composition,
            add=kwargs.get("add"),
            remove=kwargs.get("remove"),
            requested_by=user,
            remote_addr="192.0.2.7",
        )
    job.refresh_from_db()
    composition.refresh_from_db()
    return job, composition


@pytest.fixture
def one_gpu(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    return compose(acme, alice, ONE_H100)


def test_adding_a_gpu_binds_it_and_the_request_and_plan_take_the_new_shape(
    one_gpu: Composition, driver: FabricDriver, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    before = held(one_gpu)
    add = [{"kind": "gpu", "count": 1}]

    job, composition = resize(one_gpu, alice, django_capture_on_commit_callbacks, add=add)

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert composition.state == CompositionState.READY and composition.failure_reason == ""
    now = held(composition)
    assert before < now and len(now) == 2
    assert bound(driver, composition) == now
    added = Allocation.objects.get(composition=composition, device__name__in=now - before)
    assert added.state == AllocationState.BOUND and added.device.state == DeviceState.BOUND
    # The request and the plan say what it is now: heal and quotas read them.
    assert composition.spec["items"] == [
        {"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1, "minima": {}},
        {"kind": "gpu", "model": None, "count": 1, "minima": {}},
    ]
    assert {p["name"] for p in composition.placement["devices"]} == now
    assert RESIZING_KEY not in composition.placement
    assert composition.placement["resized"][0]["added"] == [added.device.name]
    assert composition.placement["explanation"][-1].startswith(f"Resize (job {job.pk}): added ")
    trail = list(
        StateChange.objects.filter(composition=composition)
        .order_by("at", "pk")
        .values_list("from_state", "to_state", "actor__username", "remote_addr")
    )
    assert trail[-2:] == [
        ("ready", "resizing", "alice", "192.0.2.7"),
        ("resizing", "ready", "alice", None),
    ]
    assert "add 1 GPU" in StateChange.objects.filter(to_state="resizing").get().reason
    assert job.progress_percent == 100 and job.result["added"] == [added.device.name]


def test_more_of_the_same_item_adds_to_its_count(
    one_gpu: Composition, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    add = [{"kind": "gpu", "model": "H100 PCIe 80GB"}]

    _, composition = resize(one_gpu, alice, django_capture_on_commit_callbacks, add=add)

    assert composition.spec["items"] == [
        {"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2, "minima": {}}
    ]


def test_adding_cxl_memory_claims_and_binds_a_slice_of_the_gib_asked(
    one_gpu: Composition, driver: FabricDriver, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    add = [{"kind": "cxl_memory", "gib": 256}]

    job, composition = resize(one_gpu, alice, django_capture_on_commit_callbacks, add=add)

    assert job.status == JobStatus.SUCCEEDED, job.error
    memory = Allocation.objects.get(composition=composition, gib__isnull=False)
    assert memory.gib == 256 and memory.binding_id
    assert memory.device.allocated_gib == 256
    assert composition.spec["memory_gib"] == 256
    assert [p["gib"] for p in composition.placement["memory"]] == [256]
    assert bound(driver, composition) == held(composition)


def test_a_share_of_a_gpu_is_added_as_a_share(
    one_gpu: Composition, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    add = [{"kind": "gpu", "share": 250}]

    job, composition = resize(one_gpu, alice, django_capture_on_commit_callbacks, add=add)

    assert job.status == JobStatus.SUCCEEDED, job.error
    share = Allocation.objects.get(composition=composition, share__isnull=False)
    assert share.share == 250 and share.binding_id
    assert share.device.allocated_shares == 250
    # Never a share of the GPU it holds whole.
    assert share.device_id != one_gpu.allocations.get(share__isnull=True).device_id
    assert {"kind": "gpu", "model": None, "count": 1, "minima": {}, "share": 250} in (
        composition.spec["items"]
    )


def test_removing_a_device_unbinds_and_releases_it_and_the_rest_stays_bound(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    composition = compose(acme, alice, GPU_AND_MEMORY)
    gpu = composition.allocations.get(gib__isnull=True)
    memory = composition.allocations.get(gib__isnull=False)

    job, composition = resize(
        composition, alice, django_capture_on_commit_callbacks, remove=[memory.pk]
    )

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert held(composition) == {gpu.device.name} == bound(driver, composition)
    memory.refresh_from_db()
    assert memory.state == AllocationState.RELEASED and memory.device.allocated_gib == 0
    assert composition.spec["memory_gib"] == 0 and composition.placement["memory"] == []
    assert composition.placement["resized"][0]["removed"] == [memory.device.name]
    assert "remove CXL memory" in StateChange.objects.filter(to_state="resizing").get().reason


def test_adding_and_removing_at_once_swaps_a_gpu(
    one_gpu: Composition, driver: FabricDriver, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    old = one_gpu.allocations.get()

    job, composition = resize(
        one_gpu,
        alice,
        django_capture_on_commit_callbacks,
        add=[{"kind": "gpu", "model": "L40S 48GB"}],
        remove=[old.pk],
    )

    assert job.status == JobStatus.SUCCEEDED, job.error
    [now] = held(composition)
    assert now != old.device.name and bound(driver, composition) == {now}
    assert composition.spec["items"] == [
        {"kind": "gpu", "model": "L40S 48GB", "count": 1, "minima": {}}
    ]
    assert Device.objects.get(pk=old.device_id).state == DeviceState.FREE


def test_the_preview_says_what_would_change_and_holds_nothing(
    one_gpu: Composition, alice: Any
) -> None:
    old = one_gpu.allocations.get()
    placement = one_gpu.placement

    plan = resize_preview(
        composition=one_gpu,
        add=[{"kind": "gpu", "count": 1}, {"kind": "cxl_memory", "gib": 64}],
        remove=[old.pk],
    )

    assert one_gpu.host is not None
    assert plan["ok"] and plan["host_name"] == one_gpu.host.name
    assert len(plan["devices"]) == 1 and [m["gib"] for m in plan["memory"]] == [64]
    assert plan["explanation"]
    assert plan["remove"] == [
        {
            "allocation": old.pk,
            "device": f"device:{old.device_id}",
            "name": old.device.name,
            "kind": "gpu",
            "gib": None,
            "share": None,
        }
    ]
    assert plan["spec"]["memory_gib"] == 64
    assert "Removes GPU" in plan["explanation"][-1]
    one_gpu.refresh_from_db()
    assert one_gpu.state == CompositionState.READY and one_gpu.placement == placement
    assert Allocation.objects.count() == 1 and not Job.objects.filter(kind=JobKind.RESIZE)


def test_over_a_quota_is_refused_naming_the_quota_and_the_entry(
    one_gpu: Composition, acme: Any, alice: Any
) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=1)

    with pytest.raises(QuotaExceeded) as caught:
        resize_request(
            composition=one_gpu,
            add=[{"kind": "cxl_memory", "gib": 8}, {"kind": "gpu", "count": 1}],
            remove=[],
            requested_by=alice,
        )

    assert caught.value.field == "add[1].count"
    assert "GPU quota of Acme by 1" in caught.value.message
    one_gpu.refresh_from_db()
    assert one_gpu.state == CompositionState.READY and Allocation.objects.count() == 1


def test_what_is_given_back_counts_against_the_quota(
    one_gpu: Composition, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=1)
    old = one_gpu.allocations.get()

    job, composition = resize(
        one_gpu, alice, django_capture_on_commit_callbacks, add=ONE_GPU["items"], remove=[old.pk]
    )

    assert job.status == JobStatus.SUCCEEDED and composition.state == CompositionState.READY


def test_the_failure_domain_policy_holds_against_the_devices_kept(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    composition = compose(acme, alice, SPREAD)  # one GPU in each of the two chassis

    with pytest.raises(ResizeRejected) as caught:
        resize_request(
            composition=composition, add=[{"kind": "gpu"}], remove=[], requested_by=alice
        )

    plan = caught.value.plan
    assert not plan["ok"] and caught.value.status_code == 422
    assert "breaking the failure-domain rules" in plan["nearest"]
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY
    assert Allocation.objects.filter(released_at__isnull=True).count() == 2


def test_the_latency_ceiling_holds_and_the_nearest_alternative_is_named(
    one_gpu: Composition, alice: Any
) -> None:
    Composition.objects.filter(pk=one_gpu.pk).update(spec={**one_gpu.spec, "max_latency_ns": 1})
    one_gpu.refresh_from_db()

    plan = resize_preview(composition=one_gpu, add=[{"kind": "gpu"}], remove=[])

    assert not plan["ok"] and "latency" in plan["message"]
    assert "over the latency ceiling" in plan["nearest"]


def test_an_item_without_a_model_comes_from_the_pool_of_the_devices_of_its_kind(
    synced: FabricManager, one_gpu: Composition, alice: Any
) -> None:
    pools_ensure_defaults(manager=synced)
    pools_assign(manager=synced)
    kept = one_gpu.allocations.get().device
    # The other H100 has failed: only L40S GPUs, of another pool, are left.
    Device.objects.filter(model=kept.model).exclude(pk=kept.pk).update(health="critical")

    plan = resize_preview(composition=one_gpu, add=[{"kind": "gpu"}], remove=[])

    assert not plan["ok"]
    assert "L40S" not in plan["message"] and "from another pool" in plan["nearest"]
    with_model = resize_preview(
        composition=one_gpu, add=[{"kind": "gpu", "model": "L40S 48GB"}], remove=[]
    )
    assert with_model["ok"], with_model.get("message")


@pytest.mark.parametrize(
    ("add", "remove", "field"),
    [
        ([], [], "add"),
        ([{"kind": "gpu", "count": 0}], [], "add[0].count"),
        ([{"kind": "gpu"}, {"kind": "toaster"}], [], "add[1].kind"),
        ([{"kind": "gpu", "gib": 5}], [], "add[0].gib"),
        ([{"kind": "cxl_memory", "gib": 0}], [], "add[0].gib"),
        ([{"kind": "cxl_memory", "count": 2}], [], "add[0]"),
        ([{"kind": "gpu", "model": "Nope 9000"}], [], "add[0].model"),
        ([{"kind": "gpu", "share": 1000}], [], "add[0].share"),
        ("gpu", [], "add"),
        ([], [999_999], "remove[0]"),
        ([], ["x"], "remove[0]"),
        ([], "all", "remove"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    one_gpu: Composition, alice: Any, add: Any, remove: Any, field: str
) -> None:
    with pytest.raises(SpecError) as caught:
        resize_request(composition=one_gpu, add=add, remove=remove, requested_by=alice)

    assert caught.value.field == field, caught.value.message
    assert not Job.objects.filter(kind=JobKind.RESIZE).exists()


def test_removing_every_device_is_refused_as_a_decompose(one_gpu: Composition, alice: Any) -> None:
    old = one_gpu.allocations.get()

    with pytest.raises(SpecError) as caught:
        resize_preview(composition=one_gpu, add=[], remove=[old.pk])

    assert caught.value.field == "remove" and "decompose it instead" in caught.value.message


def test_only_a_ready_composition_is_resized(
    one_gpu: Composition, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    resize_request(composition=one_gpu, add=ONE_GPU["items"], remove=[], requested_by=alice)
    one_gpu.refresh_from_db()
    assert one_gpu.state == CompositionState.RESIZING  # its job not run yet

    with pytest.raises(InvalidTransition) as caught:
        resize_request(composition=one_gpu, add=ONE_GPU["items"], remove=[], requested_by=alice)
    assert caught.value.field == "state" and "resize is done" in caught.value.message
    with pytest.raises(InvalidTransition):
        composition_decompose(composition=one_gpu, actor=alice)


def test_a_composition_placed_on_a_host_that_went_away_cannot_grow(acme: Any, alice: Any) -> None:
    manager = simulated_manager(spec=replace(TINY, memory_devices_per_box=2, memory_box_gib=512))
    inventory_sync(manager=manager)
    composition = compose(acme, alice, {"memory_gib": 256, "cores": 2})
    assert composition.host is not None
    type(composition.host).objects.filter(pk=composition.host_id).update(state="absent")

    plan = resize_preview(composition=composition, add=[{"kind": "gpu"}], remove=[])

    assert not plan["ok"] and "not usable now" in plan["message"]
    assert get_driver(manager).bindings()
