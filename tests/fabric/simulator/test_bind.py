"""The simulated manager's bind reads the health above the device and the host fresh every
time, even though one driver instance (one job) remembers which feed powers what."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from fabric.drivers.base import DriverError
from fabric.simulator import store
from fabric.simulator.driver import SimulatedDriver
from fabric.simulator.models import SimulatedElement

pytestmark = pytest.mark.django_db


def fail(external_id: str, kind: str) -> None:
    store.element_fault_set(
        fabric=store.fabric_get("sim"), kind=kind, external_id=external_id, action="fail"
    )


def test_a_bind_follows_an_enclosure_moved_to_another_feed(sim_driver: SimulatedDriver) -> None:
    inventory = sim_driver.discover()
    gpus = [d for d in inventory.devices if d.kind == "gpu"]
    first, second = gpus[0], next(g for g in gpus[1:] if g.enclosure_id == gpus[0].enclosure_id)
    host = inventory.hosts[0].external_id
    sim_driver.bind(device_id=first.external_id, host_id=host)  # learns the feeds

    enclosure = SimulatedElement.objects.get(external_id=first.enclosure_id)
    feeds = SimulatedElement.objects.filter(kind="power_feed").exclude(
        Q(external_id=enclosure.data["power_feed_id"])
        | Q(external_id=inventory.hosts[0].power_feed_id)
    )
    other = feeds.order_by("external_id").first()
    assert other is not None
    enclosure.data = {**enclosure.data, "power_feed_id": other.external_id}  # re-powered
    enclosure.save(update_fields=["data"])
    fail(other.external_id, "power_feed")

    with pytest.raises(DriverError) as caught:
        sim_driver.bind(device_id=second.external_id, host_id=host)
    assert caught.value.permanent and "failed" in caught.value.message


def test_later_binds_of_one_job_read_the_host_and_its_ancestors_in_one_query(
    sim_driver: SimulatedDriver,
) -> None:
    inventory = sim_driver.discover()
    gpus = [d for d in inventory.devices if d.kind == "gpu"]
    first, second = gpus[0], next(g for g in gpus[1:] if g.enclosure_id == gpus[0].enclosure_id)
    host = inventory.hosts[0]
    fabric = store.fabric_get("sim")
    device = SimulatedElement.objects.get(external_id=first.external_id)
    cold = _queries(lambda: sim_driver._host_and_health(fabric, device, host.external_id))
    other = SimulatedElement.objects.get(external_id=second.external_id)
    warm = _queries(lambda: sim_driver._host_and_health(fabric, other, host.external_id))
    assert (cold, warm) == (2, 1)
    fail(host.power_feed_id, "power_feed")  # fresh rows: the failure is seen at once
    _, effective = sim_driver._host_and_health(fabric, other, host.external_id)
    assert effective[host.external_id].health == "critical"


def _queries(call: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)
