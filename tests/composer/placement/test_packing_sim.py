"""The packing simulator of bench/bench_packing.py on tiny hand-made clusters.

Checks the fit rules (CPU, memory, GPU fractions sharing one GPU, whole GPUs, gpu_spec,
pooling within a switch domain and a shared GPU staying on its host), the fragmentation
measure, the details that make `fgd`, `bestfit` and `random` behave as the FGD authors'
simulator does (integer scores, ties to a fixed node rank, 95 % typical pods, the workload
and its sampling), the CPU:GPU balance term and FGD over a pool. The composable ceiling has
its own tests (test_packing_ceiling.py). Reads no trace: the clusters are written here.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from bench.packing_data import Pod, switch_domains, workload
from bench.packing_fixed import FixedSim, Fragmentation, k8s_score, stranded
from bench.packing_pool import PoolFgd, PoolFragment, PoolSim
from bench.packing_replay import simulate
from tests.composer.placement.packing_search import cluster


def fixed(cl, policy="bestfit", pods=(), seed=1, cpm=1.0):
    frag = Fragmentation(list(pods) or [Pod(1000, 1024, 1, 1000)], cl.models)
    return FixedSim(
        cl, policy, frag if policy.startswith("fgd") else None, random.Random(seed), cpm
    )


def pool(cl, policy="balance", domains=None):
    doms = np.zeros(len(cl.cpu), dtype=np.int64) if domains is None else domains
    return PoolSim(cl, doms, policy, cpm=4.0, ratio=8.0)


POLICIES = ["fgd", "fgd-stock", "fgd-bal", "bestfit", "random"]


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
    # the authors' tuning: the trace's pods shuffled first, then copies while within 130 %
    assert sorted(arriving[:2], key=lambda p: p.k) == pods
    assert 1.3 * 4000 - 2000 < sum(p.gpu for p in arriving) <= 1.3 * 4000
    assert arriving.count(pods[0]) >= 1 and arriving.count(pods[1]) >= 1
    run = simulate(cl, pods, "fixed", "bestfit", 42)
    assert set(run.samples) == {100, 130}
    assert 0 < run.samples[100] <= run.samples[130] <= 100.0


def test_workload_tunes_a_trace_above_the_target_down():
    pods = [Pod(1000, 1024, 1, 1000)] * 10
    arriving = workload(pods, 4000, seed=1)
    assert sum(p.gpu for p in arriving) == 5000  # 1.3 x 4000 = 5200: five of ten go


def test_k8s_score_is_the_authors_integer_sigmoid():
    assert k8s_score(np.array([0.0]))[0] == 50
    assert k8s_score(np.array([1.0]))[0] == 49  # any increase loses a point
    assert k8s_score(np.array([-1e9, 1e9])).tolist() == [100, 0]


@pytest.mark.parametrize("policy", ["fgd", "bestfit"])
def test_ties_go_to_the_lowest_ranked_node(policy):
    # identical empty nodes tie; the authors' patched selectHost keeps the smallest node
    # name, i.e. the lowest rank of a per-seed random permutation
    for first in (0, 3):
        sim = fixed(cluster(*[(32, 64, 2, "A")] * 4), policy)
        sim.rank = np.array([5, 6, 7, 8])
        sim.rank[first] = 0
        assert sim.place(Pod(1000, 1024, 1, 1000))
        assert sim.gfree.tolist().index(1000) == first


def test_fgd_stock_breaks_ties_at_random():
    chosen = set()
    for seed in range(8):
        sim = fixed(cluster(*[(32, 64, 2, "A")] * 8), "fgd-stock", seed=seed)
        assert sim.place(Pod(1000, 1024, 1, 1000))
        chosen.add(int(np.argmin(sim.gfree)))
    assert len(chosen) > 1


def test_fgd_takes_the_lowest_index_gpu_among_equal_scores():
    # on [600, 620] a 300 fraction leaves nothing below 300 either way: equal scores
    sim = fixed(cluster((32, 64, 2, "A")), "fgd", [Pod(1000, 1, 1, 300)])
    sim.commit(0, 0, Pod(0, 0, 1, 400))
    sim.commit(0, 1, Pod(0, 0, 1, 380))
    assert sim.place(Pod(1000, 1, 1, 300))
    assert sim.free.tolist() == [[300, 620]]


def test_typical_pods_keep_the_most_popular_shapes_up_to_95_percent():
    pods = [Pod(1000, 1, 1, 500)] * 96 + [Pod(2000, 1, 2, 1000)] * 3 + [Pod(3000, 1, 0, 0)]
    frag = Fragmentation(pods, ["A"])
    assert frag.p.tolist() == [1.0]
    assert len(Fragmentation(pods, ["A"], popularity=1.0).p) == 3


def test_cpu_only_types_see_every_free_gpu_milli_as_fragment():
    # as the authors' NodeGpuShareFragAmount: the XL ("CPU fits") class is summed too
    frag = Fragmentation([Pod(1000, 1, 0, 0), Pod(1000, 1, 1, 1000)], ["A"])
    f = frag(np.array([64000]), np.array([[1000, 1000]]), np.zeros(1, dtype=np.int64))
    assert f[0] == pytest.approx(0.5 * 2000)


def test_bestfit_scores_leftovers_against_the_largest_node_spec():
    # leftovers over the largest node spec (128 cores, 8 GPUs), as the authors' BestFit:
    # node 0 keeps 1 core and 1 GPU (0.5/128 + 0.5/8: score 93), node 1 keeps 31 cores and
    # no GPU (15.5/128: score 87), so node 0 wins; over each node's own capacity (1/2 + 1/2
    # against 31/32) node 1 would
    sim = fixed(cluster((2, 64, 2, "A"), (32, 64, 1, "A")))
    assert sim.place(Pod(1000, 1024, 1, 1000))
    assert sim.free.tolist() == [[0, 1000], [1000, 0]]


def test_random_takes_any_gpu_that_fits():
    used = set()
    for seed in range(10):
        sim = fixed(cluster((32, 64, 4, "A")), "random", seed=seed)
        assert sim.place(Pod(1000, 1024, 1, 100))
        used.add(int(np.argmin(sim.free[0])))
    assert len(used) > 1


def test_stranded_is_the_gpu_milli_the_free_cpu_cannot_feed():
    assert stranded(np.array([8000.0]), np.array([2000.0]), 2.0)[0] == 0.0
    assert stranded(np.array([2000.0]), np.array([2000.0]), 2.0)[0] == 1000.0
    assert stranded(np.array([-5.0]), np.array([300.0]), 2.0)[0] == 300.0


def test_fgd_bal_keeps_cpu_next_to_the_gpus():
    # the GPU type asks 1 core, so a 6-core CPU-only pod changes no fragment on either node
    # and fgd takes the lowest rank, node 0; but node 0 would keep 2 cores for 2 GPUs while
    # the trace's GPU pods ask 4 cores per GPU: fgd-bal sees 1500 milli stranded, takes node 1
    cl = cluster((8, 64, 2, "A"), (64, 64, 2, "A"))
    pods = [Pod(1000, 1, 0, 0), Pod(1000, 1, 1, 1000)]
    picks = {}
    for policy in ("fgd", "fgd-bal"):
        sim = fixed(cl, policy, pods, cpm=4.0)
        sim.rank = np.array([0, 1])
        assert sim.place(Pod(6000, 1, 0, 0))
        picks[policy] = int(np.argmin(sim.cpu - cl.cpu))
    assert picks == {"fgd": 0, "fgd-bal": 1}


def test_pool_fragment_counts_the_hosts_cpu():
    fr = PoolFragment([Pod(4000, 1, 1, 300), Pod(4000, 1, 1, 1000)])
    # 500 free on a host with CPU: the 300 type can use it, the whole-GPU type cannot
    assert fr.of(np.array([500]), np.array([8000]))[0] == pytest.approx(250)
    # ... without CPU for the 300 type, all of it is a fragment
    assert fr.of(np.array([500]), np.array([1000]))[0] == pytest.approx(500)


def test_pool_fgd_finishes_a_partly_used_gpu_on_a_host_with_cpu():
    cl = cluster((4, 64, 1, "A"), (16, 64, 1, "A"), (16, 64, 1, "A"))
    sim = PoolFgd(cl, np.zeros(3, dtype=np.int64), PoolFragment([Pod(2000, 1, 1, 500)] * 4))
    assert sim.place(Pod(2000, 1, 1, 500))
    assert sim.place(Pod(2000, 1, 1, 500))
    assert sorted(sim.gfree.tolist()) == [0, 1000, 1000]
    assert int(sim.cpu[sim.gbound[sim.gfree == 0][0]]) >= 0
