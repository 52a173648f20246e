"""CXL memory slices on the device: `allocated_gib` and the device's state follow every claim,
bind and release, in the same transaction, and every capacity figure reads them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from composer.choices import AllocationState
from composer.errors import ClaimConflict
from composer.models import Allocation, Composition, UnbindPending
from composer.services.allocations import Claim, allocations_claim, claims
from composer.services.compositions import composition_decompose
from composer.services.heal import heal_request
from composer.services.health import compositions_react_to_health
from composer.services.unbinds import unbinds_pending_retry
from composer.tasks import reconcile_task
from fabric.choices import ChangeAction, DeviceState
from fabric.models import ChangeRecord, Device, FabricManager, Host, Pool
from fabric.selectors import pool_capacity
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from tests.composer.services.test_health import compose, fault
from tests.fabric.simulated_world import TINY, simulated_manager

pytestmark = pytest.mark.django_db

GPU_AND_MEMORY = {"items": [{"kind": "gpu", "count": 1}], "memory_gib": 256}


def memory_pool() -> Pool:
    """The pool of the tiny world's memory device (its sync had no pool to put it in)."""
    pool, _ = Pool.objects.get_or_create(slug="cxl", defaults={"name": "CXL", "kind": "cxl_memory"})
    Device.objects.filter(kind="cxl_memory").update(pool=pool)
    return pool


def figures(device: Device) -> tuple[str, int]:
    device.refresh_from_db()
    return device.state, device.allocated_gib


def two_slices(acme: Any) -> tuple[Device, Host, Allocation, Allocation]:
    """The memory device with a claimed slice of 100 GiB for composition x and one of
    200 GiB for y, and a host to bind them to."""
    memory = Device.objects.get(kind="cxl_memory")
    host = Host.objects.order_by("pk").first()
    assert host is not None
    x = Composition.objects.create(tenant=acme, name="x", spec={})
    y = Composition.objects.create(tenant=acme, name="y", spec={})
    [slice_x] = allocations_claim(composition=x, claims=[Claim(memory.pk, 100)], host=None)
    [slice_y] = allocations_claim(composition=y, claims=[Claim(memory.pk, 200)], host=None)
    return memory, host, slice_x, slice_y


def test_slices_are_counted_on_the_device_and_its_state_follows_them(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    assert figures(memory) == (DeviceState.FREE, 0)

    first = compose(acme, alice, GPU_AND_MEMORY, name="first")
    assert figures(memory) == (DeviceState.BOUND, 256)
    second = compose(acme, alice, {**GPU_AND_MEMORY, "memory_gib": 512}, name="second")
    assert first.host != second.host  # a host holds one slice of a device at most
    assert figures(memory) == (DeviceState.BOUND, 768)
    cap = pool_capacity(pool=memory_pool())
    assert (cap.capacity, cap.allocated, cap.free, cap.unavailable) == (1024, 768, 256, 0)

    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=first, actor=alice)
    assert figures(memory) == (DeviceState.BOUND, 512)  # the second still holds its slice
    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=second, actor=alice)
    assert figures(memory) == (DeviceState.FREE, 0)
    assert pool_capacity(pool=memory_pool()).free == 1024

    trail = list(
        ChangeRecord.objects.filter(
            target_type="device", target_id=memory.pk, action=ChangeAction.CHANGED
        )
        .order_by("at", "pk")
        .values_list("changes", flat=True)
    )
    held = [c["allocated_gib"] for c in trail if "allocated_gib" in c]
    assert held == [[0, 256], [256, 768], [768, 512], [512, 0]]  # audited, each change


