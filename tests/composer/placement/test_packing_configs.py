"""The configuration programmes of the composable ceiling (bench/packing_configs.py) on
hand-checked cases: what a GPU can hold, the least waste beside the fractions every run
places, and the most a run can allocate when the pool runs out at a given arrival. The
ceiling as a whole is checked against exhaustive search in test_packing_ceiling.py."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bench.packing_bound import Host, after_drop_programme, ceiling, drop_split
from bench.packing_configs import Exhaustion, contents, least_waste
from bench.packing_data import Pod
from tests.composer.placement.packing_search import (
    best_any_policy,
    cluster,
    drop_cases,
    waste_of,
)


def waste(forced: dict[int, int], arrived: dict[int, int]) -> float:
    gaps, fill = least_waste(forced, arrived)
    return gaps - fill


def test_contents_are_every_multiset_that_fits_one_gpu() -> None:
    assert contents([500, 600]) == [(600,), (500,), (500, 500)]
    assert sorted(contents([400, 300])) == sorted(
        [(400,), (400, 400), (400, 300), (400, 300, 300), (300,), (300, 300), (300, 300, 300)]
    )
    assert contents([810], room=800) == []


def test_least_waste_pairs_what_is_forced_and_fills_gaps_with_what_fits() -> None:
    # two forced 470s pair best with each other: 60 milli nothing fills
    assert waste({470: 2}, {470: 2}) == pytest.approx(60, abs=0.01)
    # ... unless a 50 arrives to fill 50 of it
    assert waste({470: 2}, {470: 2, 50: 1}) == pytest.approx(10, abs=0.01)
    # a forced 470 may share with an arrival that is not forced
    assert waste({470: 1}, {470: 1, 480: 1}) == pytest.approx(50, abs=0.01)
    # the best partner there is; a single 470 is never half of a 470 + 470 pair
    assert waste({470: 1}, {470: 1, 460: 1}) == pytest.approx(70, abs=0.01)
    assert waste({470: 1}, {470: 1, 460: 1, 480: 1}) == pytest.approx(50, abs=0.01)
    # a forced 810 leaves 190 for fractions of at most that; a 320 cannot use it
    assert waste({810: 1}, {810: 1, 320: 1}) == pytest.approx(190, abs=0.01)
    assert waste({810: 1}, {810: 1, 160: 1}) == pytest.approx(30, abs=0.01)
    # 650 + 350 leave nothing; two big ones never pair
    assert waste({650: 1}, {650: 1, 350: 1}) == pytest.approx(0, abs=0.01)
    assert waste({650: 2}, {650: 2}) == pytest.approx(700, abs=0.01)


def test_least_waste_knows_small_fractions_come_whole() -> None:
    # a 470 leaves 530: two 320s do not fit it (a splittable fill would fill it all), one
    # 320 and a 160 do, leaving 50
    assert waste({470: 1}, {470: 1, 320: 2}) == pytest.approx(210, abs=0.01)
    assert waste({470: 1}, {470: 1, 320: 2, 160: 1}) == pytest.approx(50, abs=0.01)
    # three 230s fill 690 of a 350's 650 gap; the fill is what sits there, the gaps the rest
    gaps, fill = least_waste({350: 1}, {350: 1, 230: 3})
    assert (gaps, fill) == (pytest.approx(650, abs=0.01), pytest.approx(460, abs=0.01))


def test_least_waste_never_falls_as_more_is_forced_and_refuses_bad_input() -> None:
    arrived = {810: 3, 650: 2, 470: 4, 370: 1, 320: 3, 160: 2, 50: 1}
    forced: dict[int, int] = {}
    last = 0.0
    for size in (470, 810, 470, 650, 370, 470, 810, 650, 470, 810):
        forced[size] = forced.get(size, 0) + 1
        now = waste(forced, arrived)
        assert now >= last - 0.01, forced
        last = now
    # nothing forced: nothing to say; forcing what did not arrive, or a third or less, is
    # the caller's mistake, never a bound
    assert least_waste({}, {470: 3}) == (0.0, 0.0)
    for wrong in ({470: 2}, {333: 1}, {480: 1}):
        with pytest.raises(ValueError, match="not above a third, or not arrived"):
            least_waste(wrong, {470: 1, 333: 1})


def pods(*milli: int) -> list[Pod]:
    """One-GPU pods of these milli (1000: a whole GPU), small enough to fit any host."""
    return [Pod(1000, 1024, 1, m) for m in milli]


def test_exhaustion_late_fractions_need_an_earlier_anchor() -> None:
    # one GPU, the pool run out at x = 0: only what arrived before 1 may have bound it. A
    # 160 did, and the 810 after it fits beside it; a 470 did, and the 810 does not
    assert Exhaustion(pods(160, 810), 1, set(), set()).interval(0, 1) == pytest.approx(970)
    assert Exhaustion(pods(470, 810), 1, set(), set()).interval(0, 1) == pytest.approx(470)
    # a pod of no milli binds a GPU and leaves it whole to a later fraction
    assert Exhaustion(pods(0, 810), 1, set(), set()).interval(0, 1) == pytest.approx(810)


def test_exhaustion_places_no_whole_gpu_after_the_pool_runs_out() -> None:
    # two GPUs. Run out at x = 0: the one GPU the first 470 may have bound takes the second
    # 470 beside it, the whole-GPU pod nothing (and the other GPU has no anchor)
    run = Exhaustion(pods(470, 1000, 470), 2, set(), set())
    assert run.interval(0, 1) == pytest.approx(940)
    # at x = 1 the whole-GPU pod may have come before: 1000 + 940; the pool never running
    # out places everything alike, and the bound is the largest case
    assert run.interval(1, 2) == pytest.approx(1940)
    assert run.interval(3, 3) == pytest.approx(1940)
    assert run.bound() == pytest.approx(1940)


def test_exhaustion_places_what_is_certified() -> None:
    # two GPUs. Free to choose, a run takes the whole GPU and 810 + 160 on the other: 1970.
    # With the 810 and 650 certified while a GPU is unbound, any run whose pool runs out
    # after them holds both, so the whole-GPU pod finds no GPU: 810 + 160 and 650, 1620;
    # one that runs out before the 650 arrives has only the 810 (and the 160) on one GPU
    arriving = pods(810, 650, 1000, 160)
    free = Exhaustion(arriving, 2, set(), set())
    forced = Exhaustion(arriving, 2, set(), {0, 1})
    assert free.bound() == pytest.approx(1970)
    assert forced.interval(0, 1) == pytest.approx(970)
    assert forced.interval(2, 3) == pytest.approx(1620)
    assert forced.bound() == pytest.approx(1620)
    # certified in every run (`always`), the 650 is placed even when it comes late: beside
    # the 160, so the 810 is not (970 otherwise); the 810 and the 650 both fit no one GPU,
    # so no run has that (-inf)
    late = pods(160, 810, 650)
    assert Exhaustion(late, 1, {2}, set()).interval(0, 1) == pytest.approx(810)
    assert Exhaustion(late, 1, set(), set()).interval(0, 1) == pytest.approx(970)
    assert Exhaustion(late, 1, {1, 2}, set()).interval(0, 1) == -np.inf


def test_after_a_drop_later_pods_asking_as_much_need_a_gpu_bound_before() -> None:
    # the 810 (1 core, 1 GiB) is dropped: no host with a core and a GiB has an unbound GPU
    # any more. The later 470 asking 2 cores can only join the GPU the first 470 bound (940
    # there); the later 470 asking half a core may bind a GPU of its own; the later
    # whole-GPU pod asking 2 cores fits nowhere. Dropping nothing, a run may place 1000 +
    # 810 + 470 + 470 (the programme, fractional, allows 1.5 GPUs of 470 + 470 beside half
    # a GPU of 810: 2815)
    pods = [
        Pod(1000, 1024, 1, 470),
        Pod(1000, 1024, 1, 810),
        Pod(2000, 1024, 1, 470),
        Pod(500, 1024, 1, 470),
        Pod(2000, 1024, 1, 1000),
    ]
    sharper = after_drop_programme(pods, gpus=3)
    assert sharper([1], set()) == pytest.approx(940 + 470)
    assert sharper([1], {2}) == pytest.approx(940 + 470)
    assert sharper([], set()) == pytest.approx(1000 + 1.5 * 940 + 0.5 * 810)
    # with nothing before the drop to anchor it, the later 470 asking as much finds no GPU:
    # a run that must place it cannot drop the 810 first
    alone = after_drop_programme([Pod(1000, 1024, 1, 810), Pod(2000, 1024, 1, 470)], gpus=2)
    assert alone([0], set()) == pytest.approx(0, abs=0.01)
    assert alone([0], {1}) == -np.inf


def test_sharpened_drop_split_bounds_every_policy_and_bites() -> None:
    """drop_split with each case sharpened against exhaustive search in domains: it must
    hold, never exceed the plain split, and fall below it on some instances."""
    sharper_won = 0
    for seed in range(150):
        rng = random.Random(seed)
        nh = rng.choice([2, 3])
        cl = cluster(*[(rng.choice([2, 4]), 8, rng.choice([1, 2]), "A") for _ in range(nh)])
        shapes = [(1, 810), (1, 650), (1, 470), (1, 1000), (1, 160), (1, 320), (0, 0)]
        pods = [
            Pod(rng.choice([1000, 2000]), 1024, *rng.choice(shapes))
            for _ in range(rng.choice([5, 6, 7]))
        ]
        domains = (np.arange(nh) % 2).astype(np.int64)
        hosts = Host(cl.cpu, cl.mem, cl.gpus, domains)
        waste = waste_of(pods)
        capacity = int(cl.gpus.sum()) * 1000
        plain = drop_split(pods, [], waste, capacity)
        sharp = drop_split(
            pods, [], waste, capacity, after_drop_programme(pods, int(cl.gpus.sum()))
        )
        assert sharp <= plain + 1e-6, seed
        assert best_any_policy(cl, domains, pods) <= sharp + 1e-6, seed
        assert ceiling(hosts, pods, int(cl.gpus.sum()), pooled=False).milli <= plain + 1e-6
        sharper_won += sharp < plain - 1
    assert sharper_won >= 10


def test_sharpened_search_over_blocks_matches_a_scan_of_every_case() -> None:
    """drop_split bounds blocks of cases (drops of one shape) with one programme each and
    halves the largest: a block's programme must bound each of its cases, and the search
    must end on the largest case a scan of every case finds (within the rounding margin)."""
    for seed in range(40):
        rng = random.Random(seed)
        shapes = [(1, 810), (1, 650), (1, 470), (1, 1000), (1, 160), (1, 320), (4, 1000)]
        pods = [
            Pod(rng.choice([1000, 3000]), rng.choice([1, 8]) * 1024, *rng.choice(shapes))
            for _ in range(rng.randrange(8, 40))
        ]
        plus = [i for i, p in enumerate(pods) if p.k == 1 and 333 < p.milli < 1000]
        certified = [i for i in plus if rng.random() < 0.2]
        waste = waste_of(pods)
        gpus = rng.randrange(2, 12)
        capacity = gpus * 1000
        sharper = after_drop_programme(pods, gpus)
        cases = drop_cases(pods, certified, waste, capacity)
        scan = [min(plain, sharper(drops, placed)) for plain, drops, placed in cases]
        if max(scan) == -np.inf:  # forced beyond what the GPUs hold: no run at all
            with pytest.raises(ValueError, match="no case"):
                drop_split(pods, certified, waste, capacity, sharper)
            continue
        got = drop_split(pods, certified, waste, capacity, sharper)
        assert got == pytest.approx(max(scan), abs=1e-6 * capacity), seed
        # a block of one shape, placing what its first case places, bounds each case
        by_shape: dict[tuple[int, int, int], list[tuple[int, set[int]]]] = {}
        for _, drops, placed in cases[:-1]:  # the last case drops none
            p = pods[drops[0]]
            by_shape.setdefault((p.cpu, p.mem, p.milli), []).append((drops[0], placed))
        for block in by_shape.values():
            placed = block[0][1]
            whole = sharper([i for i, _ in block], placed)
            for i, _ in block:
                assert sharper([i], placed) <= whole + 1e-6 * capacity, seed
