"""`bind` and `bind_many` against the simulated manager: a timeout that did bind is taken
from the manager, a refusal names its target, and many binds go side by side when the
manager is slow, each recorded as it is made."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from fabric.drivers.base import Binding
from fabric.reconfig import BindError, BindTarget, bind, bind_many
from fabric.simulator.driver import SimulatedDriver
from tests.fabric.reconfig.conftest import Told, fault
from tests.support.slow_binds import Call, slow_binds

BIND_MS = 200


@pytest.mark.django_db
def test_a_bind_that_timed_out_but_happened_is_taken_from_the_manager(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told
) -> None:
    fault("bind", "timeout")

    binding = bind(sim_driver, gpus[0], narrator=told)

    assert sim_driver.bindings() == [binding]  # bound once, not twice
    assert (binding.device_id, binding.host_id) == (gpus[0].device_id, gpus[0].host_id)
    assert told.kinds() == ["bind_timed_out", "bind_found"]


@pytest.mark.django_db
def test_a_bind_that_timed_out_and_did_not_happen_is_a_transient_bind_error(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told, monkeypatch: Any
) -> None:
    fault("bind", "timeout")
    monkeypatch.setattr(SimulatedDriver, "bindings", lambda self: [])  # the bind was lost

    with pytest.raises(BindError) as caught:
        bind(sim_driver, gpus[0], narrator=told)

    assert caught.value.target is gpus[0] and not caught.value.permanent
    assert told.kinds() == ["bind_timed_out", "bind_failed"]


@pytest.mark.django_db
def test_a_refused_bind_is_a_permanent_bind_error_naming_its_target(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told
) -> None:
    fault("bind", "permanent")

    with pytest.raises(BindError) as caught:
        bind(sim_driver, gpus[1], narrator=told)

    assert caught.value.target is gpus[1] and caught.value.permanent
    assert caught.value.message == caught.value.cause.message
    assert told.events == [("bind_failed", gpus[1].item, caught.value.message)]
    assert sim_driver.bindings() == []


@pytest.mark.django_db
def test_the_first_failure_stops_the_binds_after_it_and_what_was_bound_is_recorded(
    sim_driver: SimulatedDriver, gpus: list[BindTarget[str]], told: Told, monkeypatch: Any
) -> None:
    real = SimulatedDriver.bind
    asked: list[str] = []

    def second_refused(self: SimulatedDriver, **kwargs: Any) -> Binding:
        asked.append(kwargs["device_id"])
        if len(asked) == 2:
            fault("bind", "permanent")
        return real(self, **kwargs)

    monkeypatch.setattr(SimulatedDriver, "bind", second_refused)
    recorded: list[tuple[str, str]] = []

    with pytest.raises(BindError) as caught:
        bind_many(
            sim_driver,
            gpus,
            record=lambda target, binding: recorded.append((target.item, binding.binding_id)),
            narrator=told,
        )

    assert caught.value.target is gpus[1]
    assert asked == [gpus[0].device_id, gpus[1].device_id]  # the rest never asked for
    assert recorded == [(gpus[0].item, b.binding_id) for b in sim_driver.bindings()]


@pytest.fixture
def binds(settings: Any, monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Each bind takes BIND_MS; every bind asked for, as it ends."""
    return slow_binds(settings, monkeypatch, bind_ms=BIND_MS)


@pytest.mark.django_db(transaction=True)  # each helper thread reads what is committed
def test_many_binds_go_side_by_side_when_the_manager_is_slow_and_each_is_recorded(
    sim_driver: SimulatedDriver,
    gpus: list[BindTarget[str]],
    told: Told,
    binds: list[Call],
) -> None:
    recorded: list[tuple[str, str, int]] = []
    adopted: list[int] = []

    bind_many(
        sim_driver,
        gpus,
        record=lambda t, b: recorded.append((t.item, b.binding_id, threading.get_ident())),
        narrator=told,
        log_adopter=lambda: adopted.append(threading.get_ident()),
    )

    assert len(gpus) == 4 and len(binds) == 4
    first, *others = sorted(binds, key=lambda call: call[1])
    here = threading.get_ident()
    # The first bind ran here, alone; the other three side by side in helper threads.
    assert first[3] == here and all(c[1] >= first[2] for c in others)
    assert max(c[1] for c in others) < min(c[2] for c in others)
    assert len({c[3] for c in others}) == 3 and here not in {c[3] for c in others}
    assert sorted(adopted) == sorted(c[3] for c in others)  # each helper adopted the log
    # Every binding recorded, here (the first before the others were asked for).
    assert recorded[0][0] == gpus[0].item
    assert sorted(item for item, _, _ in recorded) == sorted(t.item for t in gpus)
    assert {thread for _, _, thread in recorded} == {here}
    assert {b for _, b, _ in recorded} == {b.binding_id for b in sim_driver.bindings()}
    assert told.events == []


@pytest.mark.django_db(transaction=True)
def test_many_binds_go_one_after_the_other_when_the_manager_is_fast(
    sim_driver: SimulatedDriver,
    gpus: list[BindTarget[str]],
    told: Told,
    binds: list[Call],
    settings: Any,
) -> None:
    settings.COMPOSER_BIND_PARALLEL_AFTER_MS = 10_000
    recorded: list[int] = []

    bind_many(
        sim_driver,
        gpus[:2],
        record=lambda t, b: recorded.append(threading.get_ident()),
        narrator=told,
        log_adopter=lambda: pytest.fail("no helper thread was needed"),
    )

    assert recorded == [threading.get_ident()] * 2 and len(sim_driver.bindings()) == 2
    (_, _, first_end, _), (_, second_start, _, _) = sorted(binds, key=lambda c: c[1])
    assert first_end <= second_start
