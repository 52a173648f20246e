"""The composable ceiling of bench/packing_bound.py on small instances: tight where the
waste is forced, and never below what the best of every policy allocates (exhaustive search,
tests/composer/placement/packing_search.py), pooled and in domains, with and without GPU
models named; the drop split's cases and its bisection on their own."""

from __future__ import annotations

import random

import numpy as np
import pytest

import bench.packing_configs as packing_configs
from bench.packing_bound import Host, after_drop, ceiling, drop_split
from bench.packing_data import FULL, Pod, switch_domains
from tests.composer.placement.packing_search import (
    best_any_policy,
    cluster,
    drop_cases,
    waste_of,
)


def test_ceiling_is_tight_on_forced_big_fractions():
    # two 810 fractions must take both GPUs; the whole-GPU pod after them finds none
    cl = cluster((64, 256, 2, "A"))
    pods = [Pod(1000, 1024, 1, 810), Pod(1000, 1024, 1, 810), Pod(1000, 1024, 1, 1000)]
    hosts = Host(cl.cpu, cl.mem, cl.gpus, np.zeros(1, dtype=np.int64))
    # (less the programme's rounding margin, a ten-millionth of the gaps)
    assert ceiling(hosts, pods, 2, pooled=True).milli == pytest.approx(1620, abs=0.01)


def test_ceiling_bounds_every_policy_on_small_instances():
    """The ceiling against the best of all policies, found by exhaustive search, on random
    three-host instances, pooled and in two domains; it must also bite (fall below the
    trivial bound, min(arrived, capacity)) on some of them, or the check proves nothing."""
    biting = 0
    for seed in range(40):
        rng = random.Random(seed)
        nodes = [(rng.choice([4, 8, 16]), rng.choice([8, 32]), rng.choice([1, 2]), "A")]
        nodes += [(rng.choice([4, 8, 16]), rng.choice([8, 32]), rng.choice([1, 2]), "A")]
        nodes += [(rng.choice([4, 8]), 16, 1, "A")]
        cl = cluster(*nodes)
        shapes = [(1, 810), (1, 650), (1, 1000), (1, 160), (1, 320), (0, 0), (2, 1000)]
        shapes += [(1, 470), (1, 370)]
        pods = []
        for _ in range(rng.choice([5, 6, 7])):
            k, milli = rng.choice(shapes)
            cpu, mem = rng.choice([1000, 2000, 4000]), rng.choice([1, 4]) * 1024
            pods.append(Pod(cpu, mem, k, milli))
        for pooled in (True, False):
            domains = np.zeros(3, dtype=np.int64) if pooled else np.array([0, 0, 1])
            hosts = Host(cl.cpu, cl.mem, cl.gpus, domains)
            bound = ceiling(hosts, pods, int(cl.gpus.sum()), pooled)
            best = best_any_policy(cl, domains, pods)
            assert best <= bound.milli + 1e-9, (seed, pooled)
            for name, part in bound.parts.items():  # each argument on its own
                assert best <= part + 1e-9, (seed, pooled, name)
            biting += bound.milli < min(bound.arrived, int(cl.gpus.sum()) * FULL)
    assert biting >= 5


def test_ceiling_bounds_every_policy_when_pods_name_gpu_models():
    """Two GPU models and pods that name one (gpu_spec) beside pods that take any: such a
    pod is never counted as forced, yet it binds GPUs, fills gaps and is shut out after a
    drop like any other. The ceiling against exhaustive search that honours the specs,
    pooled and in domains of one model each."""
    biting = 0
    for seed in range(40):
        rng = random.Random(seed)
        nodes = [(rng.choice([4, 8]), rng.choice([8, 32]), rng.choice([1, 2]), "A")]
        nodes += [(rng.choice([4, 8]), 16, 1, "A"), (rng.choice([4, 8]), 16, 1, "B")]
        cl = cluster(*nodes)
        shapes = [(1, 810), (1, 470), (1, 1000), (1, 160), (1, 320), (2, 1000)]
        pods = [
            Pod(
                rng.choice([1000, 2000, 4000]),
                rng.choice([1, 4]) * 1024,
                *rng.choice(shapes),
                rng.choice(["", "", "A", "B", "A|B"]),
            )
            for _ in range(rng.choice([5, 6, 7]))
        ]
        gpus = int(cl.gpus.sum())
        for pooled in (True, False):
            domains = np.zeros(3, dtype=np.int64) if pooled else switch_domains(cl)
            bound = ceiling(Host(cl.cpu, cl.mem, cl.gpus, domains), pods, gpus, pooled)
            best = best_any_policy(cl, domains, pods)
            assert best <= bound.milli + 1e-9, (seed, pooled)
            biting += bound.milli < min(bound.arrived, gpus * FULL)
    assert biting >= 5


