"""The controller against an in-process API server: a claim allocated to two published
GPUs becomes a composition on the node's host, the claim is told when it is ready, and
deleting the claim decomposes it; restarts never compose twice; what cannot be composed
is reported on the claim with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from composer.choices import CompositionState
from composer.kubernetes.api import Conflict
from composer.kubernetes.controller import RETRY_S, Controller
from composer.models import Composition, KubernetesClaim, StateChange
from composer.services.compositions import composition_decompose, composition_request
from composer.states import composition_transition
from fabric.models import Device, FabricManager
from tests.support.kube import FakeKube

pytestmark = pytest.mark.django_db

H100 = "sim/h100-pcie-80gb"
L40S = "sim/l40s-48gb"


@pytest.fixture
def kube(synced: FabricManager, acme: Any) -> FakeKube:
    api = FakeKube()
    api.node_add("node-1", host="host-a-01")
    api.node_add("host-a-02")  # no annotation: the node's own name is the host's
    api.namespace_add("ml", tenant="acme")
    api.namespace_add("web")
    return api


@pytest.fixture
def run(django_capture_on_commit_callbacks: Any) -> Iterator[Any]:
    """One reconcile, the jobs it queues run as a worker would (eager)."""

    def reconcile(controller: Controller) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return controller.reconcile()

    yield reconcile


def published(kube: FakeKube, pool: str) -> list[str]:
    return [d["name"] for s in kube.slices.values() if s["spec"]["pool"]["name"] == pool
            for d in s["spec"]["devices"]]  # fmt: skip


def composed_anew(
    kube: FakeKube, run: Any, claim: tuple[str, str], uid: str, device: str, instead_of: Any
) -> None:
    """Two passes later, the claim has a new composition, ready, and its device is told."""
    run(Controller(kube))
    run(Controller(kube))
    new = KubernetesClaim.objects.get(uid=uid).composition
    assert new is not None and new != instead_of and new.state == CompositionState.READY
    assert kube.conditions(*claim) == {device: ["FabricDeviceReady"]}


def test_a_claim_is_composed_on_its_node_s_host_ready_and_released_when_deleted(
    kube: FakeKube, acme: Any, run: Any
) -> None:
    controller = Controller(kube)
    run(controller)
    chosen = published(kube, H100)[:2]
    assert len(chosen) == 2
    kube.claim_allocate("ml", "gpus", uid="u-1", node="node-1",
                        devices=[(H100, name) for name in chosen])  # fmt: skip

    first = run(controller)

    assert first.attached == ["ml/gpus"] and not first.errors
    record = KubernetesClaim.objects.get(uid="u-1")
    composition = Composition.objects.get(pk=record.composition_id)
    assert composition.tenant == acme and composition.host is not None
    assert composition.host.name == "host-a-01"
    assert composition.state == CompositionState.READY, composition.failure_reason
    bound = sorted(f"gpu-{pk}" for pk in composition.allocations.values_list("device", flat=True))
    assert bound == sorted(chosen)
    assert StateChange.objects.filter(composition=composition).exists()  # audited as any

    second = run(controller)  # the composition is up: the claim hears it
    assert kube.conditions("ml", "gpus") == {name: ["FabricDeviceReady"] for name in chosen}
    assert not set(chosen) & set(published(kube, H100))  # bound: no longer offered
    assert second.attached == [] and Composition.objects.count() == 1

    kube.claim_delete("ml", "gpus")
    third = run(controller)

    composition.refresh_from_db()
    assert third.released == ["ml/gpus"]
    assert composition.state == CompositionState.RELEASED
    assert KubernetesClaim.objects.get(uid="u-1").released_at is not None
    run(controller)
    assert set(chosen) <= set(published(kube, H100))  # offered again


def test_a_controller_killed_between_composing_and_recording_composes_once(
    kube: FakeKube, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(Controller(kube))
    chosen = published(kube, H100)[:1]
    kube.claim_allocate("ml", "one", uid="u-2", node="node-1", devices=[(H100, chosen[0])])

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise SystemExit("killed")

    with monkeypatch.context() as patch:
        patch.setattr(KubernetesClaim.objects, "update_or_create", killed)
        with pytest.raises(SystemExit):
            run(Controller(kube))
    assert Composition.objects.count() == 1 and not KubernetesClaim.objects.exists()

    run(Controller(kube))  # a fresh controller, as after a restart
    run(Controller(kube))

    assert Composition.objects.count() == 1
    record = KubernetesClaim.objects.get(uid="u-2")
    assert record.composition == Composition.objects.get()
    assert kube.conditions("ml", "one") == {chosen[0]: ["FabricDeviceReady"]}


def test_what_cannot_be_composed_asks_the_scheduler_to_reschedule_with_the_reason(
    kube: FakeKube, acme: Any, run: Any
) -> None:
    run(Controller(kube))
    first, second = published(kube, H100)[:2]
    # A node whose host Composer does not know.
    kube.node_add("node-9", host="host-z-99")
    kube.claim_allocate("ml", "lost", uid="u-3", node="node-9", devices=[(H100, first)])
    # A device taken by the console between the publish and the claim.
    taken = Device.objects.get(pk=int(second.rpartition("-")[2]))
    composition_request(tenant=acme, requested_by=None, name="console",
                        spec={"devices": [{"device": taken.pk}]})  # fmt: skip
    kube.claim_allocate("ml", "late", uid="u-4", node="node-1", devices=[(H100, second)])

    report = run(Controller(kube))

    assert any("host-z-99" in e and "composer.dev/host" in e for e in report.errors)
    assert kube.conditions("ml", "lost") == {first: ["FabricDeviceReschedule"]}
    lost = kube.claims[("ml", "lost")]["status"]["devices"][0]["conditions"]
    assert "host-z-99" in next(c["message"] for c in lost if c["status"] == "True")
    late = KubernetesClaim.objects.get(uid="u-4").composition
    assert late is not None and late.state == CompositionState.REJECTED
    assert kube.conditions("ml", "late") == {second: ["FabricDeviceReschedule"]}

    # The scheduler allocates the claim again, to a device that is free: composed anew.
    other = published(kube, L40S)[0]
    kube.claim_allocate("ml", "late", uid="u-4", node="node-1", devices=[(L40S, other)])
    composed_anew(kube, run, ("ml", "late"), "u-4", other, instead_of=late)


def test_namespaces_map_to_tenants_and_unknown_ones_are_refused(
    kube: FakeKube, globex: Any, run: Any
) -> None:
    run(Controller(kube, default_tenant="globex"))
    name = published(kube, H100)[0]
    kube.claim_allocate("web", "plain", uid="u-5", node="host-a-02", devices=[(H100, name)])
    run(Controller(kube, default_tenant="globex"))
    composition = KubernetesClaim.objects.get(uid="u-5").composition
    assert composition is not None and composition.tenant == globex
    assert composition.host is not None and composition.host.name == "host-a-02"

    kube.namespace_add("stray", tenant="nobody")
    kube.claim_allocate("stray", "x", uid="u-6", node="node-1",
                        devices=[(H100, published(kube, H100)[0])])  # fmt: skip
    report = run(Controller(kube, default_tenant="globex"))
    assert any("'nobody'" in e for e in report.errors)
    assert KubernetesClaim.objects.get(uid="u-6").composition is None


def test_a_fault_on_a_bound_device_fails_the_claim_s_devices(kube: FakeKube, run: Any) -> None:
    run(Controller(kube))
    name = published(kube, H100)[0]
    kube.claim_allocate("ml", "f", uid="u-7", node="node-1", devices=[(H100, name)])
    run(Controller(kube))
    composition = KubernetesClaim.objects.get(uid="u-7").composition
    assert composition is not None
    composition_transition(composition, CompositionState.DEGRADED, reason="GPU fell off the bus")

    run(Controller(kube))

    assert kube.conditions("ml", "f") == {name: ["FabricDeviceFailed"]}


def test_a_slice_changed_meanwhile_is_read_again_and_written(
    kube: FakeKube, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(Controller(kube))
    device = Device.objects.filter(model="H100 PCIe 80GB").order_by("pk").first()
    assert device is not None
    Device.objects.filter(pk=device.pk).update(state="maintenance")
    real = kube.slice_replace
    calls = []

    def once_stale(body: dict) -> None:
        calls.append(body["metadata"]["name"])
        if len(calls) == 1:
            raise Conflict(body["metadata"]["name"])
        real(body)

    monkeypatch.setattr(kube, "slice_replace", once_stale)
    report = run(Controller(kube))

    assert len(calls) == 2 and report.slices_written == 1
    assert f"gpu-{device.pk}" not in published(kube, H100)


def test_a_claim_of_many_devices_is_asked_for_whole_and_refused_by_what_is_wrong(
    kube: FakeKube, run: Any
) -> None:
    """A claim of 32 devices (one the console never had): its idempotency key stays within
    the API's 200 characters, so the refusal names the device, not the key."""
    run(Controller(kube))
    devices = [(H100, f"gpu-{900000 + i}") for i in range(32)]
    kube.claim_allocate("ml", "big", uid="1d2e3f4a-5b6c-7d8e-9fa0-b1c2d3e4f5a6", node="node-1",
                        devices=devices)  # fmt: skip

    report = run(Controller(kube))

    (error,) = report.errors
    assert "900000" in error and "idempotency" not in error


