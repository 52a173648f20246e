"""bench/bench_lifetimes.py's parts on hand-made streams: the event queue (order, departures
freeing, refused pods never departing), the lower bound, the 1 % rule, and the fixed-ratio
and composable sizing where the answer is plain. No trace, no database: every decision is
the product's `place()` on snapshots the bench builds."""

from __future__ import annotations

import pytest

from bench.lifetimes_fabric import (
    SHARES,
    Fabric,
    Server,
    composable_inventory,
    fixed_inventory,
    gpu_item,
)
from bench.lifetimes_replay import (
    ARRIVE,
    DEPART,
    Outcome,
    TracePod,
    allowed,
    events,
    peak,
    peaks,
    replay,
    smallest,
)
from bench.lifetimes_sizing import (
    Composable,
    HostShape,
    apportion,
    composable_fabric,
    composable_request,
    fixed_request,
    size_composable,
    size_fixed,
)
from bench.packing_data import Pod
from composer.placement.request import DeviceItem

GIB = 1024


def pod(
    start: int, end: int, *, cpu: int = 4000, mem: int = 8 * GIB, k: int = 1, milli: int = 1000
) -> TracePod:
    return TracePod(Pod(cpu, mem, k, milli), start, end)


def one_server(cpu: int = 8000, mem: int = 32 * GIB, gpus: int = 1) -> Fabric:
    return Fabric(fixed_inventory([Server(cpu, mem, gpus, "X")]))


def test_events_in_time_order_departures_first_at_one_time() -> None:
    pods = [pod(5, 9), pod(0, 5), pod(5, 7)]
    assert list(events(pods)) == [
        (0, ARRIVE, 1),
        (5, DEPART, 1),
        (5, ARRIVE, 0),
        (5, ARRIVE, 2),
        (7, DEPART, 2),
        (9, DEPART, 0),
    ]


def test_a_pod_that_leaves_the_second_it_comes_leaves_after_its_own_arrival() -> None:
    # Ordered with the other departures of that second, it would depart holding nothing,
    # then arrive and hold its GPU to the end; the peak would not count it at all.
    pods = [pod(10, 10), pod(0, 10)]
    assert list(events(pods)) == [(0, ARRIVE, 1), (10, DEPART, 1), (10, ARRIVE, 0), (10, DEPART, 0)]
    assert peak(pods, lambda p: p.gpu) == 1000
    out = replay([pod(10, 10), pod(11, 20)], one_server(), fixed_request, give_up=False)
    assert (out.placed, out.refused) == (2, 0)


def test_a_departure_frees_what_the_pod_held() -> None:
    # One server with one GPU: three pods one after another all fit, each after the last left.
    pods = [pod(0, 10), pod(10, 20), pod(20, 30)]
    out = replay(pods, one_server(), fixed_request, give_up=False)
    assert (out.placed, out.refused) == (3, 0)


def test_a_refused_pod_never_departs() -> None:
    # A holds the GPU 0..30; B arrives at 5 and is refused; B's departure at 10 must give
    # nothing back, so C, arriving at 15, is refused too; D after A's departure fits.
    fabric = one_server()
    pods = [pod(0, 30), pod(5, 10), pod(15, 40), pod(30, 50)]
    out = replay(pods, fabric, fixed_request, give_up=False)
    assert (out.placed, out.refused) == (2, 2)
    # Everything given back at the end: the server is whole again.
    host = fabric.snapshot().hosts["h0"]
    assert (host.cores_free, host.memory_gib_free, len(fabric.free)) == (8000, 32 * GIB, 1)


def test_the_replay_gives_up_beyond_one_percent() -> None:
    assert [allowed(n) for n in (0, 99, 100, 250, 8152)] == [0, 0, 1, 2, 81]
    pods = [pod(0, 10), pod(1, 10), pod(2, 10)]
    out = replay(pods, one_server(), fixed_request)
    assert out.stopped and out.refused == 1 and not out.ok
    assert Outcome(100, placed=99, refused=1).ok
    assert not Outcome(100, placed=98, refused=2).ok


def test_lower_bound_is_the_peak_of_concurrent_demand() -> None:
    pods = [
        pod(0, 10, cpu=2000, mem=4 * GIB, k=1, milli=500),
        pod(5, 15, cpu=3000, mem=6 * GIB, k=2),
        pod(10, 20, cpu=8000, mem=1 * GIB, k=0, milli=0),  # starts as the first leaves
        pod(30, 40, cpu=1000, mem=16 * GIB, k=1, milli=250),
    ]
    bound = peaks(pods)
    assert bound.gpus == pytest.approx(2.5)  # 0..10 and 5..15 overlap: 0.5 + 2
    assert bound.gpus_whole == pytest.approx(3.0)  # the fraction as a whole GPU
    assert bound.cores == pytest.approx(11.0)  # 10..15: 3 + 8
    assert bound.mem_mib == 16 * GIB  # the last pod alone


