"""Holds: placed and claimed without binding, applied to a composition, let go or lapsed."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from composer.choices import AllocationState, CompositionState, JobKind
from composer.errors import InvalidTransition, QuotaExceeded, SpecError
from composer.models import Composition, Job, Quota, StateChange
from composer.selectors.holds import composition_holds_for_user
from composer.services.compositions import composition_decompose, composition_request
from composer.services.holds import (
    composition_hold,
    composition_hold_apply,
    composition_hold_release,
    holds_expire,
)
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager

pytestmark = pytest.mark.django_db

ONE_GPU_AND_MEMORY = {"items": [{"kind": "gpu", "count": 1}], "memory_gib": 128}


def hold(tenant: Any, user: Any, spec: dict[str, Any], name: str = "h1", ttl: Any = 300) -> Any:
    return composition_hold(
        tenant=tenant, requested_by=user, spec=spec, name=name, ttl_s=ttl, remote_addr="10.0.0.9"
    )


def test_a_hold_claims_its_devices_without_binding_or_a_job(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    held = hold(acme, alice, ONE_GPU_AND_MEMORY)

    assert held.state == CompositionState.HELD and held.hold_expires_at is not None
    allocations = list(held.allocations.select_related("device"))
    assert {a.state for a in allocations} == {AllocationState.RESERVED}
    gpu = next(a.device for a in allocations if a.gib is None)
    assert gpu.state == DeviceState.RESERVED and not gpu.bound_host_id
    assert not Job.objects.exists()
    changes = list(held.state_changes.values_list("to_state", "reason", "remote_addr"))
    assert [c[0] for c in changes] == ["requested", "placing", "held"]
    assert changes[-1][1].startswith("Held until ") and changes[-1][2] == "10.0.0.9"


def test_others_cannot_take_what_a_hold_claimed(
    synced: FabricManager, acme: Any, alice: Any, globex: Any, carol: Any
) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("name").first()
    assert gpu is not None
    hold(acme, alice, {"devices": [{"device": gpu.pk}]})
    other = composition_request(
        tenant=globex, requested_by=carol, spec={"devices": [{"device": gpu.pk}]}, name="x"
    )
    assert other.state == CompositionState.REJECTED
    assert other.failure_reason == f"GPU {gpu.name} is held for another composition."


def test_apply_composes_the_held_devices_to_ready(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    held = hold(acme, alice, ONE_GPU_AND_MEMORY)
    claimed = sorted(held.allocations.values_list("device_id", flat=True))

    with django_capture_on_commit_callbacks(execute=True):
        job = composition_hold_apply(composition=held, actor=alice, remote_addr="10.0.0.9")

    held.refresh_from_db()
    assert job.kind == JobKind.COMPOSE
    assert held.state == CompositionState.READY and held.hold_expires_at is None
    assert sorted(held.allocations.values_list("device_id", flat=True)) == claimed
    reasons = list(held.state_changes.values_list("to_state", "reason"))
    assert ("placing", "Hold applied: composing") in reasons


def test_the_sweep_releases_a_lapsed_hold_and_only_that(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    early = hold(acme, alice, ONE_GPU_AND_MEMORY, name="early", ttl=60)
    late = hold(acme, alice, ONE_GPU_AND_MEMORY, name="late", ttl=3600)
    assert early.hold_expires_at is not None
    memory = early.allocations.get(gib__isnull=False).device
    before_gib = Device.objects.get(pk=memory.pk).allocated_gib

    assert holds_expire(now=early.hold_expires_at - timedelta(seconds=1)) == 0
    assert holds_expire(now=early.hold_expires_at + timedelta(seconds=1)) == 1

    early.refresh_from_db()
    late.refresh_from_db()
    assert early.state == CompositionState.RELEASED and late.state == CompositionState.HELD
    assert not early.allocations.filter(released_at__isnull=True).exists()
    gpu = early.allocations.get(gib__isnull=True).device
    gpu.refresh_from_db()
    assert gpu.state == DeviceState.FREE
    assert Device.objects.get(pk=memory.pk).allocated_gib == before_gib - 128
    last = StateChange.objects.filter(composition=early).last()
    assert last is not None and last.reason.startswith("Hold lapsed at ")
    assert last.source == "hold sweep" and last.actor is None


def test_release_frees_the_devices(synced: FabricManager, acme: Any, alice: Any) -> None:
    held = hold(acme, alice, ONE_GPU_AND_MEMORY)
    composition_hold_release(composition=held, actor=alice)
    held.refresh_from_db()
    assert held.state == CompositionState.RELEASED and held.released_at is not None
    assert set(Device.objects.filter(kind="gpu").values_list("state", flat=True)) == {
        DeviceState.FREE
    }
    last = held.state_changes.last()
    assert last is not None and (last.reason, last.actor) == ("Hold let go", alice)
    # The name is free again.
    assert hold(acme, alice, ONE_GPU_AND_MEMORY).state == CompositionState.HELD


def test_quotas_count_held_devices(synced: FabricManager, acme: Any, alice: Any) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=1)
    hold(acme, alice, {"items": [{"kind": "gpu", "count": 1}]})
    with pytest.raises(QuotaExceeded):
        hold(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, name="h2")


def test_illegal_moves_are_refused_with_a_clear_error(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    held = hold(acme, alice, ONE_GPU_AND_MEMORY)
    with pytest.raises(InvalidTransition, match="is held, not composed: release the hold"):
        composition_decompose(composition=held, actor=alice)
    composition_hold_release(composition=held, actor=alice)
    with pytest.raises(InvalidTransition, match="is released, not held; only a hold can be"):
        composition_hold_apply(composition=held, actor=alice)
    with pytest.raises(InvalidTransition, match="not held"):
        composition_hold_release(composition=held, actor=alice)
    placed = composition_request(tenant=acme, requested_by=alice, spec=ONE_GPU_AND_MEMORY, name="p")
    with pytest.raises(InvalidTransition) as caught:
        composition_hold_apply(composition=placed, actor=alice)
    assert caught.value.field == "state"


def test_a_lapsed_hold_cannot_be_applied_and_gives_its_devices_back(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    held = hold(acme, alice, ONE_GPU_AND_MEMORY, ttl=60)
    Composition.objects.filter(pk=held.pk).update(
        hold_expires_at=held.hold_expires_at - timedelta(seconds=120)
    )
    with pytest.raises(InvalidTransition, match=r"lapsed at .* UTC; request it again"):
        composition_hold_apply(composition=held, actor=alice)
    assert Composition.objects.get(pk=held.pk).state == CompositionState.RELEASED
    assert not held.allocations.filter(released_at__isnull=True).exists()
    assert not Job.objects.exists()
    last = StateChange.objects.filter(composition=held).last()
    assert last is not None and last.source == "hold apply"


@pytest.mark.parametrize(
    "ttl",
    [
        *(0, 5, 10**6, "soon", 1.5, True),
        *("nan", "inf", "-inf", float("nan"), float("inf"), "1e400", 10**400),
    ],
)
def test_a_hold_time_out_of_range_is_a_field_error(
    ttl: Any, synced: FabricManager, acme: Any, alice: Any
) -> None:
    with pytest.raises(SpecError) as caught:
        hold(acme, alice, ONE_GPU_AND_MEMORY, ttl=ttl)
    assert caught.value.field == "ttl_s"
    assert not Composition.objects.exists()


def test_beat_sweeps_holds_on_the_housekeeping_queue() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["composition-holds-expire"]
    assert entry["task"] == "composer.tasks.composition_holds_expire_task"
    assert entry["task"] in settings.COMPOSER_HOUSEKEEPING_TASKS


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_apply_racing_the_sweep_leaves_exactly_one_of_them_done(
    postgres: None, synced: FabricManager, acme: Any, alice: Any
) -> None:
    held = hold(acme, alice, ONE_GPU_AND_MEMORY, ttl=60)
    assert held.hold_expires_at is not None
    later = held.hold_expires_at + timedelta(seconds=1)
    barrier = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def racer(name: str, work: Any) -> threading.Thread:
        def run() -> None:
            barrier.wait(timeout=10)
            try:
                outcomes[name] = work()
            except InvalidTransition as exc:
                outcomes[name] = exc
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    threads = [
        racer("apply", lambda: composition_hold_apply(composition=held, actor=alice)),
        racer("sweep", lambda: holds_expire(now=later)),
    ]
    for thread in threads:
        thread.join(timeout=30)

    held.refresh_from_db()
    active = held.allocations.filter(released_at__isnull=True).count()
    if held.state == CompositionState.RELEASED:
        assert outcomes["sweep"] == 1 and isinstance(outcomes["apply"], InvalidTransition)
        assert active == 0 and not Job.objects.exists()
    else:
        assert held.state in (CompositionState.PLACING, CompositionState.READY)
        assert outcomes["sweep"] == 0 and isinstance(outcomes["apply"], Job)
        assert active == 2 and Job.objects.count() == 1


def test_each_persona_sees_only_the_holds_it_may(
    synced: FabricManager, acme: Any, alice: Any, bob: Any, globex: Any, carol: Any, admin_user: Any
) -> None:
    mine = hold(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, name="a")
    theirs = hold(globex, carol, {"items": [{"kind": "gpu", "count": 1}]}, name="g")
    composition_request(tenant=acme, requested_by=alice, spec=ONE_GPU_AND_MEMORY, name="placed")

    def seen(user: Any) -> list[int]:
        return [c.pk for c in composition_holds_for_user(user=user)]

    assert seen(alice) == seen(bob) == [mine.pk]
    assert seen(carol) == [theirs.pk]
    assert sorted(seen(admin_user)) == sorted([mine.pk, theirs.pk])
