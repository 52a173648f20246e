"""A worker killed mid-resize: real Celery workers and beat, binds slowed to seconds.
`kill -9` of the main process of the worker running the resize job once its first addition
is bound (the others in flight): the lease runs out, the job is taken over and resumes on
the other worker, which records the bindings whose replies were lost instead of binding
again. Within a minute the composition is ready with every device bound exactly once."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from composer.choices import TERMINAL_JOB_STATUSES, CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job
from composer.services.compositions import composition_request
from composer.services.resize import resize_request
from fabric.drivers.registry import get_driver
from fabric.models import FabricManager
from fabric.services.sync import inventory_sync
from fabric.simulator.models import SimulatedBinding, SimulatedFabric
from tests.composer.test_worker_kill import _holder_pid, _parent_pid
from tests.fabric.simulated_world import simulated_manager
from tests.support.worker import WorkerProcess

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

FABRIC = "sim-resize-kill"
BIND_S = 3.0
RECOVERY_LIMIT_S = 60.0
ADD = [{"kind": "gpu", "count": 2}, {"kind": "cxl_memory", "gib": 256}]  # three binds
SLOW = {"COMPOSER_TEST_LATENCY_SCALE": "1"}


@pytest.fixture
def manager() -> FabricManager:
    manager = simulated_manager(name=FABRIC, fabric=FABRIC)
    inventory_sync(manager=manager)
    return manager


@pytest.fixture
def cluster(transactional_db: None, redis_url: str) -> Iterator[list[WorkerProcess]]:
    """Two workers and beat (the lease sweep), as in production."""
    database = connection.settings_dict
    with (
        WorkerProcess.start(redis_url=redis_url, database=database, name="r1", env=SLOW) as one,
        WorkerProcess.start(redis_url=redis_url, database=database, name="r2", env=SLOW) as two,
        WorkerProcess.start(redis_url=redis_url, database=database, name="rb", beat=True) as b,
    ):
        yield [one, two, b]


def _logs(cluster: list[WorkerProcess]) -> str:
    return "\n".join(f"--- {w.log_path.name}\n{w.log()[-6000:]}" for w in cluster)


def _until(what: str, done: Any, cluster: list[WorkerProcess], limit_s: float) -> float:
    """Seconds until `done()` is true; fails the test with the workers' logs after
    `limit_s`."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if done():
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"{what} not within {limit_s}s\n{_logs(cluster)}")


def test_a_worker_killed_mid_resize_is_resumed_elsewhere_and_binds_nothing_twice(
    cluster: list[WorkerProcess], manager: FabricManager, acme: Any, alice: Any
) -> None:
    composition = composition_request(
        tenant=acme, requested_by=alice, spec={"items": [{"kind": "gpu"}]}, name="grow"
    )
    _until("compose", lambda: _state(composition) == CompositionState.READY, cluster, 30)
    kept = composition.allocations.get()
    SimulatedFabric.objects.filter(name=FABRIC).update(
        latency_ms={"bind": int(BIND_S * 1000), "unbind": 200}
    )

    job = resize_request(composition=composition, add=ADD, remove=[], requested_by=alice)
    added = Allocation.objects.filter(composition=composition).exclude(pk=kept.pk)

    _until("the first addition bound", lambda: added.exclude(binding_id="").exists(), cluster, 30)
    job.refresh_from_db()
    victim = _parent_pid(_holder_pid(job))  # the main process of the worker running it
    assert victim in {w.process.pid for w in cluster}
    os.kill(victim, signal.SIGKILL)
    seconds = _until(
        "ready again",
        lambda: _state(composition) == CompositionState.READY,
        cluster,
        RECOVERY_LIMIT_S,
    )
    logger.warning("kill -9 mid-resize: ready %.1fs after it", seconds)

    _until("the job's end", lambda: _status(job) in TERMINAL_JOB_STATUSES, cluster, 10)
    job.refresh_from_db()
    composition.refresh_from_db()
    assert (job.status, job.resumes) == (JobStatus.SUCCEEDED, 1), job.error
    assert composition.failure_reason == "" and composition.spec["memory_gib"] == 256
    held = Allocation.objects.filter(composition=composition, released_at__isnull=True)
    assert held.count() == 4 and not held.filter(binding_id="").exists()
    reported = get_driver(manager).bindings()
    assert {b.binding_id for b in reported} == set(held.values_list("binding_id", flat=True))
    made = Counter(b.device_id for b in SimulatedBinding.objects.filter(fabric__name=FABRIC))
    assert all(count == 1 for count in made.values()), made
    assert Job.objects.filter(kind=JobKind.RESIZE).count() == 1
    # The resumed run skipped what the dead one had bound and recorded.
    assert job.log_lines.filter(message__contains="is already bound").exists()


def _state(composition: Composition) -> str:
    composition.refresh_from_db(fields=["state"])
    return composition.state


def _status(job: Job) -> str:
    job.refresh_from_db(fields=["status"])
    return job.status