class Clock:
    """The controller's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self) -> datetime:
        return self.now


def test_a_claim_rescheduled_onto_the_same_device_is_composed_anew_and_released_after(
    kube: FakeKube, acme: Any, run: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run(Controller(kube))
    name = published(kube, H100)[0]
    gpu = Device.objects.get(pk=int(name.rpartition("-")[2]))
    with django_capture_on_commit_callbacks(execute=True):  # the console takes it first
        console = composition_request(tenant=acme, requested_by=None, name="console",
                                      spec={"devices": [{"device": gpu.pk}]})  # fmt: skip
    kube.claim_allocate("ml", "again", uid="u-8", node="node-1", devices=[(H100, name)])
    run(Controller(kube))
    assert kube.conditions("ml", "again") == {name: ["FabricDeviceReschedule"]}
    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=console, actor=None)

    kube.claim_deallocate("ml", "again")  # the scheduler takes the allocation back...
    run(Controller(kube))
    assert KubernetesClaim.objects.get(uid="u-8").released_at is not None
    kube.claim_allocate("ml", "again", uid="u-8", node="node-1", devices=[(H100, name)])
    run(Controller(kube))  # ...and gives it the same GPU, free now
    run(Controller(kube))

    record = KubernetesClaim.objects.get(uid="u-8")
    assert record.released_at is None and record.attempt == 2
    assert record.composition is not None and record.composition.state == CompositionState.READY
    assert kube.conditions("ml", "again") == {name: ["FabricDeviceReady"]}
    kube.claim_delete("ml", "again")
    run(Controller(kube))
    record.composition.refresh_from_db()
    assert record.composition.state == CompositionState.RELEASED


def test_a_refused_claim_is_tried_again_after_a_while_once_its_cause_is_fixed(
    kube: FakeKube, run: Any
) -> None:
    clock = Clock()
    run(Controller(kube, clock=clock))
    name = published(kube, H100)[0]
    kube.node_add("node-7", host="host-typo")
    kube.claim_allocate("ml", "fixed", uid="u-9", node="node-7", devices=[(H100, name)])
    run(Controller(kube, clock=clock))
    assert KubernetesClaim.objects.get(uid="u-9").composition is None
    kube.node_add("node-7", host="host-a-01")  # the admin fixes the annotation

    clock.now += timedelta(seconds=RETRY_S - 1)
    run(Controller(kube, clock=clock))
    assert KubernetesClaim.objects.get(uid="u-9").composition is None  # not yet
    clock.now += timedelta(seconds=2)
    run(Controller(kube, clock=clock))
    run(Controller(kube, clock=clock))

    assert kube.conditions("ml", "fixed") == {name: ["FabricDeviceReady"]}


def test_a_claim_moved_to_other_devices_waits_for_the_old_ones_to_be_given_back(
    kube: FakeKube, run: Any
) -> None:
    run(Controller(kube))
    first, second = published(kube, H100)[:2]
    kube.claim_allocate("ml", "moved", uid="u-10", node="node-1", devices=[(H100, first)])
    run(Controller(kube))
    old = KubernetesClaim.objects.get(uid="u-10").composition
    assert old is not None and old.state == CompositionState.READY

    kube.claim_allocate("ml", "moved", uid="u-10", node="node-1", devices=[(H100, second)])
    run(Controller(kube))

    old.refresh_from_db()
    assert old.state == CompositionState.RELEASED
    # Never Ready for devices that were not composed.
    assert kube.conditions("ml", "moved") == {second: []}
    composed_anew(kube, run, ("ml", "moved"), "u-10", second, instead_of=old)


def test_one_claim_failing_holds_up_neither_the_others_nor_the_releases(
    kube: FakeKube, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(Controller(kube))
    first, second = published(kube, H100)[:2]
    kube.claim_allocate("ml", "gone", uid="u-11", node="node-1", devices=[(H100, first)])
    run(Controller(kube))
    kube.claim_delete("ml", "gone")
    kube.claim_allocate("ml", "broken", uid="u-12", node="node-1", devices=[(L40S, "gpu-x")])
    kube.claim_allocate("ml", "fine", uid="u-13", node="node-1", devices=[(H100, second)])
    real = kube.claim_status_set

    def refuses_broken(namespace: str, name: str, *args: Any) -> None:
        if name == "broken":
            raise RuntimeError("422 Unprocessable Entity")
        real(namespace, name, *args)

    monkeypatch.setattr(kube, "claim_status_set", refuses_broken)
    monkeypatch.setattr(kube, "slice_replace", lambda body: (_ for _ in ()).throw(OSError("down")))

    report = run(Controller(kube))

    assert any("publishing the pool" in e and "down" in e for e in report.errors)
    assert any("ml/broken" in e and "422" in e for e in report.errors)
    assert report.released == ["ml/gone"] and "ml/fine" in report.attached
