"""A health poll as the console lives it: fabric's alert, degraded compositions, events for
operators and for the hurt tenant only, recovery; against the tiny simulated world."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, EventType, JobKind
from composer.events import payload_for
from composer.models import AlertAudience, Composition, Event, Job
from composer.services.compositions import composition_request
from composer.services.health_poll import health_poll_run
from composer.tasks import composition_compose_task
from fabric.choices import DeviceState
from fabric.models import Alert, FabricManager
from fabric.services.alerts import alert_acknowledge, alerts_visible_to
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from tests.support.compose import composed
from tests.support.raw_driver import RawDriver

pytestmark = pytest.mark.django_db

L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


@pytest.fixture
def ready(synced: FabricManager, acme: Any, alice: Any) -> Composition:
    composition = composition_request(tenant=acme, requested_by=alice, spec=L40S, name="c1")
    composition_compose_task.delay(
        Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk).pk
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    return composition


def enclosure_of(composition: Composition) -> Any:
    allocation = composition.allocations.get(device__kind="gpu", released_at__isnull=True)
    return allocation.device.enclosure


def test_a_failed_enclosure_opens_one_alert_that_degrades_the_composition_it_hurts(
    synced: FabricManager, ready: Composition, alice: Any, carol: Any
) -> None:
    health_poll_run(manager=synced)  # a healthy baseline: nothing opens
    assert not Alert.objects.exists()
    enclosure = enclosure_of(ready)
    fault_inject(manager=synced, target_type="enclosure", target_id=enclosure.name, action="fail")

    outcome = health_poll_run(manager=synced)

    alert = Alert.objects.get(pk__in=outcome.opened)
    assert (alert.source_type, alert.source_name, alert.severity) == (
        "enclosure",
        enclosure.name,
        "critical",
    )
    radius = alert.blast_radius
    assert [c["id"] for c in radius["compositions"]] == [ready.pk]
    assert radius["tenants"] == [ready.tenant_id]
    ready.refresh_from_db()
    assert ready.state == CompositionState.DEGRADED
    assert enclosure.name in ready.state_changes.last().reason

    # The alert's event reaches operators and Acme (its own composition only), not Globex.
    event = Event.objects.get(type=EventType.FABRIC_ALERT)
    assert list(event.audience.values_list("tenant_id", flat=True)) == [ready.tenant_id]
    assert payload_for(event, tenant_id=ready.tenant_id)["blast_radius"]["compositions"] == [
        {"id": ready.pk, "name": "c1", "tenant_id": ready.tenant_id, "state": "ready"}
    ]
    for_acme = payload_for(event, tenant_id=ready.tenant_id)
    assert "tenants" not in for_acme["blast_radius"]
    # Fabric internals stay with the operators: no console id, no element name.
    assert for_acme["alert"]["message"] and "source_id" not in for_acme["alert"]
    assert "source_name" not in for_acme["alert"] and event.payload["alert"]["source_name"]
    assert list(alerts_visible_to(alice)) == [alert]
    assert list(alerts_visible_to(carol)) == []
    assert AlertAudience.objects.filter(alert=alert).count() == 1

    # The composition's own state change and the devices' health changes are events too.
    assert Event.objects.filter(type=EventType.COMPOSITION_STATE, composition=ready).exists()
    health = Event.objects.get(type=EventType.DEVICE_HEALTH)
    held = [c for c in health.payload["changes"] if c["composition_id"] == ready.pk]
    assert held and held[0]["health"] == "critical"
    for_acme = payload_for(health, tenant_id=ready.tenant_id)["changes"]
    assert {c["composition_id"] for c in for_acme} == {ready.pk}


def test_recovery_closes_the_alert_and_the_composition_is_ready_again(
    synced: FabricManager, ready: Composition
) -> None:
    enclosure = enclosure_of(ready)
    fault_inject(manager=synced, target_type="enclosure", target_id=enclosure.name, action="fail")
    alert = Alert.objects.get(pk__in=health_poll_run(manager=synced).opened)
    fault_inject(
        manager=synced, target_type="enclosure", target_id=enclosure.name, action="recover"
    )

    closed: tuple[int, ...] = ()
    for _ in range(3):  # recovery is damped: a few clean polls close it
        closed += health_poll_run(manager=synced).closed
    alert.refresh_from_db()
    ready.refresh_from_db()
    assert alert.pk in closed and alert.state == "closed"
    assert ready.state == CompositionState.READY
    states = [e.payload["alert"]["state"] for e in Event.objects.filter(type="fabric.alert")]
    assert states[0] == "open" and states[-1] == "closed"


def test_a_device_the_inventory_sync_marked_failed_is_back_at_the_first_clean_poll(
    synced: FabricManager, ready: Composition
) -> None:
    """The sync sets the device FAILED while it is down and only the next sync (minutes
    later) clears it; the composition must not wait for that, nor for anyone's *Heal now*."""
    gpu = ready.allocations.get(device__kind="gpu").device
    fault_inject(manager=synced, target_type="device", target_id=gpu.name, action="fail")
    health_poll_run(manager=synced)
    inventory_sync(manager=synced)
    gpu.refresh_from_db()
    ready.refresh_from_db()
    assert (gpu.state, ready.state) == (DeviceState.FAILED, CompositionState.DEGRADED)

    fault_inject(manager=synced, target_type="device", target_id=gpu.name, action="recover")
    health_poll_run(manager=synced)

    ready.refresh_from_db()
    assert ready.state == CompositionState.READY and ready.failure_reason == ""
    change = ready.state_changes.last()
    assert (change.from_state, change.to_state) == ("degraded", "ready")
    assert change.reason.startswith(f"Recovered: {gpu.name} back (health poll)")
    event = Event.objects.filter(type=EventType.COMPOSITION_STATE, composition=ready).last()
    assert (event.payload["from"], event.payload["to"]) == ("degraded", "ready")
    assert list(event.audience.values_list("tenant_id", flat=True)) == [ready.tenant_id]