def test_a_slice_is_reserved_until_bound_and_a_device_takes_slices_while_held(
    synced: FabricManager, acme: Any
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    first = Composition.objects.create(tenant=acme, name="first", spec={})
    second = Composition.objects.create(tenant=acme, name="second", spec={})

    allocations_claim(composition=first, claims=[Claim(memory.pk, 300)], host=None)
    assert figures(memory) == (DeviceState.RESERVED, 300)
    allocations_claim(composition=second, claims=[Claim(memory.pk, 700)], host=None)
    assert figures(memory) == (DeviceState.RESERVED, 1000)
    assert memory.is_usable and memory.free_gib == 24  # still takes a slice of 24 GiB


def test_a_slice_that_does_not_fit_is_refused_and_nothing_is_written(
    synced: FabricManager, acme: Any
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    first = Composition.objects.create(tenant=acme, name="first", spec={})
    second = Composition.objects.create(tenant=acme, name="second", spec={})
    allocations_claim(composition=first, claims=[Claim(memory.pk, 1000)], host=None)
    records = ChangeRecord.objects.count()

    with pytest.raises(ClaimConflict, match="24 GiB unclaimed of 1024 GiB; 100 GiB asked"):
        allocations_claim(composition=second, claims=[Claim(memory.pk, 100)], host=None)

    assert figures(memory) == (DeviceState.RESERVED, 1000)
    assert not second.allocations.exists()
    assert ChangeRecord.objects.count() == records


def test_the_device_s_figure_is_what_a_claim_checks(synced: FabricManager, acme: Any) -> None:
    """The column, not a sum computed beside it, is the last word: a device whose GiB are
    held (here by slices released with an unbind still pending) takes no more."""
    memory = Device.objects.get(kind="cxl_memory")
    Device.objects.filter(pk=memory.pk).update(state=DeviceState.BOUND, allocated_gib=1000)
    composition = Composition.objects.create(tenant=acme, name="c", spec={})

    with pytest.raises(ClaimConflict):
        allocations_claim(composition=composition, claims=[Claim(memory.pk, 100)], host=None)
    allocations_claim(composition=composition, claims=[Claim(memory.pk, 24)], host=None)
    assert figures(memory) == (DeviceState.BOUND, 1024)
    assert not Device.objects.get(pk=memory.pk).is_usable  # nothing left to slice


def test_a_slice_whose_unbind_failed_stays_allocated_until_it_is_undone(
    acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    manager = simulated_manager(spec=replace(TINY, memory_devices_per_box=2, memory_box_gib=512))
    inventory_sync(manager=manager)
    composition = compose(acme, alice, {"memory_gib": 200, "cores": 4})
    [lost] = composition.allocations.select_related("device")
    fault(manager, "device", lost.device.name)
    compositions_react_to_health(
        unhealthy_device_ids=[lost.device_id], healthy_device_ids=[], reason="device failed"
    )
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="unbind", mode="permanent", count=1
    )
    with django_capture_on_commit_callbacks(execute=True):
        heal_request(composition=composition, actor=alice)
    assert UnbindPending.objects.filter(composition=composition, undone_at__isnull=True).exists()
    lost.refresh_from_db()
    assert lost.released_at is not None
    assert Device.objects.get(pk=lost.device_id).allocated_gib == 200  # out of the pool

    unbinds_pending_retry()

    assert Device.objects.get(pk=lost.device_id).allocated_gib == 0
    assert not Allocation.objects.filter(device=lost.device_id, released_at__isnull=True).exists()
    record = ChangeRecord.objects.filter(
        target_type="device", target_id=lost.device_id, action=ChangeAction.CHANGED
    ).latest("pk")
    assert record.changes["allocated_gib"] == [200, 0] and record.source == "reconciliation"


def test_an_unbind_retried_by_two_runs_at_once_gives_its_slice_back_once(
    synced: FabricManager, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second retry run that finishes while the first waits on the manager: the first must
    not give back again what the second already gave back (the GiB would be handed out
    twice while another composition still holds them)."""
    memory, host, slice_x, _ = two_slices(acme)
    x = slice_x.composition
    # X's slice was released while its unbind failed: its GiB stay held until it succeeds.
    Allocation.objects.filter(pk=slice_x.pk).update(
        state=AllocationState.RELEASED, released_at=timezone.now()
    )
    UnbindPending.objects.create(
        binding_id="b-x",
        allocation=slice_x,
        device=memory,
        host=host,
        gib=slice_x.gib,
        composition=x,
    )
    real = SimulatedDriver.unbind
    calls: list[str] = []

    def unbind_while_another_run_finishes(self: SimulatedDriver, *, binding_id: str) -> None:
        calls.append(binding_id)
        if len(calls) == 1:
            assert [a.undone for a in unbinds_pending_retry()] == [True]  # the other run
        real(self, binding_id=binding_id)

    monkeypatch.setattr(SimulatedDriver, "unbind", unbind_while_another_run_finishes)

    undone = unbinds_pending_retry()

    assert figures(memory) == (DeviceState.RESERVED, 200)  # Y's slice is still held
    assert undone == []  # the other run undid it
    assert not UnbindPending.objects.filter(undone_at__isnull=True).exists()


@pytest.mark.parametrize(
    ("recorded", "claimed", "after"),
    [
        ((DeviceState.RESERVED, 100), 300, (DeviceState.RESERVED, 300)),  # too low: GiB twice
        ((DeviceState.RESERVED, 50), 0, (DeviceState.FREE, 0)),  # too high: GiB stranded
    ],
)
def test_beat_recounts_a_drifted_allocated_figure_from_the_slices_and_audits_it(
    synced: FabricManager,
    acme: Any,
    caplog: pytest.LogCaptureFixture,
    recorded: tuple[str, int],
    claimed: int,
    after: tuple[str, int],
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    if claimed:
        composition = Composition.objects.create(tenant=acme, name="c", spec={})
        allocations_claim(composition=composition, claims=[Claim(memory.pk, claimed)], host=None)
    state, gib = recorded
    Device.objects.filter(pk=memory.pk).update(state=state, allocated_gib=gib)  # the drift

    reconcile_task.delay()

    assert figures(memory) == after
    record = ChangeRecord.objects.filter(target_type="device", target_id=memory.pk).latest("pk")
    assert record.source == "reconciliation"
    assert record.changes["allocated_gib"] == [gib, after[1]]
    assert f"allocated_gib was {gib}, its slices hold {after[1]} GiB" in caplog.text

    reconcile_task.delay()  # nothing left to correct
    assert ChangeRecord.objects.filter(target_type="device", target_id=memory.pk).latest("pk") == (
        record
    )


def test_claiming_more_slices_costs_no_more_queries(db: None, acme: Any) -> None:
    manager = simulated_manager(spec=replace(TINY, memory_devices_per_box=4, memory_box_gib=1024))
    inventory_sync(manager=manager)
    host = Host.objects.order_by("pk").first()
    memories = list(Device.objects.filter(kind="cxl_memory").order_by("pk"))
    assert len(memories) == 4

    def queries(devices: list[Device], name: str) -> int:
        composition = Composition.objects.create(tenant=acme, name=name, spec={}, host=host)
        with CaptureQueriesContext(connection) as captured:
            allocations_claim(
                composition=composition, claims=[Claim(d.pk, 64) for d in devices], host=host
            )
        return len(captured)

    assert queries(memories[:1], "one") == queries(memories[1:], "three")
    assert {(d.state, d.allocated_gib) for d in Device.objects.filter(kind="cxl_memory")} == {
        (DeviceState.RESERVED, 64)
    }


def test_the_database_refuses_a_slice_that_does_not_fit_even_if_python_let_it_through(
    synced: FabricManager, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Device.objects.get(kind="cxl_memory")
    first = Composition.objects.create(tenant=acme, name="first", spec={})
    second = Composition.objects.create(tenant=acme, name="second", spec={})
    allocations_claim(composition=first, claims=[Claim(memory.pk, 1000)], host=None)
    monkeypatch.setattr(claims, "_check_slice", lambda device, gib: None)

    with pytest.raises(ClaimConflict, match="mem-a-01-1 no longer has 100 GiB unclaimed"):
        allocations_claim(composition=second, claims=[Claim(memory.pk, 100)], host=None)

    assert figures(memory) == (DeviceState.RESERVED, 1000)
    assert not second.allocations.exists()
