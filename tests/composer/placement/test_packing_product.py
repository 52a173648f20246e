"""The product's engine replaying the trace (bench/packing_product.py) on tiny hand-made
clusters: the trace -> snapshot and pod -> request mapping in each mode (fixed, 8-host
domains, all hosts), the fit rules as the product applies them, the replay against an
exhaustive search, and the replay's incremental snapshot against a rebuild. Reads no
trace. Fractions need the engine's shared GPUs: those tests are skipped until it has them."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from bench.packing_data import FULL, Cluster, Pod, Run, cluster_from_rows
from bench.packing_product import SHARES, ProductSim, fabric, requests
from bench.packing_replay import simulate
from bench.packing_report import best_policy, notes, verdict
from composer.placement.snapshot import Snapshot
from tests.composer.placement.packing_search import best_any_policy
from tests.composer.placement.test_incremental import same

needs_shares = pytest.mark.skipif(not SHARES, reason="the engine has no shared GPUs yet")


def same_but_departed(replayed: Snapshot, taken: Snapshot) -> None:
    """The replay's snapshot equals `taking`'s but for `departed`: what `taking` keeps for
    `returning`, where the replay hands devices back itself through `replacing`."""
    same(replayed, replace(taken, departed=replayed.departed))


def cluster(*nodes: tuple[int, int, int, str]) -> Cluster:
    """Nodes as (cores, memory GiB, GPUs, model)."""
    return cluster_from_rows(
        [
            {"cpu_milli": str(c * 1000), "memory_mib": str(m * 1024), "gpu": str(g), "model": mo}
            for c, m, g, mo in nodes
        ]
    )


def reach(snapshot: Snapshot) -> dict[str, set[str]]:
    return {h: set(r) for h, r in snapshot.reach.items()}


def test_fixed_each_node_is_a_host_with_its_own_enclosure_only_it_reaches() -> None:
    snapshot = fabric(cluster((8, 32, 2, "A"), (16, 64, 0, "A"), (4, 16, 1, "B")), "fixed")
    host = snapshot.hosts["node-0000"]
    # milli-cores and MiB: the trace's own units, so every fit stays exact
    assert (host.cores_free, host.memory_gib_free) == (8000, 32 * 1024)
    assert reach(snapshot) == {
        "node-0000": {"gpus-0000"},
        "node-0001": set(),
        "node-0002": {"gpus-0002"},
    }
    assert snapshot.by_model[("gpu", "A")] == {"gpus-0000": ("gpu-0000-0", "gpu-0000-1")}
    assert snapshot.by_model[("gpu", "B")] == {"gpus-0002": ("gpu-0002-0",)}
    assert len({h.switches for h in snapshot.hosts.values()}) == 3


def test_domain_hosts_reach_the_enclosures_of_their_8_host_domain() -> None:
    nodes = [(8, 32, 1, "A")] * 10 + [(8, 32, 2, "B")] * 2
    snapshot = fabric(cluster(*nodes), "domain")
    first = {f"gpus-{n:04d}" for n in range(8)}
    assert all(reach(snapshot)[f"node-{n:04d}"] == first for n in range(8))
    assert reach(snapshot)["node-0008"] == {"gpus-0008", "gpus-0009"}
    assert reach(snapshot)["node-0010"] == {"gpus-0010", "gpus-0011"}  # one model a domain
    switches = {snapshot.hosts[f"node-{n:04d}"].switches for n in range(8)}
    assert switches == {snapshot.enclosures["gpus-0000"].switches}


def test_all_every_host_reaches_every_enclosure() -> None:
    snapshot = fabric(cluster((8, 32, 1, "A"), (8, 32, 0, "A"), (8, 32, 2, "B")), "all")
    assert all(r == {"gpus-0000", "gpus-0002"} for r in reach(snapshot).values())


def test_a_pod_is_asked_as_cores_memory_and_gpus_of_one_model() -> None:
    models = ["A", "B", "C"]
    (cpu,) = requests(Pod(1500, 3000, 0, 0), models)
    assert (cpu.cores, cpu.host_memory_gib, cpu.items) == (1500, 3000, ())
    whole = requests(Pod(4000, 1024, 2, FULL), models)
    assert [(r.items[0].count, r.items[0].model) for r in whole] == [
        (2, None),
        (2, "A"),
        (2, "B"),
        (2, "C"),
    ]
    spec = requests(Pod(4000, 1024, 1, FULL, "C|A|X"), models)
    assert [r.items[0].model for r in spec] == ["C", "A"]  # the spec's order, known models
    assert requests(Pod(4000, 1024, 1, FULL, "X"), models) == []  # dropped: no such model
    assert requests(Pod(1, 1, 1, FULL), models, "pack")[0].policy == "pack"


def test_fixed_cpu_memory_and_gpus_must_fit_on_one_node() -> None:
    sim = ProductSim(cluster((8, 32, 2, "A"), (8, 32, 2, "A")), "fixed")
    assert not sim.place(Pod(9000, 1024, 0, 0))
    assert not sim.place(Pod(1000, 33 * 1024, 0, 0))
    assert not sim.place(Pod(1000, 1024, 3, FULL))  # 4 GPUs in all, but 2 per server
    assert sim.place(Pod(1000, 1024, 2, FULL))
    assert sim.place(Pod(1000, 1024, 2, FULL))
    assert not sim.place(Pod(1000, 1024, 1, FULL))
    assert sim.allocated == 4 * FULL


def test_domain_gpus_do_not_cross_domains_and_spec_limits_models() -> None:
    nodes = [(8, 32, 1, "A")] * 8 + [(64, 32, 0, "B")] + [(8, 32, 2, "B")]
    sim = ProductSim(cluster(*nodes), "domain")
    # the big CPU-only host sits in B's domain; an A pod asking its CPU finds no A GPUs there
    assert not sim.place(Pod(32000, 1024, 1, FULL, "A"))
    assert sim.place(Pod(32000, 1024, 2, FULL, "B"))
    assert sim.place(Pod(4000, 1024, 8, FULL))  # the 8 A GPUs of the first domain, one host
    assert not sim.place(Pod(1000, 1024, 1, FULL))
    assert sim.allocated == 10 * FULL


def test_all_a_pods_gpus_are_of_one_model() -> None:
    sim = ProductSim(cluster((8, 32, 1, "A"), (8, 32, 1, "B")), "all")
    assert not sim.place(Pod(1000, 1024, 2, FULL))  # one A and one B: not one model
    assert sim.place(Pod(1000, 1024, 1, FULL, "B"))
    host, device = next(iter(sim.snapshot.hosts)), sim.snapshot.devices
    assert host and list(device) == ["gpu-0000-0"]


def test_the_replays_snapshot_is_the_rebuilt_one() -> None:
    cl = cluster((8, 32, 2, "A"), (16, 64, 4, "A"), (4, 16, 1, "B"), (32, 64, 0, "A"))
    pods = [Pod(1000, 1024, 1, FULL), Pod(2500, 2048, 2, FULL), Pod(700, 512, 0, 0)]
    for mode in ("fixed", "domain", "all"):
        sim = ProductSim(cl, mode)
        taken: list[str] = []
        cores: dict[str, int] = {}
        memory: dict[str, int] = {}
        for pod in pods * 2:
            before = set(sim.snapshot.devices)
            if sim.place(pod):
                taken += before - set(sim.snapshot.devices)
                host = next(
                    h for h in sim.snapshot.hosts.values()
                    if h.cores_free != fabric(cl, mode).hosts[h.id].cores_free - cores.get(h.id, 0)
                )  # fmt: skip
                cores[host.id] = cores.get(host.id, 0) + pod.cpu
                memory[host.id] = memory.get(host.id, 0) + pod.mem
        rebuilt = fabric(cl, mode).taking(devices=taken, cores=cores, host_memory_gib=memory)
        same_but_departed(sim.snapshot, rebuilt)


# A slice of the default trace's whole-GPU and CPU-only shapes on three hosts, checked by
# hand: the 2-GPU pod must not land on the 2-GPU server (fixed) or must leave 2 GPUs for
# the last pod; the product takes every GPU, as the exhaustive search does.
SLICE = [
    Pod(6000, 12 * 1024, 1, FULL),
    Pod(8000, 30 * 1024, 0, 0),
    Pod(12000, 16 * 1024, 2, FULL),
    Pod(4000, 8 * 1024, 1, FULL),
]


@pytest.mark.parametrize("mode", ["fixed", "domain", "all"])
def test_the_product_on_a_hand_checked_slice_matches_the_exhaustive_search(mode: str) -> None:
    cl = cluster((16, 64, 2, "A"), (32, 128, 2, "A"), (8, 32, 0, "A"))
    sim = ProductSim(cl, mode)
    for pod in SLICE:
        sim.place(pod)
    if mode == "fixed":  # the exhaustive search below pools GPUs; fixed: two servers, by hand
        assert sim.allocated == 4 * FULL
        return
    domains = np.zeros(3, dtype=np.int64)
    assert sim.allocated == best_any_policy(cl, domains, SLICE) == 4 * FULL


def feasible(cl: Cluster, mode: str, cpu: list[int], mem: list[int], free: list[list[int]],
             pod: Pod) -> bool:  # fmt: skip
    """Whether `pod` fits anywhere, by trying every host (GPUs of one model)."""
    for h in range(len(cpu)):
        if cpu[h] < pod.cpu or mem[h] < pod.mem:
            continue
        if not pod.k:
            return True
        near = [h] if mode == "fixed" else range(len(cpu))
        for model in set(cl.model.tolist()):
            if sum(len(free[n]) for n in near if cl.model[n] == model) >= pod.k:
                return True
    return False


@pytest.mark.parametrize("mode", ["fixed", "all"])
def test_the_product_drops_a_pod_only_when_nothing_fits(mode: str) -> None:
    for seed in range(25):
        rng = random.Random(seed)
        nodes = [
            (rng.choice([4, 8, 16]), rng.choice([8, 32]), rng.choice([0, 1, 2, 4]),
             rng.choice("AB"))
            for _ in range(rng.randint(2, 4))
        ]  # fmt: skip
        cl = cluster(*nodes)
        sim = ProductSim(cl, mode)
        cpu, mem = list(cl.cpu), list(cl.mem)
        free = [list(range(int(g))) for g in cl.gpus]
        for _ in range(10):
            k = rng.choice([0, 1, 1, 2, 4])
            pod = Pod(rng.choice([1000, 2500, 6000]), rng.choice([1, 4, 16]) * 1024, k,
                      FULL if k else 0, rng.choice(["", "", "A", "A|B"]) if k else "")  # fmt: skip
            if pod.spec:
                allowed = set(pod.spec.split("|"))
                fits = feasible_spec(cl, mode, cpu, mem, free, pod, allowed)
            else:
                fits = feasible(cl, mode, cpu, mem, free, pod)
            before = dict(sim.snapshot.hosts)
            assert sim.place(pod) == fits, (seed, pod)
            if not fits:
                continue
            (h,) = [int(i[5:]) for i, x in sim.snapshot.hosts.items() if x != before[i]]
            cpu[h] -= pod.cpu
            mem[h] -= pod.mem
            for n in range(len(free)):
                free[n] = [g for g in free[n] if f"gpu-{n:04d}-{g}" in sim.snapshot.devices]


def feasible_spec(cl: Cluster, mode: str, cpu: list[int], mem: list[int],
                  free: list[list[int]], pod: Pod, allowed: set[str]) -> bool:  # fmt: skip
    kept = [g if cl.models[int(cl.model[n])] in allowed else [] for n, g in enumerate(free)]
    return feasible(cl, mode, cpu, mem, kept, pod)


def test_simulate_runs_the_product_and_counts_what_it_could_not_ask() -> None:
    cl = cluster((16, 64, 2, "A"), (32, 128, 2, "A"))
    pods = [Pod(2000, 1024, 1, FULL), Pod(1000, 1024, 1, 500), Pod(2000, 1024, 2, FULL)]
    run = simulate(cl, pods, "all", "composer", 42)
    assert set(run.samples) == {100, 130}
    assert (run.skipped > 0) == (not SHARES)


@needs_shares
def test_fractions_share_one_gpu_bound_to_one_host() -> None:
    sim = ProductSim(cluster((32, 64, 1, "A"), (32, 64, 0, "A")), "all")
    assert sim.place(Pod(1000, 1024, 1, 600))
    assert sim.place(Pod(1000, 1024, 1, 400))
    assert sim.allocated == FULL
    assert not sim.place(Pod(1000, 1024, 1, 100))


@needs_shares
@pytest.mark.parametrize("mode", ["fixed", "domain", "all"])
def test_the_replays_shared_gpus_are_what_taking_them_gives(mode: str) -> None:
    cl = cluster((8, 32, 2, "A"), (16, 64, 1, "A"), (32, 64, 0, "A"))
    pods = [Pod(1000, 1024, 1, 600), Pod(1000, 1024, 1, 300), Pod(500, 512, 1, 500)]
    pods += [Pod(2000, 1024, 1, FULL), Pod(1000, 1024, 1, 100)]
    sim = ProductSim(cl, mode)
    shares: dict[str, tuple[str, int]] = {}
    taken: list[str] = []
    cores: dict[str, int] = {}
    memory: dict[str, int] = {}
    for pod in pods:
        request = requests(pod, cl.models)[0]
        plan = sim.decide([request])
        if plan is None:
            continue
        sim.take(pod, plan)
        cores[plan.host] = cores.get(plan.host, 0) + pod.cpu
        memory[plan.host] = memory.get(plan.host, 0) + pod.mem
        for pick in plan.devices:
            share = getattr(pick, "share", None)
            if share is None:
                taken.append(pick.device)
            else:
                held = shares.get(pick.device, (plan.host, 0))[1]
                shares[pick.device] = (plan.host, held + share)
    # passed as a mapping: `shares` is not a parameter of `taking` until the engine shares GPUs
    extra: dict[str, Any] = {"shares": shares}
    rebuilt = fabric(cl, mode).taking(devices=taken, cores=cores, host_memory_gib=memory, **extra)
    same_but_departed(sim.snapshot, rebuilt)


def test_a_run_without_fractions_is_never_reported_as_the_protocols_figure() -> None:
    partial = Run(samples={100: 60.0, 130: 97.0}, skipped=5)
    text, ok = verdict({("default", "all", "composer"): [(42, partial)]}, {})
    assert not ok
    assert "not the protocol's figure" in text and "best" not in text
    whole = Run(samples={100: 60.0, 130: 97.0})
    text, ok = verdict({("default", "all", "composer"): [(42, whole)]}, {})
    assert "96.5 % — met" in text


def test_the_reading_names_the_best_policy_of_a_mode_the_product_among_them() -> None:
    """The best of a mode is the highest mean over the whole protocol; a product run that
    could not ask for fractions never is. The reading quotes it and the product's targets
    from the results and the targets, never typed."""

    def runs(x: float, skipped: int = 0) -> list[tuple[int, Run]]:
        return [(42, Run(samples={100: x, 130: x}, skipped=skipped))]

    results = {
        ("default", "domain", "composer"): runs(95.9),
        ("default", "domain", "fgd-bal"): runs(95.8),
        ("default", "all", "composer"): runs(99.0, skipped=3),
        ("default", "all", "fgd-bal"): runs(95.7),
    }
    assert best_policy(results, "default", "domain") == "composer"
    assert best_policy(results, "default", "all") == "fgd-bal"
    assert best_policy(results, "cpu250", "all") is None
    product = next(line for line in notes(results, {}) if "product's engine" in line)
    assert "(the best: 95.90 % (`composer`) and 95.70 % (`fgd-bal`))" in product
    assert "(96.5 % in domains, 96.5 % pooled)" in product


def test_the_reading_says_whether_a_policy_reaches_the_targets_and_what_the_ceiling_allows() -> (
    None
):
    """Whether the composable targets are reached, and whether the ceilings rule them out
    (the mean of the seeds' ceilings against the target), come from the figures."""

    def runs(*xs: float) -> list[tuple[int, Run]]:
        return [(42 + i, Run(samples={100: x, 130: x})) for i, x in enumerate(xs)]

    results = {
        ("default", "domain", "composer"): runs(96.6),
        ("default", "all", "composer"): runs(95.8),
    }
    ceilings = {("default", "all"): [(42, 96.2), (43, 96.4)], ("default", "domain"): [(42, 97.1)]}
    lines = notes(results, ceilings)
    product = next(line for line in lines if "product's engine" in line)
    assert "pooled) are reached here in 8-host domains (the best:" in product
    ceiling = next(line for line in lines if line.startswith("- The ceiling."))
    assert (
        "pooled, the ceiling rules out the target of 96.5 % (it is 0.20 points under it)" in ceiling
    )
    assert (
        "in domains, the ceiling does not rule out the target of 96.5 % (it is 0.60 points "
        "above it)" in ceiling
    )
    none = notes({("default", "all", "composer"): runs(95.8)}, {})
    assert "are reached by no policy here" in next(x for x in none if "product's engine" in x)
    assert "no ceiling was computed" in next(x for x in none if x.startswith("- The ceiling."))
