"""The clock for real: a Celery beat and a worker (no eager mode, no frozen clock) compose a
booked window by themselves when it starts and decompose it when it ends; after an outage
(no worker, no beat at the start) they catch up: the window still open comes up late, once,
the one that ended is missed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from composer.choices import CompositionState, OccurrenceState
from composer.models import Composition, Occurrence
from composer.services.bookings import booking_request
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from tests.fabric.simulated_world import simulated_manager
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# A tick every second, the composition asked for a second before the window.
CLOCK = {
    "COMPOSER_BOOKING_TICK_S": "1",
    "COMPOSER_BOOKING_LEAD_S": "1",
    "COMPOSER_BOOKING_WARN_S": "3",
}


@pytest.fixture
def cluster(transactional_db: None, redis_url: str) -> Iterator[list[WorkerProcess]]:
    database = connection.settings_dict
    with (
        WorkerProcess.start(redis_url=redis_url, database=database, name="bk", env=CLOCK) as w,
        WorkerProcess.start(
            redis_url=redis_url, database=database, name="bkbeat", beat=True, env=CLOCK
        ) as b,
    ):
        yield [w, b]


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name="sim-clock", fabric="sim-clock")
    inventory_sync(manager=manager)
    return manager


def until(
    what: str, done: Callable[[], bool], cluster: list[WorkerProcess], limit_s: float
) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.2)
    logs = "\n".join(f"--- {w.log_path.name}\n{w.log()[-6000:]}" for w in cluster)
    raise AssertionError(f"{what} not within {limit_s}s\n{logs}")


def test_a_booked_window_comes_up_and_goes_away_by_itself(
    cluster: list[WorkerProcess], manager: FabricManager, acme: Any, alice: Any
) -> None:
    start = timezone.now() + timedelta(seconds=6)
    booking = booking_request(
        tenant=acme,
        requested_by=alice,
        name="soon",
        spec={"items": [{"kind": "gpu", "count": 2}]},
        starts_at=start,
        ends_at=start + timedelta(seconds=10),
    )
    occurrence = booking.occurrences.get()

    def composition() -> Composition | None:
        occurrence.refresh_from_db()
        return Composition.objects.filter(pk=occurrence.composition_id).first()

    def ready() -> bool:
        found = composition()
        return found is not None and found.state == CompositionState.READY

    until("the composition up", ready, cluster, 40)
    assert timezone.now() < start + timedelta(seconds=10)
    bound = {b.binding_id for b in get_driver(manager).bindings()}
    assert len(bound) == 2

    def released() -> bool:
        found = composition()
        return found is not None and found.state == CompositionState.RELEASED

    until("the composition gone", released, cluster, 40)
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.DONE
    assert occurrence.warned_at is not None
    assert get_driver(manager).bindings() == []
    assert Occurrence.objects.filter(state=OccurrenceState.RUNNING).count() == 0


def test_workers_back_after_an_outage_catch_up_once(
    transactional_db: None, redis_url: str, manager: FabricManager, acme: Any, alice: Any
) -> None:
    start = timezone.now() + timedelta(seconds=2)
    spec = {"items": [{"kind": "gpu", "count": 1}]}
    short = booking_request(
        tenant=acme,
        requested_by=alice,
        name="short",
        spec=spec,
        starts_at=start,
        ends_at=start + timedelta(seconds=2),
    ).occurrences.get()
    long = booking_request(
        tenant=acme,
        requested_by=alice,
        name="long",
        spec=spec,
        starts_at=start,
        ends_at=start + timedelta(minutes=5),
    ).occurrences.get()
    while timezone.now() < start + timedelta(seconds=4):  # no worker, no beat: the outage
        time.sleep(0.2)

    database = connection.settings_dict
    with (
        WorkerProcess.start(redis_url=redis_url, database=database, name="bk2", env=CLOCK) as w,
        WorkerProcess.start(
            redis_url=redis_url, database=database, name="bk2beat", beat=True, env=CLOCK
        ) as b,
    ):
        cluster = [w, b]

        def caught_up() -> bool:
            long.refresh_from_db()
            found = Composition.objects.filter(pk=long.composition_id).first()
            return found is not None and found.state == CompositionState.READY

        until("the late start", caught_up, cluster, 40)
        time.sleep(3)  # a few more ticks: none may start it again
        short.refresh_from_db()
        long.refresh_from_db()
        assert short.state == OccurrenceState.MISSED and short.composition_id is None
        assert long.state == OccurrenceState.RUNNING and long.late_s >= 4
        assert "Started late" in long.reason
        assert Composition.objects.filter(tenant=acme).count() == 1
