"""plan_for: a stored plan in its reader's words; a tenant reads the funnel's host steps
without the fabric's host counts. No database."""

from __future__ import annotations

from typing import Any

from composer.placement.audience import HOST_STEP, plan_for
from composer.placement.engine import place
from composer.placement.request import DeviceItem, Placement, PlacementRequest, Rejection
from tests.composer.placement.helpers import world


def _stored(outcome: Placement | Rejection) -> dict[str, Any]:
    """The funnel as a plan stores it (JSON: lists, not tuples)."""
    return {"ok": isinstance(outcome, Placement), "funnel": [list(s) for s in outcome.funnel]}


def test_every_step_the_engine_counts_hosts_in_is_named_as_a_host_step() -> None:
    """The audience rule finds host steps by their name: the engine must keep naming them so."""
    outcome = place(PlacementRequest(items=(DeviceItem("gpu", 7),), max_latency_ns=600), world())
    assert isinstance(outcome, Rejection)
    names = [name for name, _, _ in outcome.funnel]
    assert [n for n in names if n.startswith(HOST_STEP)] == [
        "hosts: cores and memory",
        "hosts: reach 7 GPUs",
        "hosts: latency ceiling",
    ]


def test_a_tenant_reads_host_steps_without_counts_and_which_one_left_none() -> None:
    outcome = place(PlacementRequest(items=(DeviceItem("gpu", 7),), max_latency_ns=600), world())
    assert isinstance(outcome, Rejection)
    stored = _stored(outcome)

    assert plan_for(stored, operator=True)["funnel"] == [
        ["hosts: cores and memory", 2, 2],
        ["GPUs: kind and model", 10, 10],
        ["hosts: reach 7 GPUs", 2, 2],
        ["hosts: latency ceiling", 2, 0],
    ]
    assert plan_for(stored, operator=False)["funnel"] == [
        ["hosts: cores and memory", None, None],
        ["GPUs: kind and model", 10, 10],  # devices: the pools' availability, theirs to see
        ["hosts: reach 7 GPUs", None, None],
        ["hosts: latency ceiling", None, 0],
    ]
    assert stored["funnel"][0] == ["hosts: cores and memory", 2, 2]  # the stored plan is kept


def test_a_placed_plans_funnel_has_no_host_counts_for_a_tenant() -> None:
    outcome = place(PlacementRequest(items=(DeviceItem("gpu", 2),)), world())
    assert isinstance(outcome, Placement)
    funnel = plan_for(_stored(outcome), operator=False)["funnel"]
    hosts = [step for step in funnel if step[0].startswith(HOST_STEP)]
    assert hosts and all(step[1:] == [None, None] for step in hosts)
