"""Composition services: request, preview, quotas, bad input, idempotency, decompose."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction

from composer.choices import AllocationState, CompositionState, JobKind, JobStatus
from composer.errors import InvalidTransition, NameTaken, QuotaExceeded, SpecError
from composer.events import event_publish
from composer.models import Allocation, Composition, Job, Quota, StateChange, Template
from composer.placement.request import Placement, Rejection
from composer.services.compositions import (
    composition_decompose,
    composition_preview,
    composition_request,
)
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.models import Device, FabricManager, Host

pytestmark = pytest.mark.django_db

TWO_GPUS_AND_MEMORY = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 256}


def request(tenant: Any, user: Any, spec: dict[str, Any], **kwargs: Any) -> Composition:
    return composition_request(
        tenant=tenant, requested_by=user, spec=spec, name=kwargs.pop("name", "c1"), **kwargs
    )


def test_a_request_is_placed_claimed_and_queues_a_compose_job_after_commit(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        composition = request(acme, alice, TWO_GPUS_AND_MEMORY, remote_addr="10.0.0.7")

    assert composition.state == CompositionState.PLACING
    assert composition.host is not None and composition.placement["ok"] is True
    assert composition.placement["explanation"] and composition.score is not None
    allocations = list(composition.allocations.select_related("device"))
    assert sorted(a.device.kind for a in allocations) == ["cxl_memory", "gpu", "gpu"]
    assert all(a.state == AllocationState.RESERVED for a in allocations)
    gpus = [a.device for a in allocations if a.device.kind == "gpu"]
    assert {d.state for d in gpus} == {DeviceState.RESERVED}
    memory = next(a for a in allocations if a.gib)
    # Slices share the device: it is reserved, and counts the GiB they hold.
    assert (memory.gib, memory.device.state, memory.device.allocated_gib) == (
        256,
        DeviceState.RESERVED,
        256,
    )
    job = Job.objects.get(target_type="composition", target_id=composition.pk)
    assert (job.kind, job.status, job.tenant, job.requested_by) == (
        JobKind.COMPOSE,
        JobStatus.QUEUED,
        acme,
        alice,
    )
    # One enqueue; the others publish the composition's state events (composer.events).
    assert len([c for c in callbacks if getattr(c, "func", None) is not event_publish]) == 1
    trail = list(composition.state_changes.values_list("from_state", "to_state", "actor"))
    assert trail == [("", "requested", alice.pk), ("requested", "placing", alice.pk)]
    assert composition.state_changes.last().remote_addr == "10.0.0.7"


def test_compose_binds_every_device_and_decompose_gives_them_back(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        composition = request(acme, alice, TWO_GPUS_AND_MEMORY)
    composition.refresh_from_db()

    assert composition.state == CompositionState.READY, composition.failure_reason
    allocations = list(composition.allocations.select_related("device"))
    bindings = {b.binding_id: b for b in driver.bindings()}
    assert {a.binding_id for a in allocations} == set(bindings)
    assert all(b.host_id == composition.host.external_id for b in bindings.values())
    for allocation in allocations:
        if allocation.gib is None:
            assert allocation.device.state == DeviceState.BOUND
            assert allocation.device.bound_host == composition.host
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    assert (job.status, job.progress_percent) == (JobStatus.SUCCEEDED, 100)
    assert job.log_lines.filter(message__startswith="bound ").count() == 3

    with django_capture_on_commit_callbacks(execute=True):
        decompose = composition_decompose(composition=composition, actor=alice)
    composition.refresh_from_db()
    decompose.refresh_from_db()

    assert decompose.status == JobStatus.SUCCEEDED, decompose.error
    assert composition.state == CompositionState.RELEASED
    assert driver.bindings() == []
    assert not Allocation.objects.filter(released_at__isnull=True).exists()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}
    assert list(composition.state_changes.values_list("to_state", flat=True)) == [
        "requested",
        "placing",
        "binding",
        "ready",
        "decomposing",
        "released",
    ]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"items": [{"kind": "gpu", "count": -1}]}, "items[0].count"),
        ({"items": [{"kind": "gpu", "count": 10**9}]}, "items[0].count"),
        ({"items": [{"kind": "gpu", "count": 5}]}, "items[0].count"),  # the fabric has 4
        ({"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 3}]}, "items[0].count"),
        ({"items": [{"kind": "gpu", "model": "B300", "count": 1}]}, "items[0].model"),
        ({"items": [{"kind": "quantum", "count": 1}]}, "items[0].kind"),
        ({"items": [{"kind": "gpu", "count": "two"}]}, "items[0].count"),
        ({"memory_gib": "lots"}, "memory_gib"),
        ({"memory_gib": 4096}, "memory_gib"),  # 1 TiB in the fabric
        ({"storage_tb": -2}, "storage_tb"),
        ({"items": [{"kind": "gpu", "count": 1}], "host": "no-such-host"}, "host"),
        ({"items": [{"kind": "gpu", "count": 1}], "host": 999999}, "host"),
        ({"items": [{"kind": "gpu", "count": 1}], "policy": "random"}, "policy"),
        ({"cores": 100000}, "cores"),
        ({"cores": 1000}, "cores"),  # no host has that many
        ({}, "items"),
        ({"items": [{"kind": "gpu", "count": 1}], "colour": "red"}, "colour"),
    ],
)
def test_bad_input_gets_a_field_error_and_creates_nothing(
    synced: FabricManager, acme: Any, alice: Any, spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(SpecError) as caught:
        request(acme, alice, spec)

    assert caught.value.field == field, caught.value.message
    assert not Composition.objects.exists()
    assert not Allocation.objects.exists()
    assert not Job.objects.exists()


def test_a_request_over_quota_names_the_quota_and_the_excess(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=3)
    Quota.objects.create(tenant=acme, kind="cxl_memory", max_memory_gib=512)
    with django_capture_on_commit_callbacks(execute=True):
        request(acme, alice, TWO_GPUS_AND_MEMORY)

    with pytest.raises(QuotaExceeded) as caught:
        request(acme, alice, {"items": [{"kind": "gpu", "count": 2}]}, name="c2")
    assert caught.value.field == "items[0].count"
    assert "GPU quota of Acme by 1" in caught.value.message
    assert "3 allowed, 2 in use, 2 asked" in caught.value.message

    with pytest.raises(QuotaExceeded) as caught:
        request(acme, alice, {"memory_gib": 300}, name="c3")
    assert caught.value.field == "memory_gib"
    assert "CXL memory quota of Acme by 44 GiB" in caught.value.message
    assert Composition.objects.count() == 1


def test_a_request_that_does_not_fit_now_is_rejected_with_the_reason_and_funnel(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        request(acme, alice, {"items": [{"kind": "gpu", "count": 3}]})
        second = request(acme, alice, {"items": [{"kind": "gpu", "count": 2}]}, name="c2")

    assert second.state == CompositionState.REJECTED
    assert second.placement["ok"] is False and second.placement["code"] == "no_capacity"
    assert second.placement["funnel"] and "1 usable GPU" in second.failure_reason
    assert not second.allocations.exists()
    assert not Job.objects.filter(target_id=second.pk).exists()
    assert list(second.state_changes.values_list("to_state", flat=True)) == [
        "requested",
        "placing",
        "rejected",
    ]


def test_a_host_never_gets_a_second_slice_of_a_memory_device_it_holds_one_of(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    # The tiny world has one memory device. The manager keeps one slice of it per host: a
    # second request on the same host is refused by placement, with the reason, rather
    # than planned onto that device and lost at the claim; another host may have one.
    host = Host.objects.order_by("name").first()
    first = request(acme, alice, {"memory_gib": 128, "host": host.name})
    assert first.state == CompositionState.PLACING, first.failure_reason

    second = request(acme, alice, {"memory_gib": 128, "host": host.name}, name="c2")
    assert second.state == CompositionState.REJECTED
    assert second.placement["code"] == "no_capacity"
    assert ["hosts: one memory slice per device and host", 1, 0] in second.placement["funnel"]
    assert "one slice of a device per host" in second.placement["nearest"]

    other = Host.objects.exclude(pk=host.pk).order_by("name").first()
    third = request(acme, alice, {"memory_gib": 128, "host": other.name}, name="c3")
    assert third.state == CompositionState.PLACING, third.failure_reason
    assert third.allocations.get().device == first.allocations.get().device


def test_preview_shows_the_plan_and_writes_nothing(synced: FabricManager, acme: Any) -> None:
    plan = composition_preview(tenant=acme, spec=TWO_GPUS_AND_MEMORY)
    assert isinstance(plan, Placement) and len(plan.devices) == 2 and plan.memory[0].gib == 256
    too_much = composition_preview(
        tenant=acme, spec={"items": [{"kind": "gpu", "count": 2}], "max_latency_ns": 1}
    )
    assert isinstance(too_much, Rejection)
    assert not Composition.objects.exists() and not Allocation.objects.exists()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}


def test_a_retried_request_with_the_same_idempotency_key_returns_the_first(
    synced: FabricManager, acme: Any, alice: Any, globex: Any, carol: Any
) -> None:
    first = request(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, idempotency_key="k-1")
    again = request(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, idempotency_key="k-1")
    other = request(globex, carol, {"items": [{"kind": "gpu", "count": 1}]}, idempotency_key="k-1")

    assert again.pk == first.pk and other.pk != first.pk
    assert Composition.objects.filter(tenant=acme).count() == 1
    assert Allocation.objects.count() == 2


def test_a_template_supplies_the_spec_and_the_request_may_override_it(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    template = Template(
        name="inference-2gpu-bigmem",
        slug="inference-2gpu-bigmem",
        spec={"items": [{"kind": "gpu", "count": 2}], "memory_gib": 1024, "max_latency_ns": 600},
    )
    template.full_clean()
    template.save()

    composition = request(acme, alice, {"memory_gib": 512}, template=template)

    assert composition.template == template
    assert (composition.spec["memory_gib"], composition.spec["max_latency_ns"]) == (512, 600)
    assert composition.state == CompositionState.PLACING


def test_decompose_is_refused_while_the_composition_is_still_binding(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    composition = request(acme, alice, {"items": [{"kind": "gpu", "count": 1}]})

    with pytest.raises(InvalidTransition) as caught:
        composition_decompose(composition=composition, actor=alice)

    assert caught.value.field == "state" and "still placing" in caught.value.message
    assert not Job.objects.filter(kind=JobKind.DECOMPOSE).exists()
    assert not StateChange.objects.filter(to_state="decomposing").exists()


def test_the_database_refuses_a_second_holder_of_a_whole_device(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    composition = request(acme, alice, {"items": [{"kind": "gpu", "count": 1}]})
    held = composition.allocations.get()
    other = Composition.objects.create(tenant=acme, name="sneaky", spec={})

    with pytest.raises(IntegrityError), transaction.atomic():
        Allocation.objects.create(composition=other, device=held.device)


def test_a_name_taken_between_check_and_insert_is_refused_by_the_index(
    synced: FabricManager, acme: Any, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent request that took the name after this one's check: the unique index
    refuses the insert, and the caller is told the name is taken, not a 500."""
    from composer.services import compositions as service

    request(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, name="twin")
    real = service.composition_check_name_free
    calls: list[str] = []

    def late(*, tenant: Any, name: str) -> None:
        calls.append(name)
        if len(calls) > 1:  # the re-check after the IntegrityError
            real(tenant=tenant, name=name)

    monkeypatch.setattr(service, "composition_check_name_free", late)
    with pytest.raises(NameTaken) as caught:
        request(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, name="twin")
    assert caught.value.field == "name" and calls == ["twin", "twin"]
    assert Composition.objects.filter(name="twin").count() == 1


@pytest.mark.parametrize(
    "spec",
    [{"items": [{"kind": "gpu", "count": 1}]}, {"cores": 4}],
    ids=["one gpu, no cores", "cores"],
)
def test_a_tenants_compositions_in_a_row_spread_across_hosts(
    spec: dict[str, Any], synced: FabricManager, acme: Any, alice: Any, globex: Any, carol: Any
) -> None:
    """A host is a failure domain: with room elsewhere, a tenant's next composition does
    not go where its others are (the default policy spreads), whatever other tenants do."""
    request(globex, carol, spec, name="g1")
    hosts = [request(acme, alice, spec, name=f"c{i}").host for i in range(3)]
    assert None not in hosts and len(set(hosts)) == 3 == Host.objects.count()


def test_packed_compositions_share_a_host(synced: FabricManager, acme: Any, alice: Any) -> None:
    spec = {"cores": 4, "policy": "pack"}
    hosts = {request(acme, alice, spec, name=f"c{i}").host for i in range(3)}
    assert len(hosts) == 1