def test_an_acknowledgement_is_an_event_for_the_same_audience(
    synced: FabricManager, ready: Composition, admin_user: Any
) -> None:
    enclosure = enclosure_of(ready)
    fault_inject(manager=synced, target_type="enclosure", target_id=enclosure.name, action="fail")
    alert = Alert.objects.get(pk__in=health_poll_run(manager=synced).opened)

    assert alert_acknowledge(alert=alert, user=admin_user)
    assert not alert_acknowledge(alert=alert, user=admin_user)  # once

    event = Event.objects.get(type=EventType.ALERT_ACKNOWLEDGED)
    assert event.payload["alert"]["acknowledged_by"] == "admin"
    assert "acknowledged_by" not in payload_for(event, tenant_id=ready.tenant_id)["alert"]
    assert list(event.audience.values_list("tenant_id", flat=True)) == [ready.tenant_id]


def test_a_poll_that_finds_nothing_new_records_no_event(
    synced: FabricManager, ready: Composition
) -> None:
    health_poll_run(manager=synced)
    before = Event.objects.count()
    health_poll_run(manager=synced)
    assert Event.objects.count() == before


def test_each_composition_s_reason_names_only_the_alert_that_hurt_it(
    synced: FabricManager, ready: Composition, globex: Any, carol: Any
) -> None:
    """Two tenants lose a device in the same poll: neither reason names the other's alert."""
    h100 = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 1}]}
    theirs = composition_request(tenant=globex, requested_by=carol, spec=h100, name="g1")
    composition_compose_task.delay(Job.objects.get(kind=JobKind.COMPOSE, target_id=theirs.pk).pk)
    ours_gpu = ready.allocations.get(device__kind="gpu").device
    their_gpu = theirs.allocations.get(device__kind="gpu").device
    for device in (ours_gpu, their_gpu):
        fault_inject(manager=synced, target_type="device", target_id=device.name, action="fail")

    outcome = health_poll_run(manager=synced)

    assert len(outcome.opened) == 2
    ready.refresh_from_db()
    theirs.refresh_from_db()
    assert ready.state == theirs.state == CompositionState.DEGRADED
    assert their_gpu.name not in ready.failure_reason
    assert ours_gpu.name not in theirs.failure_reason
    ours_alert = Alert.objects.get(source_type="device", source_id=ours_gpu.pk)
    assert f"alert {ours_alert.pk}" not in theirs.failure_reason


def test_every_tenant_holding_a_slice_of_a_device_hears_of_its_health(
    synced: FabricManager, acme: Any, alice: Any, globex: Any, carol: Any
) -> None:
    """Acme and Globex each hold a slice of the one memory device: when it fails, the
    `device.health` event carries the change for each holder, and each tenant gets its own."""
    mine = composed(tenant=acme, user=alice, spec={"memory_gib": 128}, name="acme-mem")
    theirs = composed(tenant=globex, user=carol, spec={"memory_gib": 128}, name="globex-mem")
    (memory,) = {a.device for c in (mine, theirs) for a in c.allocations.all()}
    health_poll_run(manager=synced)
    fault_inject(manager=synced, target_type="device", target_id=memory.name, action="fail")
    health_poll_run(manager=synced)

    event = Event.objects.filter(type=EventType.DEVICE_HEALTH).latest("pk")
    assert set(event.audience.values_list("tenant_id", flat=True)) == {acme.pk, globex.pk}
    rows = [c for c in event.payload["changes"] if c["id"] == memory.pk]
    assert {(r["tenant_id"], r["composition_id"]) for r in rows} == {
        (acme.pk, mine.pk),
        (globex.pk, theirs.pk),
    }
    assert all(r["health"] == "critical" for r in rows)
    for tenant, composition in ((acme, mine), (globex, theirs)):
        cut = payload_for(event, tenant_id=tenant.pk)
        assert cut is not None
        assert [(c["id"], c["composition_id"]) for c in cut["changes"]] == [
            (memory.pk, composition.pk)
        ]
        assert cut["change_count"] == 1


def test_a_manager_that_reports_only_a_failed_power_feed_degrades_the_composition_behind_it(
    synced: FabricManager, ready: Composition, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raw readings only, as a real manager gives them: the feed failed, nothing else said."""
    raw = RawDriver(synced)
    raw.only = True
    monkeypatch.setattr("fabric.health.poll.get_driver", lambda _manager: raw)
    feed = enclosure_of(ready).power_feed
    raw.faults["power_feed", feed.external_id] = "critical"

    outcome = health_poll_run(manager=synced)

    (alert,) = Alert.objects.filter(pk__in=outcome.opened)
    assert (alert.source_type, alert.source_id) == ("power_feed", feed.pk)
    assert [c["id"] for c in alert.blast_radius["compositions"]] == [ready.pk]
    ready.refresh_from_db()
    assert ready.state == CompositionState.DEGRADED
    assert ready.allocations.get(device__kind="gpu").device.health == "critical"