def test_ceiling_counts_the_pairs_of_fractions_above_a_third_on_small_instances():
    """Fractions of more than a third but at most half a GPU only: no gap beside a big one
    anywhere, so whatever the ceiling takes off min(arrived, capacity) comes from how they
    pair (470 + 470 leaves 60 milli) and what small fractions there are to fill the rest.
    Against exhaustive search, pooled and in two domains; it must bite on some, or the
    programme is not what the check proves."""
    biting = 0
    for seed in range(200):
        rng = random.Random(seed)
        cl = cluster(*[(rng.choice([4, 8, 16]), 32, rng.choice([1, 2]), "A") for _ in range(2)])
        shapes = [(1, 470), (1, 460), (1, 370), (1, 350), (1, 160), (1, 50), (1, 1000)]
        pods = [
            Pod(rng.choice([1000, 2000]), 1024, *rng.choice(shapes))
            for _ in range(rng.choice([5, 6, 7]))
        ]
        for domains in (np.zeros(2, dtype=np.int64), np.array([0, 1])):
            pooled = not domains.any()
            bound = ceiling(
                Host(cl.cpu, cl.mem, cl.gpus, domains), pods, int(cl.gpus.sum()), pooled
            )
            best = best_any_policy(cl, domains, pods)
            assert best <= bound.milli + 1e-9, (seed, pooled)
            for name, part in bound.parts.items():
                assert best <= part + 1e-9, (seed, pooled, name)
            biting += bound.milli < min(bound.arrived, int(cl.gpus.sum()) * FULL) - 1
    assert biting >= 40


def test_three_fractions_of_a_third_share_a_gpu() -> None:
    # 333 + 333 + 333 fit one GPU, so 333 is no fraction "above a third": two 3-GPU pods,
    # a 2-GPU pod and four 333s on six GPUs allow 5,999 milli (the exhaustive best), and a
    # ceiling that paired the 333s as if only two could share a GPU would say 5,666
    cl = cluster((3, 2, 3, "A"), (8, 4, 3, "A"))
    shapes = [(2, 1000), (1, 333), (1, 333), (3, 1000), (1, 333), (1, 333), (3, 1000)]
    pods = [Pod(2000, 1024, k, milli) for k, milli in shapes]
    domains = np.zeros(2, dtype=np.int64)
    best = best_any_policy(cl, domains, pods)
    assert best == 5999
    assert ceiling(Host(cl.cpu, cl.mem, cl.gpus, domains), pods, 6, pooled=True).milli >= best


