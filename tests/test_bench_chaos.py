"""The reliability benchmark's own logic (bench/chaos/): what counts as touched, recovered,
stuck, and when a housekeeping worker joins the layout. The run itself starts real
processes and is the benchmark (bench/bench_chaos.py), not a test."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.chaos.kills import Disruption, children_of
from bench.chaos.layout import housekeeping_routed
from bench.chaos.measure import recoveries, stretch_start, stuck

T0 = 1_000_000.0


def test_recovery_is_the_longest_wait_of_the_compositions_mid_step() -> None:
    lines = {
        1: [(T0, "placing"), (T0 + 1, "binding"), (T0 + 9, "ready")],
        2: [(T0 + 2, "placing"), (T0 + 3, "binding"), (T0 + 20, "failed")],
        3: [(T0, "placing"), (T0 + 1, "ready")],  # settled before the kill: not touched
    }
    kill = Disruption("worker-main", "worker-0", T0 + 5, touched=[1, 2, 3])

    (recovery,) = recoveries([kill], lines, end=T0 + 100)

    assert recovery.touched == [1, 2]
    assert recovery.waits_s == [4.0, 15.0]
    assert recovery.seconds == 15.0
    assert recovery.settled_s == [4.0, 15.0]
    assert recovery.unsettled == 0


def test_a_composition_that_never_settles_counts_until_the_end() -> None:
    lines = {1: [(T0, "placing"), (T0 + 1, "binding")]}
    kill = Disruption("pool-child", "worker-1", T0 + 2, touched=[1])

    (recovery,) = recoveries([kill], lines, end=T0 + 92)

    assert recovery.unsettled == 1
    assert recovery.seconds == 90.0
    assert recovery.settled_s == []


def test_one_stuck_since_an_earlier_kill_is_not_touched_again() -> None:
    lines = {1: [(T0, "placing"), (T0 + 1, "binding")]}
    later = Disruption("web", "web-0", T0 + 70, touched=[1])

    (recovery,) = recoveries([later], lines, end=T0 + 200)

    assert recovery.touched == []
    assert recovery.seconds is None


def test_stuck_is_one_transitional_stretch_over_a_minute() -> None:
    lines = {
        # healed and decomposed in good time: two short stretches
        1: [(T0, "placing"), (T0 + 30, "ready"), (T0 + 40, "healing"), (T0 + 80, "ready")],
        # bound for 61 s
        2: [(T0, "placing"), (T0 + 1, "binding"), (T0 + 62, "failed")],
        # never settled: counted until the end
        3: [(T0 + 10, "decomposing")],
    }

    assert stuck(lines, end=T0 + 75) == {2: 62.0, 3: 65.0}


def test_a_stretch_starts_where_the_composition_last_left_a_settled_state() -> None:
    line = [(T0, "placing"), (T0 + 1, "binding"), (T0 + 5, "ready"), (T0 + 9, "healing")]

    assert stretch_start(line, T0 + 3) == T0
    assert stretch_start(line, T0 + 6) is None
    assert stretch_start(line, T0 + 10) == T0 + 9


def test_a_housekeeping_worker_joins_when_a_task_is_routed_to_that_queue() -> None:
    assert housekeeping_routed({"composer.tasks.x": {"queue": "housekeeping"}})
    assert not housekeeping_routed({"composer.tasks.x": {"queue": "celery"}})
    assert not housekeeping_routed(None)


def test_children_are_read_from_proc() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in children_of(os.getpid())
    finally:
        child.kill()
        child.wait()
