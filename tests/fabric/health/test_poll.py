"""health_poll() against the simulated driver: samples, health columns, alerts, blast radius."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fabric.choices import (
    AlertSeverity,
    AlertState,
    ChangeAction,
    ComponentState,
    DeviceState,
    Health,
    LinkState,
)
from fabric.health.poll import PollOutcome, health_poll, managers_due
from fabric.models import (
    Alert,
    ChangeRecord,
    Device,
    Enclosure,
    FabricManager,
    HealthCondition,
    HealthSample,
    Host,
    Link,
    PowerFeed,
    Switch,
)
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.simulator.faults import fault_inject
from fabric.simulator.spec import WorldSpec
from fabric.topology.impact import register_contributor, unregister_contributor
from fabric.topology.radius import Impact
from tests.fabric.simulated_world import simulated_manager


class Clock:
    """Poll times a few seconds apart, so every poll is newer than the last."""

    def __init__(self) -> None:
        self.now = timezone.now().replace(microsecond=0)

    def tick(self, seconds: float = 5) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    inventory_sync(manager=sim_manager)
    return sim_manager


def poll(manager: FabricManager, clock: Clock, seconds: float = 5) -> PollOutcome:
    return health_poll(manager=manager, now=clock.tick(seconds))


def fault(manager: FabricManager, target_type: str, name: str, action: str) -> None:
    fault_inject(manager=manager, target_type=target_type, target_id=name, action=action)


def open_alerts() -> list[Alert]:
    return list(Alert.objects.filter(state=AlertState.OPEN).order_by("pk"))


SAMPLED_MODELS = (Device, Link, Switch, Host, Enclosure, PowerFeed)


def sampled_count() -> int:
    return sum(m.objects.count() for m in SAMPLED_MODELS)


# --- samples and health columns ---------------------------------------------------------------


def test_a_healthy_fabric_is_sampled_in_full_and_raises_nothing(
    synced: FabricManager, clock: Clock
) -> None:
    outcome = poll(synced, clock)

    assert outcome.ok and not outcome.stale
    assert outcome.samples == sampled_count() == HealthSample.objects.count()
    assert (outcome.opened, outcome.closed, outcome.health_changes) == ((), (), ())
    assert not HealthCondition.objects.exists()
    synced.refresh_from_db()
    assert synced.last_health_poll_at == clock.now
    assert synced.last_health_sample_at == clock.now
    assert synced.last_health_poll_error == ""


def test_a_device_sample_has_the_named_metrics(synced: FabricManager, clock: Clock) -> None:
    poll(synced, clock)
    gpu = Device.objects.get(external_id="gpu-a-01-1")
    sample = HealthSample.objects.get(target_type="device", target_id=gpu.pk)
    assert sample.health == Health.OK
    assert 40 <= sample.temperature_c < 60
    assert sample.correctable_errors is not None and sample.correctable_errors < 100
    assert (sample.uncorrectable_errors, sample.power_state) == (0.0, "on")
    assert sample.utilisation_pct is not None
    assert "power_w" in sample.metrics and "temperature_c" not in sample.metrics
    link_sample = HealthSample.objects.filter(target_type="link").first()
    assert (link_sample.link_width, link_sample.link_speed_gts) == (16, 32.0)


def test_between_full_samples_only_the_unwell_and_the_changed_are_stored(
    synced: FabricManager, clock: Clock, settings: Any
) -> None:
    settings.COMPOSER_HEALTH_SAMPLE_INTERVAL_S = 60
    poll(synced, clock)
    assert poll(synced, clock).samples == 0  # healthy, unchanged, 5 s later

    fault(synced, "device", "gpu-a-01-1", "degrade")
    outcome = poll(synced, clock)
    gpu = Device.objects.get(external_id="gpu-a-01-1")
    assert outcome.samples == 1
    assert HealthSample.objects.filter(target_id=gpu.pk, target_type="device").count() == 2
    assert poll(synced, clock).samples == 1  # still unwell: sampled at every poll

    assert poll(synced, clock, seconds=60).samples == sampled_count()  # the next full one


def test_health_changes_update_the_columns_and_a_free_device_s_state_and_are_audited(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "enclosure", "gpu-a-01", "fail")
    outcome = poll(synced, clock)

    gpus = Device.objects.filter(enclosure__name="gpu-a-01")
    assert {(d.health, d.state) for d in gpus} == {(Health.CRITICAL, DeviceState.FAILED)}
    assert set(outcome.devices_unhealthy) == {d.pk for d in gpus}
    assert Enclosure.objects.get(name="gpu-a-01").health == Health.CRITICAL
    enclosure_links = Link.objects.filter(b_port__enclosure__name="gpu-a-01") | Link.objects.filter(
        a_port__enclosure__name="gpu-a-01"
    )
    assert {(link.health, link.state) for link in enclosure_links} == {
        (Health.CRITICAL, LinkState.DOWN)
    }
    record = ChangeRecord.objects.get(
        target_type="device", target_id=gpus[0].pk, source="health poll"
    )
    assert (record.action, record.source) == (ChangeAction.CHANGED, "health poll")
    assert record.changes == {"health": ["ok", "critical"], "state": ["free", "failed"]}
    assert "enclosure gpu-a-01 failed" in record.message

    fault(synced, "enclosure", "gpu-a-01", "recover")
    outcome = poll(synced, clock)
    assert set(outcome.devices_recovered) == {d.pk for d in gpus}
    assert {(d.health, d.state) for d in Device.objects.filter(enclosure__name="gpu-a-01")} == {
        (Health.OK, DeviceState.FREE)
    }


def test_a_held_device_that_fails_keeps_its_state_for_the_sync_and_the_composer(
    synced: FabricManager, clock: Clock
) -> None:
    """Only FREE -> FAILED, and FAILED -> what holds it (or FREE), follow health at a poll:
    a reserved or bound device that fails, or one in maintenance, is never rewritten by it."""
    poll(synced, clock)
    held, maintained = Device.objects.filter(enclosure__name="gpu-a-01").order_by("pk")[:2]
    Device.objects.filter(pk=held.pk).update(state=DeviceState.RESERVED)
    Device.objects.filter(pk=maintained.pk).update(state=DeviceState.MAINTENANCE)
    fault(synced, "enclosure", "gpu-a-01", "fail")
    poll(synced, clock)
    states = dict(Device.objects.filter(enclosure__name="gpu-a-01").values_list("pk", "state"))
    assert (states[held.pk], states[maintained.pk]) == (
        DeviceState.RESERVED,
        DeviceState.MAINTENANCE,
    )

    # Bound to a host when a sync saw it fail:
    Device.objects.filter(pk=held.pk).update(
        state=DeviceState.FAILED, bound_host=synced.hosts.first()
    )
    fault(synced, "enclosure", "gpu-a-01", "recover")
    poll(synced, clock)
    states = dict(Device.objects.filter(enclosure__name="gpu-a-01").values_list("pk", "state"))
    # Still bound to a host: bound again, at once (not at the next sync).
    assert (states[held.pk], states[maintained.pk]) == (
        DeviceState.BOUND,
        DeviceState.MAINTENANCE,
    )


def test_a_powered_off_device_has_no_temperature(synced: FabricManager, clock: Clock) -> None:
    poll(synced, clock)
    fault(synced, "device", "gpu-a-01-1", "fail")
    poll(synced, clock)
    gpu = Device.objects.get(external_id="gpu-a-01-1")
    latest = HealthSample.objects.filter(target_type="device", target_id=gpu.pk).latest("taken_at")
    assert (latest.power_state, latest.temperature_c) == ("off", None)


# --- alerts -----------------------------------------------------------------------------------


def test_a_failed_switch_is_one_critical_alert_whose_blast_radius_lists_what_is_behind_it(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "switch", "cxl-leaf-a", "fail")
    outcome = poll(synced, clock)

    (alert,) = open_alerts()
    switch = Switch.objects.get(name="cxl-leaf-a")
    assert outcome.opened == (alert.pk,)
    assert (alert.source_type, alert.source_id, alert.source_name) == (
        "switch",
        switch.pk,
        "cxl-leaf-a",
    )
    assert (alert.rule, alert.severity) == ("element_failed", AlertSeverity.CRITICAL)
    assert alert.message == "Switch cxl-leaf-a failed: failed (injected fault)"
    # Every host of the tiny world hangs off this leaf: they lose every device. Their own
    # health stays ok (the devices did not fail), but the blast radius names them.
    radius = alert.blast_radius
    all_devices = sorted(Device.objects.values_list("pk", flat=True))
    assert radius["domain"] == f"switch:{switch.pk}"
    assert radius["effect"] == "lost"
    assert radius["devices"] == all_devices and radius["device_count"] == len(all_devices)
    assert radius["hosts"] == sorted(Host.objects.values_list("pk", flat=True))
    switch_links = Link.objects.filter(a_port__switch=switch) | Link.objects.filter(
        b_port__switch=switch
    )
    assert radius["links"] == sorted(link.pk for link in switch_links)
    assert radius["switches"] == [switch.pk]
    assert (radius["compositions"], radius["tenants"]) == ([], [])
    assert list(outcome.devices_affected) == all_devices
    assert {d.health for d in Device.objects.all()} == {Health.OK}

    # Duplicates fold into the open alert; recovery closes it after two clean polls.
    outcome = poll(synced, clock)
    assert (outcome.opened, outcome.repeated) == ((), 1)
    fault(synced, "switch", "cxl-leaf-a", "recover")
    assert poll(synced, clock).closed == ()
    outcome = poll(synced, clock)
    assert outcome.closed == (alert.pk,)
    alert.refresh_from_db()
    assert (alert.state, alert.closed_at, alert.occurrences) == (
        AlertState.CLOSED,
        clock.now,
        2,
    )
    assert not HealthCondition.objects.filter(alert__isnull=False).exists()


def test_a_failed_power_feed_folds_everything_it_powers_into_one_alert(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "power_feed", "pdu-a-1", "fail")
    outcome = poll(synced, clock)

    (alert,) = open_alerts()
    feed = PowerFeed.objects.get(name="pdu-a-1")
    assert (alert.source_type, alert.source_id, alert.severity) == (
        "power_feed",
        feed.pk,
        "critical",
    )
    powered = Device.objects.filter(enclosure__power_feed=feed)
    assert powered.exists()
    assert {d.health for d in powered} == {Health.CRITICAL}
    assert set(outcome.devices_unhealthy) == {d.pk for d in powered}
    assert {d.pk for d in powered} <= set(alert.blast_radius["devices"])
    # Several polls later: still one alert.
    poll(synced, clock)
    poll(synced, clock)
    assert open_alerts() == [alert]


def test_a_failed_device_in_a_degraded_enclosure_has_its_own_alert(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "enclosure", "gpu-a-01", "degrade")
    fault(synced, "device", "gpu-a-01-1", "fail")
    poll(synced, clock)
    poll(synced, clock)
    sources = {(a.source_type, a.source_name, a.rule) for a in open_alerts()}
    assert ("device", "gpu-a-01-1", "element_failed") in sources
    assert ("enclosure", "gpu-a-01", "element_degraded") in sources
    assert not any(name == "gpu-a-01-2" for _, name, _ in sources)  # folded: merely degraded


def test_a_degraded_device_warns_of_correctable_errors_after_two_polls(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "device", "gpu-a-01-1", "degrade")
    assert poll(synced, clock).opened == ()  # one poll is not enough for a warning
    outcome = poll(synced, clock)
    (alert,) = open_alerts()
    assert outcome.opened == (alert.pk,)
    assert (alert.rule, alert.severity) == ("ecc_correctable", "warning")
    assert alert.blast_radius["effect"] == "at_risk"
    assert alert.blast_radius["devices"] == [Device.objects.get(name="gpu-a-01-1").pk]


def test_a_degraded_link_warns_that_it_is_downtrained(synced: FabricManager, clock: Clock) -> None:
    poll(synced, clock)
    link = Link.objects.filter(a_port__switch__name="cxl-leaf-a").order_by("pk").first()
    fault_inject(manager=synced, target_type="link", target_id=link.pk, action="degrade")
    poll(synced, clock)
    poll(synced, clock)
    rules = {a.rule: a for a in open_alerts()}
    assert set(rules) == {"link_downtrained", "link_errors"}
    assert "x8 of x16" in rules["link_downtrained"].message
    link.refresh_from_db()
    assert (link.health, link.state) == (Health.WARNING, LinkState.DEGRADED)


def test_a_driver_error_opens_a_manager_alert_and_a_good_poll_closes_it(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fabric = store.fabric_get("sim")
    store.operation_fault_set(fabric=fabric, operation="health", mode="transient", count=1)

    outcome = poll(synced, clock)
    assert not outcome.ok and "busy" in outcome.error
    (alert,) = open_alerts()
    assert (alert.source_type, alert.source_id, alert.rule, alert.severity) == (
        "fabric_manager",
        synced.pk,
        "manager_unreachable",
        "critical",
    )
    assert alert.blast_radius["effect"] == "frozen"
    # Nothing is lost while the manager is away; every binding it runs is frozen.
    assert alert.blast_radius["device_count"] == 0
    assert alert.blast_radius["devices_degraded_count"] == Device.objects.count()
    synced.refresh_from_db()
    assert "busy" in synced.last_health_poll_error
    assert synced.last_health_poll_at == clock.now
    assert HealthSample.objects.filter(taken_at=clock.now).count() == 0

    outcome = poll(synced, clock)
    assert outcome.ok and outcome.closed == (alert.pk,)
    synced.refresh_from_db()
    assert synced.last_health_poll_error == ""


def test_an_alert_closed_by_hand_is_opened_afresh(synced: FabricManager, clock: Clock) -> None:
    poll(synced, clock)
    fault(synced, "switch", "cxl-spine-1", "fail")
    poll(synced, clock)
    (first,) = open_alerts()
    Alert.objects.filter(pk=first.pk).update(state=AlertState.CLOSED, closed_at=clock.now)
    poll(synced, clock)  # the rules' memory of an open alert is dropped
    poll(synced, clock)
    (second,) = open_alerts()
    assert second.pk != first.pk and second.source_id == first.source_id


def test_elements_in_maintenance_open_no_new_alerts(synced: FabricManager, clock: Clock) -> None:
    poll(synced, clock)
    Enclosure.objects.filter(name="gpu-a-01").update(state=ComponentState.MAINTENANCE)
    fault(synced, "enclosure", "gpu-a-01", "fail")
    poll(synced, clock)
    poll(synced, clock)
    assert open_alerts() == []
    assert Enclosure.objects.get(name="gpu-a-01").health == Health.CRITICAL

    Enclosure.objects.filter(name="gpu-a-01").update(state=ComponentState.ACTIVE)
    poll(synced, clock)
    assert [a.source_name for a in open_alerts()] == ["gpu-a-01"]


def test_a_registered_contributor_adds_compositions_and_tenants(
    synced: FabricManager, clock: Clock
) -> None:
    def compositions(impact: Impact) -> Mapping[str, Any]:
        return {
            "compositions": [
                {"id": 5, "name": "train-a", "tenant": {"id": 2, "name": "Acme"}, "state": "ready"}
            ],
            "tenants": [{"id": 2, "name": "Acme"}],
        }

    register_contributor(compositions)
    try:
        poll(synced, clock)
        fault(synced, "switch", "cxl-leaf-a", "fail")
        poll(synced, clock)
    finally:
        unregister_contributor(compositions)
    (alert,) = open_alerts()
    assert alert.blast_radius["compositions"] == [
        {"id": 5, "name": "train-a", "tenant_id": 2, "state": "ready"}
    ]
    assert (alert.blast_radius["tenants"], alert.blast_radius["composition_count"]) == ([2], 1)


# --- concurrency, staleness, scheduling, cost -------------------------------------------------


def test_a_poll_older_than_the_last_applied_one_is_dropped(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "switch", "cxl-leaf-a", "fail")
    outcome = health_poll(manager=synced, now=clock.now - timedelta(seconds=1))
    assert outcome.stale
    assert open_alerts() == []
    assert Switch.objects.get(name="cxl-leaf-a").health == Health.OK


@pytest.mark.django_db(transaction=True)
def test_two_polls_at_once_open_one_alert(postgres: None) -> None:
    manager = simulated_manager()
    inventory_sync(manager=manager)
    fault(manager, "switch", "cxl-leaf-a", "fail")
    barrier = threading.Barrier(4)
    outcomes: list[PollOutcome] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            outcomes.append(health_poll(manager=FabricManager.objects.get(pk=manager.pk)))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert Alert.objects.filter(state=AlertState.OPEN).count() == 1
    assert sum(len(o.opened) for o in outcomes) == 1
    assert HealthCondition.objects.filter(rule="element_failed").count() == 1


def test_managers_are_due_by_their_own_interval(synced: FabricManager, clock: Clock) -> None:
    other = simulated_manager(name="other", fabric="other")
    FabricManager.objects.filter(pk=other.pk).update(health_poll_interval_s=300)
    disabled = simulated_manager(name="off", fabric="off")
    FabricManager.objects.filter(pk=disabled.pk).update(is_enabled=False)
    assert [m.name for m in managers_due(clock.now)] == ["sim", "other"]  # by id

    poll(synced, clock)
    health_poll(manager=FabricManager.objects.get(pk=other.pk), now=clock.now)
    assert managers_due(clock.now + timedelta(seconds=10)) == []
    assert [m.name for m in managers_due(clock.now + timedelta(seconds=30))] == ["sim"]
    assert {m.name for m in managers_due(clock.now + timedelta(seconds=300))} == {"sim", "other"}


def test_a_new_manager_takes_the_default_poll_interval(db: None, settings: Any) -> None:
    settings.COMPOSER_HEALTH_POLL_INTERVAL_S = 12
    manager = FabricManager.objects.create(name="new", driver="simulated")
    assert manager.health_poll_interval_s == 12


def _steady_queries(manager: FabricManager, clock: Clock) -> int:
    poll(manager, clock)
    with CaptureQueriesContext(connection) as queries:
        poll(manager, clock)
    return len(queries)


def test_a_poll_costs_the_same_queries_at_any_size(db: None, clock: Clock) -> None:
    tiny = simulated_manager()
    inventory_sync(manager=tiny)
    bigger = simulated_manager(
        name="bigger", fabric="bigger", spec=WorldSpec(racks=2, hosts=8, gpu_enclosures=4)
    )
    inventory_sync(manager=bigger)
    assert (
        Device.objects.filter(manager=bigger).count()
        > 2 * Device.objects.filter(manager=tiny).count()
    )
    assert _steady_queries(tiny, clock) == _steady_queries(bigger, clock) <= 25


def test_readings_of_rows_the_console_does_not_hold_are_skipped(
    synced: FabricManager, clock: Clock
) -> None:
    everything = poll(synced, clock).readings
    gone = Device.objects.get(external_id="gpu-a-01-1")
    Device.objects.filter(pk=gone.pk).update(state=DeviceState.ABSENT)
    outcome = poll(synced, clock, seconds=120)
    assert outcome.readings == everything - 1
    assert not HealthSample.objects.filter(
        target_type="device", target_id=gone.pk, taken_at=clock.now
    )


def test_the_alert_of_an_element_no_longer_reported_closes(
    synced: FabricManager, clock: Clock
) -> None:
    poll(synced, clock)
    fault(synced, "device", "gpu-a-01-1", "fail")
    poll(synced, clock)
    (alert,) = open_alerts()
    Device.objects.filter(pk=alert.source_id).update(state=DeviceState.ABSENT)
    poll(synced, clock)
    assert poll(synced, clock).closed == (alert.pk,)
    assert not HealthCondition.objects.filter(alert__isnull=False).exists()
    poll(synced, clock, seconds=601)  # the flap window passed: nothing left to remember
    assert not HealthCondition.objects.exists()


def test_a_driver_that_fails_otherwise_is_recorded_on_the_manager(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver's bug (here an AttributeError) once crashed the poll task, nothing recorded."""

    class Broken:
        def health(self) -> list[Any]:
            raise AttributeError("'str' object has no attribute 'get'")

    monkeypatch.setattr("fabric.health.poll.get_driver", lambda manager: Broken())
    manager = FabricManager.objects.create(name="rf", driver="redfish", endpoint="http://x")
    outcome = health_poll(manager=manager)
    assert not outcome.ok and "AttributeError" in outcome.error
    manager.refresh_from_db()
    assert "its driver failed reading health (AttributeError)" in manager.last_health_poll_error
    (alert,) = open_alerts()
    assert alert.rule == "manager_unreachable"
