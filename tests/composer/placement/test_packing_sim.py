"""The packing simulator of bench/bench_packing.py on tiny hand-made clusters.

Checks the fit rules (CPU, memory, GPU fractions sharing one GPU, whole GPUs, gpu_spec,
pooling within a switch domain and a shared GPU staying on its host) and the fragmentation
measure. Reads nothing from ../shared: the clusters are written here.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from bench.bench_packing import (
    FixedSim,
    Fragmentation,
    Pod,
    PoolSim,
    cluster_from_rows,
    simulate,
    switch_domains,
    workload,
)


def cluster(*nodes: tuple[int, int, int, str]):
    """Nodes as (cores, memory GiB, GPUs, model)."""
    return cluster_from_rows(
        [
            {"cpu_milli": str(c * 1000), "memory_mib": str(m * 1024), "gpu": str(g), "model": mo}
            for c, m, g, mo in nodes
        ]
    )


def fixed(cl, policy="bestfit", pods=()):
    frag = Fragmentation(list(pods) or [Pod(1000, 1024, 1, 1000)], cl.models)
    return FixedSim(cl, policy, frag if policy.startswith("fgd") else None, random.Random(1))


def pool(cl, policy="balance", domains=None):
    doms = np.zeros(len(cl.cpu), dtype=np.int64) if domains is None else domains
    return PoolSim(cl, doms, policy, cpm=4.0, ratio=8.0)


POLICIES = ["fgd", "fgd-bf", "fgd-bal", "bestfit", "random"]


@pytest.mark.parametrize("policy", POLICIES)
def test_fixed_cpu_and_memory_must_fit_on_the_node(policy):
    sim = fixed(cluster((8, 32, 1, "A")), policy)
    assert not sim.place(Pod(9000, 1024, 0, 0))
    assert not sim.place(Pod(1000, 33 * 1024, 0, 0))
    assert sim.place(Pod(8000, 32 * 1024, 0, 0))
    assert not sim.place(Pod(1, 0, 0, 0))  # no CPU left
    assert sim.allocated == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_fixed_fractions_share_one_gpu_up_to_1000_milli(policy):
    sim = fixed(cluster((32, 64, 1, "A")), policy)
    assert sim.place(Pod(1000, 1024, 1, 600))
    assert sim.place(Pod(1000, 1024, 1, 400))
    assert sim.allocated == 1000
    assert not sim.place(Pod(1000, 1024, 1, 100))
    assert sim.free.tolist() == [[0]]


@pytest.mark.parametrize("policy", POLICIES)
def test_fixed_whole_gpus_need_untouched_gpus_on_one_node(policy):
    sim = fixed(cluster((32, 64, 2, "A")), policy)
    assert sim.place(Pod(1000, 1024, 1, 500))
    assert not sim.place(Pod(1000, 1024, 2, 1000))  # one of the two GPUs is broken
    assert sim.place(Pod(1000, 1024, 1, 1000))  # the untouched one, whole
    assert sim.free.tolist() == [[500, 0]] or sim.free.tolist() == [[0, 500]]


@pytest.mark.parametrize("policy", POLICIES)
def test_fixed_gpu_spec_limits_models(policy):
    sim = fixed(cluster((32, 64, 1, "A"), (32, 64, 1, "B")), policy)
    assert sim.place(Pod(1000, 1024, 1, 1000, "B"))
    assert sim.free[1].tolist() == [0] and sim.free[0].tolist() == [1000]
    assert not sim.place(Pod(1000, 1024, 1, 1000, "B"))
    assert sim.place(Pod(1000, 1024, 1, 1000, "A|C"))
    assert not sim.place(Pod(1000, 1024, 1, 200, "C"))


def test_fixed_two_gpu_pod_does_not_span_servers():
    sim = fixed(cluster((32, 64, 1, "A"), (32, 64, 1, "A")))
    assert not sim.place(Pod(1000, 1024, 2, 1000))


def test_pool_binds_gpus_of_the_domain_to_one_host():
    cl = cluster((32, 64, 1, "A"), (32, 64, 1, "A"))
    for policy in ("balance", "bestfit"):
        sim = pool(cl, policy)
        assert sim.place(Pod(1000, 1024, 2, 1000))  # both GPUs, one host
        assert sorted(sim.gbound.tolist()) in ([0, 0], [1, 1])
        assert sim.allocated == 2000
        assert not sim.place(Pod(1000, 1024, 1, 100))


def test_pool_does_not_cross_switch_domains():
    cl = cluster(*[(32, 64, 1, "A")] * 9)
    domains = switch_domains(cl)
    assert domains.tolist() == [0] * 8 + [1]
    sim = pool(cl, domains=domains)
    assert sim.place(Pod(1000, 1024, 8, 1000))
    assert not sim.place(Pod(1000, 1024, 2, 1000))  # one GPU left, in domain 1
    assert sim.place(Pod(1000, 1024, 1, 1000))
    assert int(sim.dom[sim.gbound[-1]]) == 1


def test_switch_domains_keep_one_model():
    cl = cluster((8, 8, 1, "A"), (8, 8, 1, "B"), (8, 8, 1, "A"))
    domains = switch_domains(cl)
    assert domains[0] == domains[2] != domains[1]


def test_pool_shared_gpu_stays_on_its_host():
    # host 0: 2 cores; host 1: 32 cores; one GPU each, one domain
    cl = cluster((2, 64, 1, "A"), (32, 64, 1, "A"))
    sim = pool(cl, "bestfit")
    assert sim.place(Pod(2000, 1024, 1, 500))  # best fit on CPU: host 0, opens a GPU
    g = int(np.nonzero(sim.gbound == 0)[0][0])
    assert sim.gfree[g] == 500
    # host 0 has no CPU left, so the half GPU is stranded: the next fraction opens the other
    assert sim.place(Pod(1000, 1024, 1, 500))
    assert sim.gfree[g] == 500 and (sim.gbound == 1).sum() == 1
    assert not sim.place(Pod(1000, 1024, 1, 600))
    assert sim.place(Pod(1000, 1024, 1, 500))  # finishes host 1's GPU
    assert sim.allocated == 1500


def test_pool_memory_and_spec_rules():
    cl = cluster((32, 4, 1, "A"), (32, 64, 1, "B"))
    sim = pool(cl)
    assert not sim.place(Pod(1000, 65 * 1024, 0, 0))
    assert sim.place(Pod(1000, 8 * 1024, 1, 1000, "A"))  # host 1 (memory), GPU of model A
    g = int(np.nonzero(sim.gbound >= 0)[0][0])
    assert int(sim.gbound[g]) == 1 and cl.models[sim.gmodel[g]] == "A"
    assert not sim.place(Pod(1000, 1024, 1, 1000, "A"))


def test_balance_reserves_cpu_for_a_partly_used_gpu():
    # both hosts fit the fraction; balance keeps the rest of the GPU finishable
    cl = cluster((4, 64, 1, "A"), (16, 64, 1, "A"))
    sim = pool(cl, "balance")  # cpm 4 milli CPU per GPU milli: 500 milli need 2 cores
    assert sim.place(Pod(3000, 1024, 1, 500))
    assert int(sim.gbound[sim.gfree == 500][0]) == 1
    assert sim.place(Pod(2000, 1024, 1, 500))  # onto the same GPU, not a fresh one
    assert sorted(sim.gfree.tolist()) == [0, 1000]


def test_fragmentation_of_hand_states():
    frag = Fragmentation([Pod(1000, 1, 1, 500), Pod(1000, 1, 1, 500), Pod(2000, 1, 2, 1000)], ["A"])
    free = np.array([[1000, 300], [1000, 1000], [0, 0]])
    cpu = np.array([4000, 4000, 4000])
    f = frag(cpu, free, np.zeros(3, dtype=np.int64))
    # [1000, 300]: the 500-type sees 300 stranded; the 2-GPU type cannot run: 1300
    assert f[0] == pytest.approx(2 / 3 * 300 + 1 / 3 * 1300)
    assert f[1] == pytest.approx(0)
    assert f[2] == pytest.approx(0)
    # no CPU: everything free is a fragment for every type
    g = frag(np.array([0]), np.array([[1000, 1000]]), np.zeros(1, dtype=np.int64))
    assert g[0] == pytest.approx(2000)


def test_fgd_prefers_the_placement_that_fragments_least():
    # a 500 fraction: on the half-used GPU of node 0 it leaves nothing; on node 1 it breaks a
    # whole GPU that 2-GPU pods need
    pods = [Pod(1000, 1, 1, 500), Pod(1000, 1, 2, 1000)]
    sim = fixed(cluster((32, 64, 2, "A"), (32, 64, 2, "A")), "fgd", pods)
    sim.commit(0, 0, Pod(1000, 1, 1, 500))
    assert sim.place(Pod(1000, 1, 1, 500))
    assert sim.free.tolist() == [[0, 1000], [1000, 1000]]


def test_workload_and_samples_follow_the_protocol():
    cl = cluster((64, 256, 4, "A"))
    pods = [Pod(1000, 1024, 1, 500), Pod(2000, 1024, 2, 1000)]
    arriving = workload(pods, 4000, seed=42)
    assert sum(p.gpu for p in arriving) >= 1.3 * 4000
    assert arriving.count(pods[0]) >= 1 and arriving.count(pods[1]) >= 1
    run = simulate(cl, pods, "fixed", "bestfit", 42)
    assert set(run.samples) == {100, 130}
    assert 0 < run.samples[100] <= run.samples[130] <= 100.0