def test_pooled_ceiling_split_on_when_the_pool_runs_out_bounds_every_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pooled split (packing_configs.Exhaustion) against exhaustive search on 600
    fraction-rich instances (one big host, two to four GPUs): it must hold, and bite below
    the ceiling without it on some of them (12 at least), or the split is not what the
    check proves."""
    tighter = 0
    for seed in range(600):
        rng = random.Random(seed)
        cl = cluster((64, 256, rng.choice([2, 3, 4]), "A"))
        shapes = [(1, 810), (1, 650), (1, 160), (1, 320), (1, 470), (1, 1000), (1, 0)]
        pods = [Pod(1000, 1024, *rng.choice(shapes)) for _ in range(rng.choice([5, 6, 7]))]
        hosts = Host(cl.cpu, cl.mem, cl.gpus, np.zeros(1, dtype=np.int64))
        gpus = int(cl.gpus.sum())
        bound = ceiling(hosts, pods, gpus, pooled=True)
        best = best_any_policy(cl, np.zeros(1, dtype=np.int64), pods)
        assert best <= bound.milli + 1e-9, seed
        assert best <= bound.parts["certificate"] + 1e-9, seed
        with monkeypatch.context() as patched:
            patched.setattr(packing_configs.Exhaustion, "bound", lambda self: np.inf)
            loose = ceiling(hosts, pods, gpus, pooled=True).parts["certificate"]
        assert bound.parts["certificate"] <= loose + 1e-9, seed
        tighter += bound.parts["certificate"] < loose - 1e-9
    assert tighter >= 12


def test_drop_split_bounds_every_policy_in_domains():
    """The drop argument alone against exhaustive search, on instances where it is what
    decides: 2 to 4 hosts with one or two GPUs, pooled, in two domains and one domain per
    host, pods that often dominate each other's CPU and memory. It must bite often and beat
    the certificate on some instances, or the check proves little."""
    biting = beating = 0
    for seed in range(300):
        rng = random.Random(seed)
        nh = rng.choice([2, 3, 4])
        cl = cluster(
            *[
                (rng.choice([2, 4, 8]), rng.choice([4, 8, 32]), rng.choice([1, 2]), "A")
                for _ in range(nh)
            ]
        )
        shapes = [(1, 810), (1, 650), (1, 550), (1, 1000), (1, 160), (1, 320), (1, 190)]
        shapes += [(0, 0), (2, 1000)]
        pods = []
        for _ in range(rng.choice([5, 6, 7, 8])):
            k, milli = rng.choice(shapes)
            cpu, mem = rng.choice([1000, 2000, 3000, 4000]), rng.choice([1, 2, 4]) * 1024
            pods.append(Pod(cpu, mem, k, milli))
        for domains in (np.zeros(nh), np.arange(nh) % 2, np.arange(nh)):
            domains = domains.astype(np.int64)
            pooled = not domains.any()
            hosts = Host(cl.cpu, cl.mem, cl.gpus, domains)
            bound = ceiling(hosts, pods, int(cl.gpus.sum()), pooled)
            best = best_any_policy(cl, domains, pods)
            assert best <= bound.parts["drop"] + 1e-9, (seed, domains.tolist())
            biting += bound.parts["drop"] < min(bound.arrived, int(cl.gpus.sum()) * FULL)
            beating += bound.parts["drop"] < bound.parts["certificate"]
    assert biting >= 150 and beating >= 60


def test_ceiling_a_drop_shuts_out_later_whole_gpu_pods():
    # two 2-core hosts with a GPU each, in two domains. The 2-core whole-GPU pod and the 160
    # fraction may exhaust both domains, so the certificate cannot force the 810 fraction
    # (it always lands on the 160's GPU, which the certificate does not count on). A run
    # that dropped it would have no host with 1 core and an unbound GPU from then on, so the
    # 3-core whole-GPU pod would fit nowhere: at most 2970 - 810 - 1000 = 1160. Every other
    # run places the 810 with a 190 gap that only the 160 can fill: 1970, the best there is.
    cl = cluster((2, 8, 1, "A"), (2, 8, 1, "A"))
    pods = [
        Pod(2000, 1024, 1, 1000),
        Pod(1000, 1024, 1, 160),
        Pod(1000, 1024, 1, 810),
        Pod(3000, 1024, 1, 1000),
    ]
    domains = np.array([0, 1])
    assert after_drop(pods) == {2: 2970 - 810 - 1000}
    bound = ceiling(Host(cl.cpu, cl.mem, cl.gpus, domains), pods, 2, pooled=False)
    assert bound.parts["certificate"] == 2000
    assert bound.milli == bound.parts["drop"] == pytest.approx(1970, abs=0.01)
    assert best_any_policy(cl, domains, pods) == 1970


def test_a_drop_shuts_out_later_fractions_as_big_asking_as_much_but_not_smaller_ones() -> None:
    # a host that could not take the 650 fraction has no unbound GPU near it and no shared
    # GPU with 650 free; rooms only shrink, so no later pod asking its cores, its memory and
    # at least 650 of a GPU fits there: a bigger fraction, the same share with more cores, a
    # whole GPU. A smaller fraction might fit a smaller room; one asking fewer cores, a host
    # that was short of cores.
    pods = [
        Pod(1000, 1024, 1, 650),
        Pod(1000, 1024, 1, 810),  # shut out by the 650
        Pod(1000, 1024, 1, 590),  # smaller: not
        Pod(500, 1024, 1, 810),  # fewer cores: not
        Pod(2000, 2048, 1, 650),  # as big, asking more: shut out
        Pod(1000, 1024, 2, 1000),  # whole GPUs: shut out
    ]
    total = 650 + 810 + 590 + 810 + 650 + 2000
    assert after_drop(pods) == {
        0: total - 650 - (810 + 650 + 2000),
        1: total - 810 - 2000,
        2: total - 590 - (650 + 2000),
        3: total - 810 - 2000,
        4: total - 650,
    }
    # a fraction above a third but not half a GPU closes the door alike; a third or less not
    thirds = [Pod(1000, 1024, 1, m) for m in (470, 480, 460, 320, 1000)]
    total = 470 + 480 + 460 + 320 + 1000
    assert after_drop(thirds) == {
        0: total - 470 - (480 + 1000),
        1: total - 480 - 1000,
        2: total - 460 - 1000,
    }


def test_drop_split_bisection_finds_the_worst_case():
    """drop_split bisects on where R (sorted) crosses the waste term (never rising); a scan
    over every case must agree."""
    for seed in range(60):
        rng = random.Random(seed)
        pods = []
        for _ in range(rng.randrange(5, 60)):
            k, milli = rng.choice(
                [(1, 810), (1, 650), (1, 1000), (1, 160), (1, 320), (1, 470), (4, 1000)]
            )
            pods.append(Pod(rng.choice([1000, 3000, 8000]), rng.choice([1, 8]) * 1024, k, milli))
        plus = [i for i, p in enumerate(pods) if p.k == 1 and 333 < p.milli < FULL]
        certified = [i for i in plus if rng.random() < 0.3]
        waste = waste_of(pods)
        capacity = rng.randrange(2, 20) * FULL
        got = drop_split(pods, certified, waste, capacity)
        scan = [plain for plain, _, _ in drop_cases(pods, certified, waste, capacity)]
        assert got == pytest.approx(max(scan)), seed
