"""Shares of a GPU under real concurrency: eight OS processes, on different hosts, race on
PostgreSQL for shares of the last GPUs. The row lock, the conditional UPDATE and the
device's constraints grant exactly what fits: never over the GPU's 1000 thousandths, never
two hosts on one GPU, and the device's figure is the sum of the shares held.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.db.models import Sum

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from composer.services.allocations.shares import shares_held
from fabric.choices import ChangeAction, DeviceState
from fabric.drivers.registry import get_driver
from fabric.models import ChangeRecord, Device, FabricManager, Host
from tests.composer.services.test_allocation_race import PROCESSES, run_race
from tests.support import race
from tests.support.compose import composed

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SHARE = {"items": [{"kind": "gpu", "share": 100}]}


def claimants(acme: Any) -> list[Composition]:
    """One composition per process, on the tiny world's hosts in turn."""
    hosts = list(Host.objects.order_by("pk"))
    return [
        Composition.objects.create(tenant=acme, name=f"c{i}", spec={}, host=hosts[i % len(hosts)])
        for i in range(PROCESSES)
    ]


def assert_held_as_recorded(devices: list[Device]) -> None:
    """Each GPU: at most 1000 thousandths, held by compositions on one host, its shared host,
    and its recorded figure the sum of the shares its allocations hold."""
    held = shares_held([d.pk for d in devices])
    for device in devices:
        device.refresh_from_db()
        live = Allocation.objects.filter(device=device, released_at__isnull=True)
        hosts = set(live.values_list("composition__host", flat=True))
        assert device.allocated_shares == held.get(device.pk, 0) <= 1000
        if device.allocated_shares:
            assert hosts == {device.shared_host_id}
            assert device.state == DeviceState.RESERVED
        else:
            assert (device.shared_host_id, device.state) == (None, DeviceState.FREE)


def test_eight_processes_sharing_the_last_gpu_never_over_allocate_it_nor_split_it_across_hosts(
    postgres: None, synced: FabricManager, acme: Any
) -> None:
    gpus = list(Device.objects.filter(kind="gpu").order_by("pk"))
    Device.objects.filter(pk__in=[g.pk for g in gpus[:-1]]).update(state=DeviceState.MAINTENANCE)
    last = gpus[-1]
    racing = claimants(acme)
    jobs = [{"composition": c.pk, "claims": [[last.pk, None, 300]]} for c in racing]

    outcomes = run_race(race.claim_child, jobs)

    granted = [pk for pk, ok, _ in outcomes if ok]
    hosts = set(Composition.objects.filter(pk__in=granted).values_list("host", flat=True))
    assert len(hosts) == 1, outcomes  # the first claim binds the GPU's shares to its host
    # 3 x 300 <= 1000 < 4 x 300: three of the claimants on the winner's host, or as many
    # as raced from it (the hosts take the claimants in turn, so one may have only two).
    on_host = sum(1 for c in racing if c.host_id in hosts)
    assert len(granted) == min(3, on_host), outcomes
    total = Allocation.objects.filter(device=last).aggregate(total=Sum("share"))["total"]
    assert total == 300 * len(granted)
    assert_held_as_recorded([last])


def test_eight_processes_taking_shares_of_the_last_two_gpus_at_once_get_each_or_none(
    postgres: None, synced: FabricManager, acme: Any
) -> None:
    gpus = list(Device.objects.filter(kind="gpu").order_by("pk"))
    Device.objects.filter(pk__in=[g.pk for g in gpus[:-2]]).update(state=DeviceState.MAINTENANCE)
    pair = gpus[-2:]
    jobs = [
        {
            "composition": c.pk,
            "claims": [[pair[i % 2].pk, None, 450], [pair[1 - i % 2].pk, None, 250]],
        }
        for i, c in enumerate(claimants(acme))
    ]

    outcomes = run_race(race.claim_child, jobs)

    granted = [pk for pk, ok, _ in outcomes if ok]
    assert 1 <= len(granted) <= 3, outcomes
    per_composition = Counter(
        Allocation.objects.filter(composition__in=granted).values_list("composition", flat=True)
    )
    assert set(per_composition.values()) == {2}  # all of a request, or none of it
    assert not Allocation.objects.exclude(composition__in=granted).exists()
    assert_held_as_recorded(pair)


def test_eight_holders_of_one_gpu_decomposed_at_once_unbind_it_exactly_once(
    postgres: None, synced: FabricManager, acme: Any, alice: Any
) -> None:
    """Each decompose gives its share back under the GPU's row lock, and only the one that
    finds no other share left unbinds it: the GPU never stays bound with no holder, and is
    never unbound under a holder still there."""
    first = composed(tenant=acme, user=alice, name="h0", spec=SHARE)
    holders = [first] + [
        composed(tenant=acme, user=alice, name=f"h{i}", spec={**SHARE, "host": first.host_id})
        for i in range(1, PROCESSES)
    ]
    gpu = Allocation.objects.get(composition=first).device
    assert set(Allocation.objects.values_list("device", flat=True)) == {gpu.pk}
    driver = get_driver(synced)
    assert len(driver.bindings()) == 1

    outcomes = run_race(race.decompose_child, [{"composition": h.pk} for h in holders])

    assert {state for _, state, _ in outcomes} == {CompositionState.RELEASED}, outcomes
    assert driver.bindings() == []
    assert_held_as_recorded([gpu])
    gpu.refresh_from_db()
    assert (gpu.state, gpu.bound_host_id) == (DeviceState.FREE, None)
    unbinds = ChangeRecord.objects.filter(
        target_type="device",
        target_id=gpu.pk,
        action=ChangeAction.CHANGED,
        changes__has_key="bound_host",
    )
    assert unbinds.count() == 2  # bound once, unbound once
