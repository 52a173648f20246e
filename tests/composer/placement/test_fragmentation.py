"""The default policy's host ranking (composer.placement.fragmentation): GPUs stranded
without cores and fragmented for the expected requests, on tiny hand-made fabrics."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from composer.placement.engine import place
from composer.placement.fragmentation import (
    Measure,
    Ranker,
    _others_most,
    applies,
    effect,
    ranked,
)
from composer.placement.request import DeviceItem, Placement, PlacementRequest
from composer.placement.snapshot import DeviceInfo, EnclosureInfo, HostInfo, Reach, Snapshot
from composer.placement.workload import WorkloadShape, from_specs, shapes

ONE_GPU = (WorkloadShape(8, 1),)  # the requests expected: 8 cores and one GPU


def servers(
    cores: dict[str, int],
    gpus: dict[str, int],
    shared: dict[str, tuple[int, ...]] | None = None,
    workload: tuple[WorkloadShape, ...] = ONE_GPU,
) -> Snapshot:
    """Fixed-ratio servers: host `h` reaches only its own enclosure of `gpus[h]` free GPUs
    (and the partly shared GPUs `shared[h]`, bound to it, with those shares free)."""
    shared = shared or {}
    hosts = [
        HostInfo(f"host:{h}", h, c, 512, c, 1000.0, 0.0, (f"sw-{h}",)) for h, c in cores.items()
    ]
    enclosures = [
        EnclosureInfo(f"enc:{h}", f"enc-{h}", (f"sw-{h}",), device_total=8) for h in cores
    ]
    devices = [
        DeviceInfo(f"gpu:{h}-{i}", f"{h}-{i}", "gpu", "H100", f"enc:{h}")
        for h, n in gpus.items()
        for i in range(n)
    ]
    devices += [
        DeviceInfo(
            f"gpu:{h}-s{i}",
            f"{h}-s{i}",
            "gpu",
            "H100",
            f"enc:{h}",
            shares_free=free,
            shared_host=f"host:{h}",
        )
        for h, frees in shared.items()
        for i, free in enumerate(frees)
    ]
    path = Reach(600, 32.0, 1)
    reach = {f"host:{h}": {f"enc:{h}": path} for h in cores}
    return Snapshot.build(
        hosts=hosts, enclosures=enclosures, devices=devices, reach=reach, workload=workload
    )


def placed(request: PlacementRequest, snapshot: Snapshot) -> Placement:
    outcome = place(request, snapshot)
    assert isinstance(outcome, Placement), outcome
    return outcome


def test_cores_go_where_taking_them_strands_no_gpus() -> None:
    """Spreading would take b's cores (the most free) and leave 2 of its GPUs without the
    8 cores each that the expected requests come with; a has no GPUs to strand."""
    snapshot = servers({"a": 32, "b": 64}, {"b": 8})
    request = PlacementRequest(cores=16)
    a, b = (effect(request, snapshot, snapshot.hosts[h]) for h in ("host:a", "host:b"))
    assert (a.stranded_after, b.stranded, b.stranded_after) == (0, 0, 2000)
    assert a.penalty < b.penalty
    assert placed(request, snapshot).host == "host:a"
    spread = placed(replace(request, policy="enclosure"), snapshot)
    assert spread.host == "host:b"  # a spreading policy keeps its meaning


def test_gpus_go_where_the_cores_left_still_feed_the_rest() -> None:
    """Two GPUs with their 16 cores: on a (40 cores, 4 GPUs) 24 cores feed the 2 left; on b
    (20 cores, 4 GPUs) 4 cores would be left for 2 GPUs."""
    snapshot = servers({"a": 40, "b": 20}, {"a": 4, "b": 4})
    request = PlacementRequest(cores=16, items=(DeviceItem("gpu", 2),))
    assert placed(request, snapshot).host == "host:a"


def test_a_partly_used_gpu_is_a_fragment_for_the_shares_it_cannot_hold() -> None:
    halves = Measure((WorkloadShape(4, 1, 500),), 1000, 0.0)
    fifths = Measure((WorkloadShape(4, 1, 200),), 1000, 0.0)
    both = Measure((WorkloadShape(4, 1, 500), WorkloadShape(4, 1, 200)), 1000, 0.0)
    # 300 free on a shared GPU and no whole one: no half fits, all of it is lost to them.
    assert halves.fragment((8, 8, 0, (300,))) == 300
    assert fifths.fragment((8, 8, 0, (300,))) == 0
    # A whole GPU takes the halves; the 300 are still too small for them.
    assert both.fragment((8, 8, 1, (300,))) == pytest.approx(150)
    # Without the cores, nothing is usable: all of the free GPU capacity is lost.
    assert both.fragment((2, 2, 1, (300,))) == 1300


def test_a_share_completes_a_partly_used_gpu_before_breaking_a_whole_one() -> None:
    snapshot = servers({"a": 64, "b": 64}, {"a": 4, "b": 4}, shared={"b": (500,)})
    request = PlacementRequest(cores=4, items=(DeviceItem("gpu", 1, share=500),))
    plan = placed(request, snapshot)
    assert plan.host == "host:b"
    assert [p.device for p in plan.devices] == ["gpu:b-s0"]


def test_with_no_workload_known_the_request_and_the_fabric_ratio_are_kept() -> None:
    snapshot = servers({"a": 32, "b": 64}, {"b": 8}, workload=())
    assert placed(PlacementRequest(cores=16), snapshot).host == "host:a"


def test_the_explanation_says_what_is_stranded_for_operator_and_tenant() -> None:
    snapshot = servers({"a": 32, "b": 64}, {"b": 8})
    plan = placed(PlacementRequest(cores=16, host="host:b"), snapshot)
    operator = " ".join(n.text(operator=True) for n in plan.explanation)
    tenant = " ".join(n.text(operator=False) for n in plan.explanation)
    assert "2 GPUs in its reach would have no cores to feed them" in operator
    assert "2 GPUs in its reach would have no cores to feed them" in tenant
    assert "host penalty" in operator and "host penalty" not in tenant
    chosen = placed(PlacementRequest(cores=16), snapshot)
    operator = " ".join(n.text(operator=True) for n in chosen.explanation)
    tenant = " ".join(n.text(operator=False) for n in chosen.explanation)
    assert "Leaves the least stranded and fragmented: no GPUs in its reach" in operator
    assert "Chosen to leave the fewest GPUs stranded or fragmented" in tenant


def test_the_typical_shapes_cover_most_requests_weighted_by_frequency() -> None:
    asked = [(8, 1, None, None)] * 6 + [(4, 1, 500, None)] * 3 + [(64, 8, None, None)]
    typical = shapes(asked, coverage=0.9)
    assert [(s.cores, s.gpus, s.share) for s in typical] == [(8, 1, None), (4, 1, 500)]
    assert [s.weight for s in typical] == pytest.approx([6 / 9, 3 / 9])


def test_live_compositions_give_the_expected_shapes() -> None:
    gpu = {"kind": "gpu", "count": 2, "model": "H100"}
    specs = [{"cores": 16, "items": [gpu]}] * 3 + [{"cores": 4, "items": []}]
    typical = from_specs(specs)
    assert [(s.cores, s.gpus, s.share, s.model) for s in typical] == [
        (16, 2, None, "H100"),
        (4, 0, None, None),
    ]
    assert [s.weight for s in typical] == pytest.approx([0.75, 0.25])


def test_plain_hosts_never_take_the_penalty_of_a_host_sharing_a_gpu() -> None:
    # One reach group: p0 holds a GPU shared with 600/1000 free, where a 500 share fits
    # without breaking a whole GPU; p1 and p2 would break one. Ranked, the plain hosts carry
    # their own penalty, not p0's: lent p0's, they tied with it and whole GPUs were broken
    # (the pooled trace replay fell from about 95 % to 91 % at 130 % arrived).
    cores = {"p0": 4, "p1": 12, "p2": 16, "p3": 64}
    hosts = [HostInfo(f"host:{h}", h, c, 512, 64, 1000.0, 0.0, ("sw",)) for h, c in cores.items()]
    devices = [DeviceInfo(f"gpu:{i}", f"g{i}", "gpu", "H100", "enc") for i in range(4)]
    devices.append(
        DeviceInfo("gpu:s", "gs", "gpu", "H100", "enc", shares_free=600, shared_host="host:p0")
    )
    snapshot = Snapshot.build(
        hosts=hosts,
        enclosures=[EnclosureInfo("enc", "enc", ("sw",), device_total=8)],
        devices=devices,
        reach={f"host:{h}": {"enc": Reach(600, 32.0, 1)} for h in cores},
        workload=(WorkloadShape(8, 1), WorkloadShape(4, 0, 500)),
    )
    request = PlacementRequest(cores=4, items=(DeviceItem("gpu", 1, share=500),))
    own = {h: effect(request, snapshot, snapshot.hosts[h]).penalty for h in snapshot.hosts}
    assert own["host:p0"] < own["host:p1"] == own["host:p2"]
    heads = ["host:p0", "host:p1", "host:p2"]
    assert [(p, h) for p, _, _, h in ranked(request, snapshot, [(0, heads)], {})] == [
        (own[h], h) for h in heads
    ]


def test_the_policy_registry_says_which_policies_rank_by_the_measure() -> None:
    assert applies(PlacementRequest(cores=1))  # the default, "none"
    assert not any(applies(PlacementRequest(cores=1, policy=p)) for p in ("pack", "switch"))


def pooled(
    cores: list[int],
    gpus: int,
    workload: tuple[WorkloadShape, ...] = ONE_GPU,
    shared: tuple[int, ...] = (),
) -> Snapshot:
    """Hosts with `cores` free that all reach one chassis of `gpus` free GPUs: one reach
    group, whose free cores are the sum of its hosts'; the first host holds GPUs partly
    shared with `shared` shares free."""
    hosts = [
        HostInfo(f"host:{i}", f"h{i}", c, 512, c, 1000.0, 0.0, ("sw",)) for i, c in enumerate(cores)
    ]
    chassis = EnclosureInfo("enc:pool", "pool", ("sw",), device_total=16)
    devices = [DeviceInfo(f"gpu:{i}", f"g{i}", "gpu", "H100", "enc:pool") for i in range(gpus)]
    devices += [
        DeviceInfo(
            f"gpu:s{i}", f"s{i}", "gpu", "H100", "enc:pool", shares_free=free, shared_host="host:0"
        )
        for i, free in enumerate(shared)
    ]
    path = Reach(600, 32.0, 1)
    reach = {h.id: {"enc:pool": path} for h in hosts}
    return Snapshot.build(
        hosts=hosts, enclosures=[chassis], devices=devices, reach=reach, workload=workload
    )


def test_the_memoised_verdict_on_a_plain_host_is_the_one_worked_out_afresh() -> None:
    """Hosts without partly shared GPUs share memoised verdicts by the group state they
    read (`Measure.plain`, kept across decisions and snapshots): across many states and
    request shapes, each one equals the verdict worked out from scratch."""
    rng = random.Random(3)
    # Shapes of several core counts, so that what a host's free cores do for each matters.
    mixes = (ONE_GPU, (WorkloadShape(4, 1), WorkloadShape(28, 2), WorkloadShape(48, 4, None)))
    # Two groups alike in all but the most free cores before: 32 + 8 and 24 + 16 cores, 16
    # asked on the first host, 16 left most after either way. A shape of 28 cores can use
    # the first group's GPUs before and not the second's.
    # Two more alike in all but the shares free on the first host's shared GPU: the
    # other hosts are plain, and their verdict reads the group's free shares (18 cores
    # feed 2.25 GPUs at 8 each: 2.2 GPUs free strand none, 2.9 strand 0.65).
    cases: list[tuple[list[int], int, tuple[WorkloadShape, ...], int, int, tuple[int, ...]]] = [
        ([32, 8], 4, mixes[1], 16, 1, ()),
        ([24, 16], 4, mixes[1], 16, 1, ()),
        ([0, 9, 9], 2, ONE_GPU, 8, 1, (200,)),
        ([0, 9, 9], 2, ONE_GPU, 8, 1, (900,)),
    ]
    for _ in range(400):
        cases.append(
            (
                [rng.choice((0, 4, 8, 16, 24, 32, 64)) for _ in range(rng.randint(1, 4))],
                rng.randint(0, 16),
                rng.choice(mixes),
                rng.choice((0, 4, 8, 16)),
                rng.randint(1, 4),
                rng.choice(((), (), (100,), (500, 700))),
            )
        )
    for cores, gpus, mix, asked, count, shared in cases:
        snapshot = pooled(cores, gpus, mix, shared)
        request = PlacementRequest(items=(DeviceItem("gpu", count),), cores=asked)
        ranker = Ranker(request, snapshot)
        for host in snapshot.hosts.values():
            if host.id in snapshot.shared_on:
                continue  # not a plain host: never memoised
            group = snapshot.host_group[host.id]
            others = _others_most(snapshot.group_cores_sorted[group], host.cores_free)
            fresh = ranker._measured(
                host, others, snapshot.group_gpus[group], (), host.cores_free - request.cores
            )
            assert ranker.effect(host) == fresh


def test_the_stranded_gpus_of_a_group_count_the_shares_free_on_any_of_its_hosts() -> None:
    """h0 holds a GPU shared with 800/1000 free; h1 holds none. Both reach one chassis with
    one whole free GPU, so the group has 1.8 GPUs free and 20 cores, enough for 2.5 at the
    expected 8 cores per GPU. Taking 8 of h1's cores leaves 12, for 1.5: 0.3 GPU stranded,
    though h1 holds no share (counted once only from h0's own shares, it was none)."""
    cores = {"h0": 4, "h1": 16}
    hosts = [HostInfo(f"host:{h}", h, c, 512, 64, 1000.0, 0.0, ("sw",)) for h, c in cores.items()]
    devices = [
        DeviceInfo("gpu:0", "g0", "gpu", "H100", "enc"),
        DeviceInfo("gpu:s", "gs", "gpu", "H100", "enc", shares_free=800, shared_host="host:h0"),
    ]
    snapshot = Snapshot.build(
        hosts=hosts,
        enclosures=[EnclosureInfo("enc", "enc", ("sw",), device_total=8)],
        devices=devices,
        reach={f"host:{h}": {"enc": Reach(600, 32.0, 1)} for h in cores},
        workload=ONE_GPU,
    )
    assert snapshot.group_shares == (800,)
    verdict = effect(PlacementRequest(cores=8), snapshot, snapshot.hosts["host:h1"])
    assert (verdict.stranded, verdict.stranded_after) == (0, pytest.approx(300))


def test_a_share_on_a_whole_gpu_goes_where_cores_are_left_for_the_rest() -> None:
    """Five snug hosts of 4 cores and a roomy one of 64 reach one chassis. A half GPU with
    4 cores on a snug host leaves the other half bound to a host with no cores, lost to the
    expected halves; on the roomy host it stays usable. The snuggest hosts are measured
    first, so the roomy one must be measured too or the half is stranded."""
    halves = (WorkloadShape(4, 1, 500),)
    snapshot = pooled([4, 4, 4, 4, 4, 64], 4, halves)
    request = PlacementRequest(cores=4, items=(DeviceItem("gpu", 1, share=500),))
    snug, roomy = snapshot.hosts["host:0"], snapshot.hosts["host:5"]
    assert effect(request, snapshot, roomy).penalty < effect(request, snapshot, snug).penalty
    assert placed(request, snapshot).host == "host:5"


def test_a_share_goes_to_the_snuggest_host_that_keeps_cores_for_the_rest() -> None:
    """Of hosts with 4, 4, 8, 12 and 64 cores, the 8-core one is the snuggest that keeps 4
    cores for the other half: each plain host is measured on its own cores for a share,
    never lent the snuggest one's verdict. With the 64-core host short of memory, the
    half still goes where cores are left."""
    halves = (WorkloadShape(4, 1, 500),)
    request = PlacementRequest(cores=4, items=(DeviceItem("gpu", 1, share=500),))
    snapshot = pooled([4, 4, 8, 12, 64], 4, halves)
    assert placed(request, snapshot).host == "host:2"
    snapshot = pooled([4, 4, 4, 4, 4, 40, 64], 4, halves)
    roomiest = replace(snapshot.hosts["host:6"], memory_gib_free=8)
    snapshot = snapshot.replacing(hosts=[roomiest])
    assert placed(replace(request, host_memory_gib=16), snapshot).host == "host:5"
