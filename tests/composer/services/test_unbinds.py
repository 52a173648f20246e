"""`unbind_with_retries`: transient errors tried again with doubling back-off, a bounded
number of times; a permanent error at once given up."""

from __future__ import annotations

from typing import Any

import pytest

from composer.services.unbinds import unbind_with_retries
from fabric.drivers.base import Binding, FabricDriver
from fabric.drivers.simulated import store
from fabric.models import Device, FabricManager, Host

pytestmark = pytest.mark.django_db


@pytest.fixture
def bound(synced: FabricManager, driver: FabricDriver, settings: Any) -> Binding:
    settings.COMPOSER_UNBIND_ATTEMPTS = 3
    settings.COMPOSER_UNBIND_BACKOFF_MS = 100
    gpu = Device.objects.filter(kind="gpu").first()
    host = Host.objects.filter(manager=synced).first()
    assert gpu is not None and host is not None
    return driver.bind(device_id=gpu.external_id, host_id=host.external_id)


def fail_unbind(mode: str, count: int) -> None:
    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="unbind", mode=mode, count=count
    )


def test_transient_errors_are_tried_again_with_doubling_waits(
    bound: Binding, driver: FabricDriver
) -> None:
    fail_unbind("transient", 2)
    waits: list[float] = []

    assert unbind_with_retries(driver, bound.binding_id, sleep=waits.append) is None

    assert waits == [0.1, 0.2]
    assert driver.bindings() == []


def test_transient_errors_past_the_attempts_are_given_back(
    bound: Binding, driver: FabricDriver
) -> None:
    fail_unbind("transient", 5)
    waits: list[float] = []

    error = unbind_with_retries(driver, bound.binding_id, sleep=waits.append)

    assert error is not None and not error.permanent
    assert waits == [0.1, 0.2]  # three tries in all
    assert [b.binding_id for b in driver.bindings()] == [bound.binding_id]


def test_a_permanent_error_is_not_tried_again(bound: Binding, driver: FabricDriver) -> None:
    fail_unbind("permanent", 1)
    waits: list[float] = []

    error = unbind_with_retries(driver, bound.binding_id, sleep=waits.append)

    assert error is not None and error.permanent
    assert waits == []
    assert [b.binding_id for b in driver.bindings()] == [bound.binding_id]