def test_a_fraction_is_a_whole_gpu_until_the_engine_has_shares() -> None:
    if SHARES:
        assert getattr(gpu_item(1, 500), "share", None) == 500
    else:
        assert gpu_item(1, 500) == DeviceItem("gpu", 1)
    assert gpu_item(4, 1000) == DeviceItem("gpu", 4)


def test_apportion_by_largest_remainder() -> None:
    a, b, c = Server(1, 1, 1, "a"), Server(2, 2, 2, "b"), Server(3, 3, 3, "c")
    # 5 seats: quotas 3, 1.5, 0.5; the last seat's tie goes to the commoner shape
    assert apportion([(a, 6), (b, 3), (c, 1)], 5) == [a, a, a, b, b]
    assert apportion([(a, 6), (b, 3), (c, 1)], 3) == [a, a, b]
    assert apportion([(a, 6), (b, 3), (c, 1)], 20) == [a] * 12 + [b] * 6 + [c] * 2


def test_smallest_bisects_from_the_lower_bound() -> None:
    def at(size: int) -> Outcome:
        return Outcome(100, refused=0 if size >= 37 else 5)

    assert smallest(37, at).size == 37
    found = smallest(10, at, tolerance=0.0)
    assert found.size == 37
    assert [size for size, _ in found.tried][:3] == [10, 15, 23]


# Two waves of three pods, each pod one GPU, 4 cores, 8 GiB: three at a time at most.
WAVES = [pod(0, 10), pod(1, 10), pod(2, 10), pod(10, 20), pod(11, 20), pod(12, 20)]


def test_fixed_sizing_on_a_hand_checked_stream() -> None:
    # Servers of one GPU each: three at a time need three servers (allowed: 0 refused).
    shape = Server(8000, 32 * GIB, 1, "X")
    found = size_fixed(WAVES, [(shape, 10)], 1)
    assert found.size == 3
    assert [(size, o.ok) for size, o in found.tried] == [(1, False), (2, False), (3, True)]


def test_composable_sizing_on_a_hand_checked_stream() -> None:
    # Hosts of 4 cores (small) with 1 GiB per core: each pod takes 4 GiB locally and 4 GiB
    # of CXL memory; three at a time need 3 small hosts, 3 GPUs, 12 GiB of CXL, no big host.
    shape = HostShape(big=8000, small=4000, local=GIB)
    low = Composable(0, 3, {"X": 3}, 12)
    found = size_composable(WAVES, shape, "X", low, 12000)
    assert found.size == Composable(0, 3, {"X": 3}, 12)
    assert found.joint[-1][1].ok and len(found.joint) == 1
    # One less of any of them refuses a pod.
    for smaller in (
        Composable(0, 2, {"X": 3}, 12),
        Composable(0, 3, {"X": 2}, 12),
        Composable(0, 3, {"X": 3}, 11),
    ):
        out = replay(WAVES, composable_fabric(shape, smaller), composable_request(shape))
        assert not out.ok, smaller


def test_cxl_slices_come_back_and_one_slice_per_device_and_host() -> None:
    # One host, one 16 GiB CXL device: two pods of 4 GiB of CXL each cannot both slice the
    # one device for the one host (the fabric manager's rule), the second is refused; after
    # the first leaves, a third gets its slice.
    fabric = Fabric(
        composable_inventory(
            [(8000, 8 * GIB)], {}, 16 * GIB, chassis=8, cxl_device=16 * GIB, cxl_box=8
        )
    )
    pods = [pod(0, 10, k=0, milli=0), pod(1, 5, k=0, milli=0), pod(10, 20, k=0, milli=0)]
    shape = HostShape(big=8000, small=8000, local=GIB)
    assert shape.local_share(pods[0].pod) == 4 * GIB  # the rest of its 8 GiB from CXL
    out = replay(pods, fabric, composable_request(shape), give_up=False)
    assert (out.placed, out.refused) == (2, 1)
    assert fabric.gib_used == {"m-0-0": 0} and fabric.sliced == {"h0": set()}


def test_a_servers_gpus_serve_only_it_and_pooled_gpus_serve_every_host() -> None:
    # A pod of 6 cores fits only server 0 (8 cores, a GPU); then a pod of 4 cores and a GPU
    # fits neither server 0 (2 cores left) nor server 1 (4 cores, no GPU). Composed of the
    # same parts (hosts of 8 and 4 cores, the GPU pooled) both fit.
    hog = pod(0, 100, cpu=6000, mem=GIB, k=0, milli=0)
    wants_gpu = pod(1, 100)
    servers = [Server(8000, 32 * GIB, 1, "X"), Server(4000, 16 * GIB, 0, "")]
    out = replay([hog, wants_gpu], Fabric(fixed_inventory(servers)), fixed_request, give_up=False)
    assert (out.placed, out.refused) == (1, 1)
    shape = HostShape(big=8000, small=4000, local=4 * GIB)
    pooled = composable_fabric(shape, Composable(1, 1, {"X": 1}, 0))
    out = replay([hog, wants_gpu], pooled, composable_request(shape), give_up=False)
    assert (out.placed, out.refused) == (2, 0)
