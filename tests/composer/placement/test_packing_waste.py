"""The waste benchmark (bench/bench_packing_waste.py) on tiny hand-made clusters: which
fractions each GPU holds, as the product's engine placed them, and how the capacity left
free is sorted by what could still use it. Reads no trace."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.bench_packing_waste import (
    CATEGORIES,
    Tracked,
    Waste,
    fitting,
    fractions,
    section,
    sort_free,
)
from bench.packing_data import FULL, Pod
from bench.packing_product import SHARES
from tests.composer.placement.test_packing_product import cluster

pytestmark = pytest.mark.skipif(not SHARES, reason="the engine has no shared GPUs yet")


def replayed(nodes: list[tuple[int, int, int, str]], pods: list[Pod]) -> Tracked:
    sim = Tracked(cluster(*nodes), "fixed", pods)
    for pod in pods:
        assert sim.place(pod)
    return sim


def test_a_gap_beside_a_big_fraction_that_no_fraction_fits_and_a_pair_that_leaves_one() -> None:
    # One server, two GPUs: the 810 opens one; 470 does not fit beside it, so both 470s
    # share the other (the fullest GPU that fits), leaving 60.
    pods = [Pod(1000, 1024, 1, 810), Pod(1000, 1024, 1, 470), Pod(1000, 1024, 1, 470)]
    sim = replayed([(16, 64, 2, "A")], pods)
    assert sorted(sorted(h) for h in sim.held.values()) == [[470, 470], [810]]
    waste = sort_free(sim, fractions(pods), 2 * FULL)
    assert waste.by_category == Counter({"big-none": 190, "small-none": 60})
    assert waste.by_contents == Counter({"810": 190, "470 + 470": 60})
    assert waste.allocated == 1750


def test_a_fraction_fits_a_gap_only_with_its_cores_memory_and_model_on_that_host() -> None:
    big, small = Pod(1000, 1024, 1, 810), Pod(2000, 1024, 1, 150)
    shapes = fractions([big, small])
    sim = replayed([(4, 64, 1, "A")], [big])
    assert sort_free(sim, shapes, FULL).by_category == Counter({"big-fits": 190})
    # a model the GPU is not of: nothing fits
    other = [(150, 10, 10, frozenset({"B"}))]
    assert sort_free(sim, other, FULL).by_category == Counter({"big-none": 190})
    # too much memory for what the host has left: nothing fits
    assert sort_free(sim, [(150, 10, 64 * 1024, None)], FULL).by_category == Counter(
        {"big-none": 190}
    )
    # a CPU-only pod takes the host's cores down to 500 milli: the 150 fits no longer, and
    # the CPU-only pod (and whole-GPU pods) are no fractions that could fill the gap
    cpu_only, whole = Pod(400, 1024, 0, 0), Pod(400, 1024, 1, FULL)
    assert sim.place(Pod(2500, 1024, 0, 0))
    shapes = fractions([big, small, cpu_only, whole])
    assert [f[0] for f in shapes] == [150, 810]
    assert sort_free(sim, shapes, FULL).by_category == Counter({"big-none": 190})


def test_a_gap_is_for_the_cores_of_the_host_its_gpu_is_bound_to_not_another() -> None:
    # All hosts pooled: the 810 lands on the big host (the roomiest, for a share); a
    # CPU-only pod that only the big host can take leaves it 500 milli. The small host
    # keeps 4,000, enough for the 150, but the gap is bound to the big host.
    big, small = Pod(3500, 1024, 1, 810), Pod(1000, 1024, 1, 150)
    sim = Tracked(cluster((4, 64, 1, "A"), (64, 64, 0, "A")), "all", [big, small])
    assert sim.place(big)
    (device,) = (d for d in sim.snapshot.devices.values() if d.shared_host)
    assert device.shared_host == "node-0001"
    shapes = fractions([big, small])
    assert sort_free(sim, shapes, FULL).by_category == Counter({"big-fits": 190})
    assert sim.place(Pod(60_000, 1024, 0, 0))
    assert sim.snapshot.hosts["node-0000"].cores_free == 4000
    assert sort_free(sim, shapes, FULL).by_category == Counter({"big-none": 190})


def test_whole_free_gpus_are_counted_whole_and_taken_ones_not_at_all() -> None:
    pods = [Pod(1000, 1024, 2, FULL), Pod(1000, 1024, 1, 500)]
    sim = replayed([(16, 64, 4, "A")], pods)
    waste = sort_free(sim, fractions(pods), 4 * FULL)
    assert waste.by_category == Counter({"whole": FULL, "small-fits": 500})
    assert sum(waste.by_category.values()) + waste.allocated == 4 * FULL


def test_contents_name_a_gpus_fractions_largest_first() -> None:
    pods = [Pod(1000, 1024, 1, 320), Pod(1000, 1024, 1, 650)]
    sim = replayed([(16, 64, 1, "A")], pods)
    assert sort_free(sim, fractions(pods), FULL).by_contents == Counter({"650 + 320": 30})


def test_the_trace_share_of_pods_small_enough_for_a_gap() -> None:
    pods = [Pod(1, 1, 1, m) for m in (810, 470, 160, 110)] + [Pod(1, 1, 0, 0), Pod(1, 1, 2, FULL)]
    assert fitting("810", pods) == pytest.approx(50.0)  # 160 and 110 of four fractions
    assert fitting("470 + 470", pods) == 0.0
    assert fitting("470", pods) == pytest.approx(75.0)


def test_the_section_gives_each_category_and_the_contents_as_shares_of_capacity() -> None:
    def waste(**free: int) -> Waste:
        w = Waste(capacity=10 * FULL, allocated=10 * FULL - sum(free.values()))
        w.by_category.update({k.replace("_", "-"): v for k, v in free.items()})
        w.by_contents.update({"810": free.get("big_none", 0), "470 + 470": 60})
        return w

    runs = {"domain": [waste(big_none=190, small_none=60), waste(big_none=380, small_none=60)]}
    text = section("default", runs, [Pod(1, 1, 1, 810), Pod(1, 1, 1, 160)], "today on here")
    row = next(line for line in text.splitlines() if line.startswith("| 8-host domains"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # allocated, free, then the categories in order: means over the two seeds
    assert cells[1:3] == ["96.55", "3.45"]
    expected = {"whole": "0.00", "big-none": "2.85", "small-none": "0.60"}
    for (key, _), cell in zip(CATEGORIES, cells[3:], strict=True):
        assert cell == expected.get(key, "0.00")
    assert "810 milli, 2.85 % (50.0 % of the fractional pods are small enough for its gap)" in text
    assert "seeds 42..43" in text and "today on here" in text
    assert (
        "- 8-host domains: of the 3.45 points left free, 2.85 sit beside fractions of more "
        "than half a GPU (2.85 where no fraction of the trace fits any longer, the rest where "
        "one would fit but none came), and 0.60 elsewhere. The target of 96.5 % leaves 3.50 "
        "points free: with the gaps beside big fractions as they are, everything else would "
        "have to fall to 0.65 points."
    ) in text
    # its own paragraph, not more items of the contents list
    assert "\n\nAgainst the engine's composable targets, in this final state:\n\n- 8-host" in text
    # the targets are the default trace's: another trace's section reads nothing into them
    assert "target" not in section("cpu250", runs, [Pod(1, 1, 1, 810)], "today")


def test_gaps_beside_big_fractions_beyond_the_target_are_said_so() -> None:
    w = Waste(capacity=100 * FULL, allocated=100 * FULL - 3600)
    w.by_category.update({"big-none": 1000, "big-fits": 2600})
    text = section("default", {"all": [w]}, [Pod(1, 1, 1, 810)], "today")
    assert (
        "of the 3.60 points left free, 3.60 sit beside fractions of more than half a GPU "
        "(1.00 where no fraction of the trace fits any longer"
    ) in text
    assert "the gaps beside big fractions alone exceed that by 0.10 points" in text
    assert "would have to fall to" not in text


def test_fixed_ratio_stranding_is_set_against_the_gaps_that_pooling_leaves() -> None:
    def waste(allocated: int, **free: int) -> Waste:
        w = Waste(capacity=100 * FULL, allocated=allocated)
        w.by_category.update({k.replace("_", "-"): v for k, v in free.items()})
        return w

    pooled = waste(95_800, big_fits=4200)
    little = section(
        "default",
        {"fixed": [waste(95_900, whole=10, big_fits=4090)], "all": [pooled]},
        [Pod(1, 1, 1, 810)],
        "today",
    )
    assert (
        "Fixed-ratio servers end with 0.01 % of the GPU capacity in whole free GPUs "
        "(stranded beside spent cores or memory: the waste composing removes) and 4.09 % in "
        "gaps beside fractions"
    ) in little
    assert "The best composable run allocates 95.80 % against fixed-ratio's 95.90 %:" in little
    assert "tighter packing of the fractions" in little
    # where fixed-ratio servers strand much, the reading does not say pooling cannot help
    much = section(
        "default",
        {"fixed": [waste(94_000, whole=2000, big_fits=4000)], "all": [pooled]},
        [Pod(1, 1, 1, 810)],
        "today",
    )
    assert "2.00 % of the GPU capacity in whole free GPUs" in much
    assert "tighter packing" not in much
    # without a fixed-ratio run there is nothing to set against
    assert "Fixed-ratio servers end" not in section(
        "default", {"all": [pooled]}, [Pod(1, 1, 1, 810)], "today"
    )
