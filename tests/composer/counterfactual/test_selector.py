"""The runs built from real composition and allocation rows, and the replay on them."""

from __future__ import annotations

from typing import Any

import pytest

from composer.counterfactual.replay import MILLI, Resources
from composer.selectors.counterfactual import counterfactual, counterfactual_runs
from tests.composer.counterfactual.history import (
    END,
    NOW,
    START,
    at,
    build_history,
    eight_gpu_shape,
)

pytestmark = pytest.mark.django_db


def test_the_runs_are_what_each_composition_held_while_up_clipped_to_the_period(
    acme: Any,
) -> None:
    """See tests/composer/counterfactual/history.py for the hand-checked figures."""
    build_history(acme)
    runs = {run.name: run for run in counterfactual_runs(start=START, end=END, now=NOW)}

    assert sorted(runs) == ["healed", "infer", "train"]
    train, infer, healed = runs["train"], runs["infer"], runs["healed"]
    assert (train.start, train.end) == (at(0), at(6))
    assert train.demand == Resources(2 * MILLI, 16, 192)
    assert train.gpu_models == frozenset({"H100 SXM"})
    assert (infer.start, infer.end) == (at(0), at(10))  # before the period, still up
    assert infer.demand == Resources(500, 4, 32)
    assert (healed.start, healed.end) == (at(1), at(3))
    assert healed.demand == Resources(MILLI, 8, 0)  # the replaced GPU and its replacement


def test_a_composition_still_up_runs_until_now_inside_the_period(acme: Any) -> None:
    build_history(acme)
    runs = {r.name: r for r in counterfactual_runs(start=START, end=at(20), now=NOW)}
    assert runs["infer"].end == NOW
    assert runs["later"].start == at(11) and runs["later"].end == NOW


def test_the_history_replayed_on_one_8_gpu_server(acme: Any) -> None:
    """All three fit one server; fullest at 1 h: 3.5 GPU, 28 c, 224 GiB in use."""
    build_history(acme)
    shape = eight_gpu_shape()
    answer = counterfactual(start=START, end=END, shapes=[shape], now=NOW)
    result = answer.result
    assert result.servers_at_peak == 1 and result.peak_at == at(1)
    assert result.used_at_peak == Resources(3500, 28, 224)
    assert result.idle_at_peak == Resources(4500, 36, 288)
    assert result.composable_peak == Resources(3500, 28, 224)
    assert answer.shapes == (shape,)


def test_a_composition_composed_and_decomposed_by_the_services_is_a_run(
    synced: Any, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """What the compose and decompose jobs write is what the counterfactual reads: two GPUs
    and 256 GiB of CXL memory, 8 cores and 64 GiB of host memory, from ready to released."""
    from datetime import timedelta

    from django.utils import timezone

    from composer.services.compositions import composition_decompose, composition_request
    from composer.tasks import composition_decompose_task

    spec = {
        "items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2}],
        "memory_gib": 256,
        "cores": 8,
        "host_memory_gib": 64,
    }
    before = timezone.now() - timedelta(minutes=1)
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(tenant=acme, requested_by=alice, spec=spec, name="c1")
    with django_capture_on_commit_callbacks(execute=True):
        job = composition_decompose(composition=composition, actor=alice)
    composition_decompose_task.delay(job.pk)
    composition.refresh_from_db()
    assert composition.ready_at is not None and composition.released_at is not None

    after = timezone.now() + timedelta(minutes=1)
    [run] = counterfactual_runs(start=before, end=after)
    assert (run.name, run.start, run.end) == ("c1", composition.ready_at, composition.released_at)
    assert run.demand == Resources(2 * MILLI, 8, 64 + 256)
    assert run.gpu_models == frozenset({"H100 PCIe 80GB"})


def test_the_runs_cost_two_queries_however_many_compositions(
    acme: Any, django_assert_num_queries: Any
) -> None:
    build_history(acme)
    with django_assert_num_queries(2):
        counterfactual_runs(start=START, end=END, now=NOW)
