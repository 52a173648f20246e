"""A compose job binds its devices side by side when the manager is slow: the binds overlap,
every one is recorded, a failure or a time limit still rolls everything back, and the
helper threads leave no database connection behind.

Committed data only (each bind thread has its own connection), so these tests commit:
`transaction=True`. On PostgreSQL and on SQLite (where the threads take the write lock in
turn while the manager's latency overlaps).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest
from django.db import connection

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job
from composer.services.compositions import composition_request
from fabric.drivers.base import DriverError, FabricDriver
from fabric.models import FabricManager
from fabric.simulator.driver import SimulatedDriver
from tests.support.rollback import assert_rolled_back
from tests.support.slow_binds import slow_binds

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 128}  # three bindings
BIND_MS = 200


def sessions() -> int:
    """Open connections to the test database (PostgreSQL; SQLite has no server to ask)."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[tuple[str, float, float, int]]:
    """Every bind the manager is asked for: (device, start, end, thread), each taking
    BIND_MS of simulated latency."""
    return slow_binds(settings, monkeypatch, bind_ms=BIND_MS)


def request(acme: Any, alice: Any) -> Composition:
    """Request, place, claim; the compose job runs (eagerly) once the request commits."""
    composition = composition_request(tenant=acme, requested_by=alice, spec=SPEC, name="par")
    composition.refresh_from_db()
    return composition


def test_the_binds_overlap_and_every_binding_is_recorded(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    calls: list[tuple[str, float, float, int]],
) -> None:
    before = sessions()
    composition = request(acme, alice)

    assert composition.state == CompositionState.READY, composition.failure_reason
    assert len(calls) == 3 and len({thread for *_, thread in calls}) == 3
    # The first bind, alone, was slow (BIND_MS): the other two went side by side, each
    # starting before the other ended.
    first, *others = sorted(calls, key=lambda call: call[1])
    assert first[3] == threading.get_ident() and all(c[1] >= first[2] for c in others)
    assert max(c[1] for c in others) < min(c[2] for c in others)
    recorded = set(composition.allocations.values_list("binding_id", flat=True))
    assert recorded == {b.binding_id for b in driver.bindings()} and len(recorded) == 3
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    assert job.status == JobStatus.SUCCEEDED and job.progress_done == job.progress_total
    # What the helper threads logged (the manager's side) is the job's log too.
    messages = list(job.log_lines.values_list("message", flat=True))
    assert sum(m.startswith("simulated fabric sim bound") for m in messages) == 3
    assert sum(m.startswith("bound ") for m in messages) == 3
    assert sessions() == before, "a bind thread left its database connection open"


def test_a_failed_bind_among_parallel_ones_rolls_every_binding_back(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    calls: list[tuple[str, float, float, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = SimulatedDriver.bind
    lock, asked = threading.Lock(), []

    def bind(self: SimulatedDriver, **kwargs: Any) -> Any:
        with lock:  # the second bind asked for (the first of the parallel ones) is refused
            asked.append(kwargs["device_id"])
            refused = len(asked) == 2
        if refused:
            time.sleep(BIND_MS / 2000)  # while the third is under way
            raise DriverError("refused by the fabric manager (test)", permanent=True)
        return counted(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", bind)
    composition = request(acme, alice)

    assert_rolled_back(composition, driver)
    assert "refused" in composition.failure_reason
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    assert job.status == JobStatus.FAILED
    # The first bind, and the one in flight beside the refused one, were recorded, then
    # undone.
    assert len(calls) == 2
    assert job.log_lines.filter(message__startswith="unbound ").count() == 2


def test_a_time_limit_while_binds_are_in_flight_records_them_then_rolls_back(
    synced: FabricManager,
    driver: FabricDriver,
    acme: Any,
    alice: Any,
    calls: list[tuple[str, float, float, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise SoftTimeLimitExceeded()  # as the signal would, while the job waits on binds

    monkeypatch.setattr("fabric.reconfig.binds.wait", interrupted)
    composition = request(acme, alice)

    assert_rolled_back(composition, driver)
    assert "time limit" in composition.failure_reason
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    messages = list(job.log_lines.values_list("message", flat=True))
    # The two binds in flight finished, were recorded, and were undone with the first.
    assert len(calls) == 3
    assert sum(m.startswith("bound ") for m in messages) == 3
    assert sum(m.startswith("unbound ") for m in messages) == 3


@pytest.mark.parametrize(
    "setting", [{"COMPOSER_BIND_PARALLELISM": 1}, {"COMPOSER_BIND_PARALLEL_AFTER_MS": 10_000}]
)
def test_one_at_a_time_when_parallelism_is_off_or_the_manager_is_fast(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    calls: list[tuple[str, float, float, int]],
    settings: Any,
    setting: dict[str, int],
) -> None:
    for name, value in setting.items():
        setattr(settings, name, value)
    composition = request(acme, alice)

    assert composition.state == CompositionState.READY
    spans = sorted((start, end) for _, start, end, _ in calls)
    assert all(end <= later for (_, end), (later, _) in itertools.pairwise(spans))
    assert {thread for *_, thread in calls} == {threading.get_ident()}
