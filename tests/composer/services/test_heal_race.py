"""Rule 1 while healing, under real concurrency on PostgreSQL: a heal job and three requests
race in four OS processes for the one spare L40S. It is granted once; the losers are told
why (the heal ends DEGRADED with "no spare", a request is REJECTED); nothing binds twice.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from typing import Any

import pytest
from django.db import connection

from composer.choices import CompositionState, JobStatus
from composer.models import Allocation, Composition, Job
from composer.services.heal import heal_request
from composer.services.health import compositions_react_to_health
from fabric.drivers.registry import get_driver
from fabric.models import Device, FabricManager
from tests.composer.services.test_health import compose, fault, gpu_of
from tests.factories.composer import TenantFactory
from tests.support import heal_race, race
from tests.support.worker import database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}]}


def test_a_heal_and_three_requests_racing_for_the_last_spare_get_it_once(
    postgres: None,
    synced: FabricManager,
    acme: Any,
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    composition = compose(acme, alice, L40S)
    lost = gpu_of(composition)
    fault(synced, "device", lost.name)
    compositions_react_to_health(
        unhealthy_device_ids=[lost.pk], healthy_device_ids=[], reason="failed"
    )
    # Queue the heal without running it here: a racing child runs it.
    monkeypatch.setattr("composer.services.heal.job.job_enqueue", lambda job: True)
    heal = heal_request(composition=composition, actor=alice)
    [spare] = Device.objects.filter(model="L40S 48GB", state="free")
    tenants = [TenantFactory.create() for _ in range(3)]
    racers = [(heal_race.heal_child, {"job": heal.pk})] + [
        (race.request_child, {"tenant": t.pk, "name": f"race-{i}", "spec": L40S})
        for i, t in enumerate(tenants)
    ]

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(racers))
    results = ctx.Queue()
    url = database_url(connection.settings_dict)
    processes = [
        ctx.Process(target=target, args=(url, barrier, results, job)) for target, job in racers
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=120) for _ in racers]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert not [o for o in outcomes if o[2]], outcomes

    heal.refresh_from_db()
    composition.refresh_from_db()
    requests = Counter(
        Composition.objects.filter(tenant__in=tenants).values_list("state", flat=True)
    )
    holders = list(
        Allocation.objects.filter(device=spare, released_at__isnull=True).values_list(
            "composition_id", flat=True
        )
    )
    assert len(holders) == 1, holders  # granted once
    if holders == [composition.pk]:
        assert heal.status == JobStatus.SUCCEEDED, heal.error
        assert composition.state == CompositionState.READY
        assert requests == {CompositionState.REJECTED: 3}
    else:
        assert heal.status == JobStatus.FAILED
        assert composition.state == CompositionState.DEGRADED
        assert composition.failure_reason.startswith("No spare GPU of model L40S 48GB")
        assert requests == {CompositionState.READY: 1, CompositionState.REJECTED: 2}
    bindings = get_driver(synced).bindings()
    assert len(bindings) == len({b.device_id for b in bindings})
    assert [b.device_id for b in bindings].count(spare.external_id) == 1
    assert Job.objects.filter(kind="heal").count() == 1
