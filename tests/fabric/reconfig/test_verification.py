"""`verify`: every recorded binding against the manager's report."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabric.reconfig import BindTarget, verify
from fabric.simulator.driver import SimulatedDriver

pytestmark = pytest.mark.django_db


def bound(driver: SimulatedDriver, targets: list[BindTarget[str]]) -> list[BindTarget[str]]:
    """`targets` bound, each with its binding id recorded."""
    return [
        replace(t, binding_id=driver.bind(device_id=t.device_id, host_id=t.host_id).binding_id)
        for t in targets
    ]


def test_every_recorded_binding_reported_verifies(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]]
) -> None:
    targets = bound(sim_driver, gpus[:2])

    verification = verify(sim_driver, targets)

    assert verification.missing == []
    assert {b.binding_id for b in verification.reported} == {t.binding_id for t in targets}


def test_verify_finds_a_binding_the_manager_no_longer_reports(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]]
) -> None:
    kept, lost = bound(sim_driver, gpus[:2])
    sim_driver.unbind(binding_id=lost.binding_id)  # behind the caller's back

    verification = verify(sim_driver, [kept, lost])

    assert verification.missing == [lost]
    assert [b.binding_id for b in verification.reported] == [kept.binding_id]


def test_a_binding_reported_for_another_device_or_never_recorded_does_not_verify(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]]
) -> None:
    first, second = bound(sim_driver, gpus[:2])
    mixed_up = replace(first, binding_id=second.binding_id)
    unrecorded = replace(second, binding_id="")

    assert verify(sim_driver, [mixed_up, unrecorded]).missing == [mixed_up, unrecorded]
