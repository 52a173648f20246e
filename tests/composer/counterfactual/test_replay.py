"""The replay on hand-checked histories: no database, times in hours from T0."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from composer.counterfactual.replay import (
    MILLI,
    Held,
    Resources,
    Run,
    Shape,
    peak_held,
    replay,
)

T0 = datetime(2026, 11, 30, tzinfo=UTC)
EIGHT = Shape("8-GPU", gpus=8, cores=64, memory_gib=512)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def run(key: int, start: float, end: float, gpus: float, cores: int, gib: int, *models: str) -> Run:
    return Run(
        key=key,
        name=f"c{key}",
        start=at(start),
        end=at(end),
        demand=Resources(round(gpus * MILLI), cores, gib),
        gpu_models=frozenset(models),
    )


def test_the_hand_checked_history_on_8_gpu_servers() -> None:
    """Five compositions, period 0 h to 10 h, servers of 8 GPUs, 64 cores, 512 GiB.

    A 0-6 h 4 GPU 16 c 128 GiB; B 1-4 h 4 GPU 40 c 256 GiB; C 2-8 h 2 GPU 8 c 64 GiB;
    D 3-5 h 12 GPU 48 c 384 GiB; E 6-10 h half a GPU (a share) 4 c 32 GiB.

    0 h A opens S1. 1 h B fits beside A on S1 (room 4 GPU 48 c 384 GiB): S1 full of GPUs.
    2 h C fits nowhere: S2. 3 h D needs two servers' GPUs (12 > 8): S3 and S4 of its own,
    6 GPU 24 c 192 GiB charged on each. 4 servers: the peak, at 3 h.
    4 h B leaves. 5 h D leaves: S3, S4 off. 6 h A leaves first (S1 off), then E arrives
    and fits beside C on S2. 8 h C leaves. 10 h the period ends with E on S2.

    At the peak: installed 4 x (8, 64, 512) = 32 GPU, 256 c, 2048 GiB; in use A+B+C+D =
    22 GPU, 112 c, 832 GiB; idle 10 GPU, 144 c, 1216 GiB.
    Servers open by hour: 1 1 2 4 4 2 1 1 1 1 = 18 server-hours: 1.8 on average.
    Demand by hour (GPU, c, GiB): (4,16,128) (8,56,384) (10,64,448) (22,112,832)
    (18,72,576) (6,24,192) (2.5,12,96) x2 (0.5,4,32) x2; sums 74 GPU-h, 376 c-h, 2816 GiB-h.
    Installed: 18 x 8 = 144 GPU-h, 18 x 64 = 1152 c-h, 18 x 512 = 9216 GiB-h.
    Idle on average: (144-74)/10 = 7.0 GPU, (1152-376)/10 = 77.6 c, (9216-2816)/10 = 640 GiB.
    Composable: peaks 22 GPU, 112 c, 832 GiB (all at 3 h); averages 7.4, 37.6, 281.6.
    """
    runs = [
        run(1, 0, 6, 4, 16, 128),
        run(2, 1, 4, 4, 40, 256),
        run(3, 2, 8, 2, 8, 64),
        run(4, 3, 5, 12, 48, 384),
        run(5, 6, 10, 0.5, 4, 32),
    ]
    result = replay(runs, [EIGHT], start=at(0), end=at(10))

    assert result.servers_at_peak == 4
    assert result.peak_at == at(3)
    assert result.by_shape_at_peak == {"8-GPU": 4}
    assert result.capacity_at_peak == Resources(32 * MILLI, 256, 2048)
    assert result.used_at_peak == Resources(22 * MILLI, 112, 832)
    assert result.idle_at_peak == Resources(10 * MILLI, 144, 1216)
    assert result.servers_average == pytest.approx(1.8)
    assert result.idle_average == pytest.approx((7.0, 77.6, 640.0))
    assert result.composable_peak == Resources(22 * MILLI, 112, 832)
    assert result.composable_average == pytest.approx((7.4, 37.6, 281.6))
    assert (result.runs, result.split_runs, result.unplaced) == (5, 1, ())


def test_best_fit_puts_an_arrival_where_it_leaves_least_room() -> None:
    """A (6 GPU) opens S1, B (5 GPU) opens S2. C (2 GPU) fits both: on S1 it leaves 0 GPU,
    on S2 1; best fit takes S1. D (3 GPU) then fits S2 exactly: two servers. (C on S2 would
    have left D a third server.)"""
    runs = [
        run(1, 0, 9, 6, 8, 64),
        run(2, 1, 9, 5, 8, 64),
        run(3, 2, 9, 2, 8, 64),
        run(4, 3, 9, 3, 8, 64),
    ]
    result = replay(runs, [EIGHT], start=at(0), end=at(10))
    assert result.servers_at_peak == 2
    assert result.idle_at_peak.gpu_milli == 0


def test_cores_or_memory_can_be_what_opens_the_next_server() -> None:
    """Two 1-GPU compositions of 40 cores each: 80 cores do not fit one 64-core server, so
    the second opens another, leaving 14 of 16 GPUs idle at the peak."""
    result = replay(
        [run(1, 0, 2, 1, 40, 10), run(2, 0, 2, 1, 40, 10)], [EIGHT], start=at(0), end=at(2)
    )
    assert result.servers_at_peak == 2
    assert result.idle_at_peak == Resources(14 * MILLI, 48, 1004)


def test_one_ending_as_another_starts_frees_its_server_first() -> None:
    result = replay([run(1, 0, 2, 8, 8, 8), run(2, 2, 4, 8, 8, 8)], [EIGHT], start=at(0), end=at(4))
    assert result.servers_at_peak == 1
    assert result.servers_average == pytest.approx(1.0)


def test_a_new_server_is_the_smallest_chosen_shape_that_holds_the_composition() -> None:
    """1 GPU goes on a 2-GPU server, 4 GPUs on an 8-GPU one."""
    two = Shape("2-GPU", gpus=2, cores=16, memory_gib=128)
    result = replay(
        [run(1, 0, 1, 1, 4, 16), run(2, 0, 1, 4, 4, 16)], [EIGHT, two], start=at(0), end=at(1)
    )
    assert result.by_shape_at_peak == {"2-GPU": 1, "8-GPU": 1}
    assert result.capacity_at_peak == Resources(10 * MILLI, 80, 640)


def test_a_shape_of_another_gpu_model_cannot_hold_the_work_and_says_so() -> None:
    """A V100 shape takes "Tesla V100-SXM2" GPUs (its name is part of the model) but not
    H100s; a CPU shape takes only compositions without GPUs. The one without GPUs arrives
    first and opens the smallest shape that holds it: the CPU one."""
    v100 = Shape("V100", gpus=8, cores=96, memory_gib=512, gpu_model="V100")
    cpu = Shape("CPU", gpus=0, cores=96, memory_gib=512)
    runs = [
        run(1, 0, 1, 2, 8, 64, "Tesla V100-SXM2-32GB"),
        run(2, 0, 1, 2, 8, 64, "H100 SXM"),
        run(0, 0, 1, 0, 8, 64),
    ]
    result = replay(runs, [v100, cpu], start=at(0), end=at(1))
    assert result.unplaced == ("c2",)
    assert result.by_shape_at_peak == {"V100": 1, "CPU": 1}
    assert result.composable_peak == Resources(2 * MILLI, 16, 128)  # the placed ones only
    assert result.runs == 3


def test_shares_pack_together_on_one_servers_gpus() -> None:
    """Four quarter-GPU shares need one GPU of one server."""
    runs = [run(k, 0, 1, 0.25, 1, 1) for k in range(4)]
    result = replay(runs, [EIGHT], start=at(0), end=at(1))
    assert result.servers_at_peak == 1
    assert result.used_at_peak.gpus == pytest.approx(1.0)


def test_an_empty_period_needs_no_server() -> None:
    result = replay([], [EIGHT], start=at(0), end=at(1))
    assert (result.servers_at_peak, result.peak_at, result.runs) == (0, None, 0)
    assert result.idle_average == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("held", "peak"),
    [
        # A heal: the failed GPU released at 2 h, its replacement bound at 2 h: one at once.
        ([Held(at(0), at(2), Resources(MILLI)), Held(at(2), None, Resources(MILLI))], 1000),
        # A resize: a second GPU added at 1 h while the first is held: two at once.
        ([Held(at(0), None, Resources(MILLI)), Held(at(1), at(3), Resources(MILLI))], 2000),
        # A share and a whole GPU: 1.25 GPUs.
        ([Held(at(0), None, Resources(250)), Held(at(0), None, Resources(MILLI))], 1250),
    ],
)
def test_what_a_composition_held_at_most(held: list[Held], peak: int) -> None:
    assert peak_held(held, until=at(4)).gpu_milli == peak


def test_the_replay_and_its_report_import_nothing_that_does_io() -> None:
    """The selector reads the database; the replay and the answer's figures only compute."""
    import ast
    from pathlib import Path

    import composer.counterfactual.replay as replay_module
    import composer.counterfactual.report as report_module

    for module in (replay_module, report_module):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        imported = [
            name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for name in (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
            )
        ]
        assert not [n for n in imported if n.startswith(("django", "composer.models", "fabric"))]
