"""`adopt`, for a caller that resumes: a bind whose reply was lost (it timed out, or the
worker died) is found on the manager and recorded, never bound twice; a binding something
else claims is never taken."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from fabric.drivers.base import DriverTimeout
from fabric.reconfig import BindTarget, adopt
from fabric.simulator.driver import SimulatedDriver
from tests.fabric.reconfig.conftest import Told, fault

pytestmark = pytest.mark.django_db


def nothing_claimed(ids: Collection[str]) -> set[str]:
    return set()


def test_a_bind_that_timed_out_but_happened_is_adopted_on_resume(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told
) -> None:
    first, second = gpus[:2]
    fault("bind", "timeout")
    with pytest.raises(DriverTimeout):  # the caller died before it could ask
        sim_driver.bind(device_id=first.device_id, host_id=first.host_id)
    [made] = sim_driver.bindings()
    recorded: list[tuple[str, str]] = []

    rest = adopt(
        sim_driver,
        [first, second],
        record=lambda target, binding: recorded.append((target.item, binding.binding_id)),
        claimed=nothing_claimed,
        narrator=told,
    )

    assert rest == [second]  # still to bind
    assert recorded == [(first.item, made.binding_id)]
    assert told.events == [("adopted", first.item, made.binding_id)]
    assert sim_driver.bindings() == [made]  # nothing bound again


def test_a_binding_something_else_claims_is_never_adopted(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told
) -> None:
    target = gpus[0]
    made = sim_driver.bind(device_id=target.device_id, host_id=target.host_id)
    asked: list[list[str]] = []

    def claimed(ids: Collection[str]) -> set[str]:
        asked.append(sorted(ids))
        return set(ids)  # e.g. a binding still to undo that looks alike

    rest = adopt(
        sim_driver,
        [target],
        record=lambda target, binding: pytest.fail("a claimed binding was recorded"),
        claimed=claimed,
        narrator=told,
    )

    assert rest == [target] and told.events == []
    assert asked == [[made.binding_id]]


def test_nothing_to_adopt_asks_the_manager_nothing(
    sim_driver: SimulatedDriver, told: Told, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SimulatedDriver, "bindings", lambda self: pytest.fail("asked"))

    rest = adopt(sim_driver, [], record=print, claimed=nothing_claimed, narrator=told)

    assert rest == []
