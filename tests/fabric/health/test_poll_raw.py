"""health_poll() on raw readings: a manager that reports only what failed itself.

The fabric is the tiny simulated world, learnt by an inventory sync; the health readings come
from a stand-in driver that reports each element's own health and nothing more (every
element ok but the ones a test names), as a real manager does. What a fault takes with it is
the console's to derive, so these hold for any driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from fabric.choices import AlertState, DeviceState, Health, LinkState
from fabric.health.poll import PollOutcome, health_poll
from fabric.models import (
    Alert,
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    Host,
    Link,
    Port,
    PowerFeed,
    Rack,
    Switch,
)
from fabric.services.sync import inventory_sync
from tests.support.raw_driver import RawDriver


class Clock:
    def __init__(self) -> None:
        self.now = timezone.now().replace(microsecond=0)

    def tick(self) -> datetime:
        self.now += timedelta(seconds=5)
        return self.now


@pytest.fixture
def raw(sim_manager: FabricManager, monkeypatch: pytest.MonkeyPatch) -> Iterator[RawDriver]:
    inventory_sync(manager=sim_manager)
    driver = RawDriver(sim_manager)
    monkeypatch.setattr("fabric.health.poll.get_driver", lambda _manager: driver)
    yield driver


@pytest.fixture
def clock() -> Clock:
    return Clock()


def poll(raw: RawDriver, clock: Clock) -> PollOutcome:
    return health_poll(manager=raw.manager, now=clock.tick())


def fail(raw: RawDriver, kind: str, external_id: str, health: str = "critical") -> None:
    raw.faults[kind, external_id] = health


def the_alert() -> Alert:
    (alert,) = Alert.objects.filter(state=AlertState.OPEN)
    return alert


def pks(rows: Iterable[object]) -> list[int]:
    return sorted(row.pk for row in rows)  # type: ignore[attr-defined]


def links_of(**owner: object) -> set[int]:
    found = set()
    for end in ("a_port", "b_port"):
        found |= set(
            Link.objects.filter(**{f"{end}__{k}": v for k, v in owner.items()}).values_list(
                "pk", flat=True
            )
        )
    return found


def test_a_failed_rack_fails_everything_in_it_in_one_alert(raw: RawDriver, clock: Clock) -> None:
    poll(raw, clock)
    fail(raw, "rack", "rack-a")
    outcome = poll(raw, clock)

    rack = Rack.objects.get(external_id="rack-a")
    for model in (Switch, Host, Enclosure):
        assert {row.health for row in model.objects.filter(rack=rack)} == {Health.CRITICAL}
    devices = Device.objects.filter(enclosure__rack=rack)
    assert {(d.health, d.state) for d in devices} == {(Health.CRITICAL, DeviceState.FAILED)}
    assert {link.state for link in Link.objects.all()} == {LinkState.DOWN}
    record = ChangeRecord.objects.get(
        target_type="device", target_id=devices[0].pk, source="health poll"
    )
    assert record.message == "rack rack-a failed"
    alert = the_alert()
    assert outcome.opened == (alert.pk,)
    assert (alert.source_type, alert.source_id, alert.severity) == ("rack", rack.pk, "critical")
    assert alert.blast_radius["devices"] == pks(devices)
    assert alert.blast_radius["hosts"] == pks(Host.objects.filter(rack=rack))


def test_a_failed_power_feed_fails_what_it_powers_in_one_alert(
    raw: RawDriver, clock: Clock
) -> None:
    poll(raw, clock)
    fail(raw, "power_feed", "pdu-a-1")
    outcome = poll(raw, clock)

    feed = PowerFeed.objects.get(external_id="pdu-a-1")
    powered = Device.objects.filter(enclosure__power_feed=feed)
    assert powered.exists()
    assert {d.health for d in powered} == {Health.CRITICAL}
    assert {d.health for d in Device.objects.exclude(enclosure__power_feed=feed)} == {Health.OK}
    assert set(outcome.devices_unhealthy) == set(pks(powered))
    alert = the_alert()
    assert (alert.source_type, alert.source_id) == ("power_feed", feed.pk)
    assert set(pks(powered)) <= set(alert.blast_radius["devices"])


def test_a_manager_that_reports_only_a_failed_enclosure_fails_its_devices(
    raw: RawDriver, clock: Clock
) -> None:
    poll(raw, clock)
    raw.only = True
    fail(raw, "enclosure", "gpu-a-01")
    outcome = poll(raw, clock)

    enclosure = Enclosure.objects.get(external_id="gpu-a-01")
    devices = Device.objects.filter(enclosure=enclosure)
    assert {(d.health, d.state) for d in devices} == {(Health.CRITICAL, DeviceState.FAILED)}
    assert set(outcome.devices_unhealthy) == set(pks(devices))
    assert {
        (link.health, link.state)
        for link in Link.objects.filter(pk__in=links_of(enclosure=enclosure))
    } == {(Health.CRITICAL, LinkState.DOWN)}
    assert {p.health for p in Port.objects.filter(enclosure=enclosure)} == {Health.CRITICAL}
    alert = the_alert()
    assert (alert.source_type, alert.source_id, alert.rule) == (
        "enclosure",
        enclosure.pk,
        "element_failed",
    )
    assert alert.blast_radius["devices"] == pks(devices)
    assert alert.blast_radius["effect"] == "lost"


def test_a_failed_switch_takes_its_ports_and_links_down_in_one_alert(
    raw: RawDriver, clock: Clock
) -> None:
    poll(raw, clock)
    fail(raw, "switch", "cxl-leaf-a")
    poll(raw, clock)

    switch = Switch.objects.get(external_id="cxl-leaf-a")
    behind = links_of(switch=switch)
    assert {link.state for link in Link.objects.filter(pk__in=behind)} == {LinkState.DOWN}
    assert {link.state for link in Link.objects.exclude(pk__in=behind)} == {LinkState.UP}
    assert {p.health for p in Port.objects.filter(switch=switch)} == {Health.CRITICAL}
    assert {d.health for d in Device.objects.all()} == {Health.OK}  # cut off, not failed
    alert = the_alert()
    assert (alert.source_type, alert.source_id) == ("switch", switch.pk)
    assert alert.blast_radius["links"] == sorted(behind)
    assert alert.blast_radius["device_count"] == Device.objects.count()


def test_a_failed_host_takes_its_links_down_and_is_lost(raw: RawDriver, clock: Clock) -> None:
    poll(raw, clock)
    fail(raw, "host", "host-a-01")
    poll(raw, clock)

    host = Host.objects.get(external_id="host-a-01")
    assert host.health == Health.CRITICAL
    behind = links_of(host=host)
    assert behind and {link.state for link in Link.objects.filter(pk__in=behind)} == {
        LinkState.DOWN
    }
    alert = the_alert()
    assert (alert.source_type, alert.source_id) == ("host", host.pk)
    assert alert.blast_radius["hosts"] == [host.pk]


def test_a_link_reported_failed_is_down(raw: RawDriver, clock: Clock) -> None:
    poll(raw, clock)
    link = Link.objects.order_by("pk").first()
    assert link is not None
    fail(raw, "link", link.external_id)
    poll(raw, clock)

    link.refresh_from_db()
    assert (link.health, link.state) == (Health.CRITICAL, LinkState.DOWN)
    alert = the_alert()
    assert (alert.source_type, alert.source_id) == ("link", link.pk)
    assert alert.blast_radius["links"] == [link.pk]


def test_a_degraded_enclosure_degrades_its_devices_without_failing_them(
    raw: RawDriver, clock: Clock
) -> None:
    poll(raw, clock)
    fail(raw, "enclosure", "gpu-a-01", "warning")
    poll(raw, clock)
    outcome = poll(raw, clock)

    devices = Device.objects.filter(enclosure__external_id="gpu-a-01")
    assert {(d.health, d.state) for d in devices} == {(Health.WARNING, DeviceState.FREE)}
    enclosure = Enclosure.objects.get(external_id="gpu-a-01")
    assert {link.state for link in Link.objects.filter(pk__in=links_of(enclosure=enclosure))} == {
        LinkState.UP
    }
    alert = the_alert()  # the enclosure's own; its devices fold into it
    assert outcome.opened == (alert.pk,)
    assert (alert.source_type, alert.severity) == ("enclosure", "warning")
    assert alert.blast_radius["effect"] == "at_risk"


def test_recovery_of_the_cause_recovers_everything_it_took_and_closes_the_alert(
    raw: RawDriver, clock: Clock
) -> None:
    poll(raw, clock)
    fail(raw, "power_feed", "pdu-a-1")
    poll(raw, clock)
    alert = the_alert()
    powered = Device.objects.filter(enclosure__power_feed__external_id="pdu-a-1")
    assert {d.state for d in powered} == {DeviceState.FAILED}

    raw.faults.clear()
    outcome = poll(raw, clock)
    assert set(outcome.devices_recovered) == set(pks(powered))
    assert {(d.health, d.state) for d in powered.all()} == {(Health.OK, DeviceState.FREE)}
    assert {link.state for link in Link.objects.all()} == {LinkState.UP}
    assert {p.health for p in Port.objects.all()} == {Health.OK}
    assert poll(raw, clock).closed == (alert.pk,)
