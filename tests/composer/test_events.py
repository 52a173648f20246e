"""composer.events: recording, the audience, what a tenant is sent, fan-out, the outbox."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
import redis
from django.db import transaction
from django.utils import timezone

from composer import fanout
from composer.choices import CompositionState, EventType, JobKind, JobStatus
from composer.events import (
    blast_radius_for,
    event_layer_messages,
    event_record,
    events_publish_pending,
    events_visible,
    outbox,
    payload_for,
)
from composer.models import Composition, Event, EventAudience, Job
from composer.runner import run_job
from composer.states import composition_transition
from tests.factories.composer import MembershipFactory, UserFactory
from tests.support.websocket import use_layer

pytestmark = pytest.mark.django_db


def alert_payload(acme: Any, globex: Any) -> dict[str, Any]:
    """A switch failure that hurts one Acme and one Globex composition."""
    return {
        "alert": {
            "id": 9,
            "severity": "critical",
            "state": "open",
            "source_type": "switch",
            "source_name": "leaf-a",
            "rule": "element_failed",
            "message": "Switch leaf-a failed: port 7 to leaf-b down",
            "opened_at": "2026-11-30T09:00:00Z",
            "closed_at": None,
            "acknowledged_by": None,
            "acknowledged_at": None,
        },
        "blast_radius": {
            "devices": 12,
            "hosts": 2,
            "compositions": [
                {"id": 1, "name": "acme-train", "tenant_id": acme.pk, "state": "degraded"},
                {"id": 2, "name": "globex-infer", "tenant_id": globex.pk, "state": "degraded"},
            ],
            "composition_count": 2,
            "tenants": [acme.pk, globex.pk],
        },
    }


@pytest.fixture
def composition(acme: Any) -> Composition:
    return Composition.objects.create(tenant=acme, name="acme-train", spec={})


# --- recording ----------------------------------------------------------------------------------


def test_an_event_and_its_audience_are_written_and_published_after_commit(
    acme: Any, globex: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Through the channel layer (no Redis ledger), a published event is marked at once.
    with (
        mock.patch.object(outbox, "publish_many", return_value=False) as sent,
        django_capture_on_commit_callbacks(execute=True),
        transaction.atomic(),
    ):
        event = event_record(
            EventType.FABRIC_ALERT, alert_payload(acme, globex), tenant_ids=[globex.pk, acme.pk]
        )
        assert not sent.called, "published before the transaction committed"

    assert sent.call_count == 1
    event.refresh_from_db()
    assert event.payload["type"] == "fabric.alert"
    assert set(event.audience.values_list("tenant_id", flat=True)) == {acme.pk, globex.pk}
    assert event.published_at is not None


def test_a_rolled_back_transaction_records_and_publishes_nothing(
    acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with (
        mock.patch.object(outbox, "publish_many") as sent,
        django_capture_on_commit_callbacks(execute=True),
        transaction.atomic(),
    ):
        event_record(EventType.DEVICE_HEALTH, {"device": {"id": 1}}, tenant_ids=[acme.pk])
        transaction.set_rollback(True)
    assert not sent.called
    assert not Event.objects.exists()


def test_a_failed_publish_is_logged_not_raised_and_leaves_the_event_unpublished(
    acme: Any, django_capture_on_commit_callbacks: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        mock.patch.object(outbox, "publish_many", side_effect=ConnectionError("redis down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        event = event_record(EventType.DEVICE_HEALTH, {"device": {"id": 1}}, tenant_ids=[acme.pk])
    event.refresh_from_db()
    assert event.published_at is None
    assert "not published" in caplog.text


def test_the_payload_type_must_match_the_event_type(acme: Any) -> None:
    with pytest.raises(ValueError, match="payload type"):
        event_record(EventType.JOB_PROGRESS, {"type": "fabric.alert"})
    with pytest.raises(ValueError):
        event_record("no.such.type", {})


def test_recording_costs_two_queries_and_publishing_through_redis_none(
    acme: Any, django_assert_num_queries: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with (
        mock.patch.object(outbox, "publish_many"),
        django_capture_on_commit_callbacks() as callbacks,
        transaction.atomic(),
        django_assert_num_queries(2),
    ):
        event_record(EventType.DEVICE_HEALTH, {"device": {"id": 1}}, tenant_ids=[acme.pk])
    # Redis takes the ledger entry with the frames: the sweep marks it later, with others.
    with (
        mock.patch.object(outbox, "publish_many", return_value=True) as sent,
        django_assert_num_queries(0),
    ):
        for callback in callbacks:
            callback()
    assert sent.call_args.kwargs["ledger"] == (outbox.ledger_token(Event.objects.get()),)
    # Through the channel layer there is no ledger: one UPDATE marks it at once.
    with (
        mock.patch.object(outbox, "publish_many", return_value=False),
        django_assert_num_queries(1),
    ):
        for callback in callbacks:
            callback()


def test_a_composition_transition_records_its_state_event(composition: Composition) -> None:
    composition_transition(composition, CompositionState.PLACING, reason="Placing")
    event = Event.objects.get()
    assert event.type == EventType.COMPOSITION_STATE
    assert event.composition_id == composition.pk
    assert event.payload == {
        "type": "composition.state",
        "composition_id": composition.pk,
        "name": "acme-train",
        "tenant_id": composition.tenant_id,
        "from": "requested",
        "to": "placing",
        "reason": "Placing",
    }
    assert list(event.audience.values_list("tenant_id", flat=True)) == [composition.tenant_id]


def _half_way(progress: Any) -> dict[str, int]:
    logging.getLogger("composer.test").info("binding")  # captured: a "composer" logger
    progress(1, 2, "half way")
    return {}


def test_a_job_run_records_its_start_and_end_and_a_quick_one_nothing_between(
    acme: Any, composition: Composition
) -> None:
    job = Job.objects.create(kind=JobKind.COMPOSE, tenant=acme, target_type="composition",
                             target_id=composition.pk, target_label="acme-train")  # fmt: skip
    run_job(job, _half_way)  # well within a second of its start
    payloads = [e.payload for e in Event.objects.filter(job=job).order_by("id")]
    assert [p["status"] for p in payloads] == ["running", "succeeded"]
    assert [p["percent"] for p in payloads] == [0, 100]
    assert payloads[0]["last_log_line_id"] is None
    # Its log lines were written together at the end, before the last event names them.
    newest_line = job.log_lines.order_by("-id").first()
    assert payloads[1]["last_log_line_id"] == newest_line.pk
    assert [line.message for line in job.log_lines.order_by("id")][1] == "binding"
    assert all(p["composition_id"] == composition.pk for p in payloads)


def test_a_job_run_reports_progress_and_log_as_it_goes_once_a_second_has_passed(
    acme: Any, composition: Composition, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("composer.joblog.PROGRESS_INTERVAL_S", 0.0)
    job = Job.objects.create(kind=JobKind.COMPOSE, tenant=acme, target_type="composition",
                             target_id=composition.pk, target_label="acme-train")  # fmt: skip
    run_job(job, _half_way)
    payloads = [e.payload for e in Event.objects.filter(job=job).order_by("id")]
    assert [p["status"] for p in payloads] == ["running", "running", "succeeded"]
    assert [p["percent"] for p in payloads] == [0, 50, 100]
    assert payloads[1]["message"] == "half way"
    newest_line = job.log_lines.order_by("-id").first()
    assert payloads[2]["last_log_line_id"] == newest_line.pk
    assert all(p["composition_id"] == composition.pk for p in payloads)
    event = Event.objects.filter(job=job).first()
    assert event.composition_id == composition.pk
    assert list(event.audience.values_list("tenant_id", flat=True)) == [acme.pk]


def test_a_fabric_job_without_a_tenant_is_for_operators_only(db: None) -> None:
    job = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    run_job(job, lambda progress: {})
    assert Event.objects.filter(job=job).count() == 2
    assert not EventAudience.objects.exists()
    assert Event.objects.filter(job=job).last().payload["status"] == JobStatus.SUCCEEDED


# --- what a tenant is sent ----------------------------------------------------------------------


def test_a_tenant_gets_only_its_own_compositions_of_an_alert_and_no_tenant_list(
    acme: Any, globex: Any
) -> None:
    event = Event(type=EventType.FABRIC_ALERT, payload=alert_payload(acme, globex))

    cut = payload_for(event, tenant_id=globex.pk)

    radius = cut["blast_radius"]
    assert radius["compositions"] == [
        {"id": 2, "name": "globex-infer", "tenant_id": globex.pk, "state": "degraded"}
    ]
    assert radius["composition_count"] == 1
    assert "tenants" not in radius
    # How much of the fabric it takes is the operators' to know.
    assert "devices" not in radius and "hosts" not in radius
    operator_only = {"source_id", "source_name", "acknowledged_by"}
    assert cut["alert"] == {
        **{k: v for k, v in event.payload["alert"].items() if k not in operator_only},
        "message": "A switch your compositions depend on failed.",
    }
    assert "acme" not in str(cut) and "leaf" not in str(cut)


def test_a_tenant_gets_its_own_degraded_compositions_of_an_alert(acme: Any, globex: Any) -> None:
    """Degraded, for whom: the compositions a failure leaves with fewer paths reach their
    own tenant, cut like the compositions it hits, with the count recomputed."""
    payload = alert_payload(acme, globex)
    payload["blast_radius"]["compositions_degraded"] = [
        {"id": 3, "name": "acme-mem", "tenant_id": acme.pk, "state": "ready"},
        {"id": 4, "name": "globex-mem", "tenant_id": globex.pk, "state": "ready"},
    ]
    payload["blast_radius"]["compositions_degraded_count"] = 2
    event = Event(type=EventType.FABRIC_ALERT, payload=payload)

    radius = payload_for(event, tenant_id=acme.pk)["blast_radius"]
    assert radius["compositions_degraded"] == [
        {"id": 3, "name": "acme-mem", "tenant_id": acme.pk, "state": "ready"}
    ]
    assert radius["compositions_degraded_count"] == 1
    stored = blast_radius_for(payload["blast_radius"], tenant_id=globex.pk)
    assert [c["name"] for c in stored["compositions_degraded"]] == ["globex-mem"]
    assert stored["compositions_degraded_count"] == 1
    assert "acme" not in str(stored)


def test_an_object_of_another_tenant_is_never_sent(acme: Any, globex: Any) -> None:
    state = Event(type=EventType.COMPOSITION_STATE, payload={"tenant_id": acme.pk, "name": "x"})
    assert payload_for(state, tenant_id=globex.pk) is None
    assert payload_for(state, tenant_id=acme.pk) == {"tenant_id": acme.pk, "name": "x"}
    fabric_job = Event(type=EventType.JOB_PROGRESS, payload={"tenant_id": None})
    assert payload_for(fabric_job, tenant_id=acme.pk) is None
    nested = Event(
        type=EventType.DEVICE_HEALTH,
        payload={
            "device": {"id": 4},
            "holder": {"id": 1, "tenant_id": acme.pk},
            "tenant": {"id": acme.pk, "name": "Acme"},
            "tenant_ids": [acme.pk],
            "rows": [[{"tenant_id": acme.pk}, {"tenant_id": globex.pk}]],
        },
    )
    assert payload_for(nested, tenant_id=globex.pk) == {
        "device": {"id": 4},
        "rows": [[{"tenant_id": globex.pk}]],
    }


def test_a_tenant_hears_of_its_own_devices_health_only(acme: Any, globex: Any) -> None:
    def change(name: str, tenant_id: int | None) -> dict[str, Any]:
        return {"target_type": "device", "id": 1, "name": name, "tenant_id": tenant_id}

    event = Event(
        type=EventType.DEVICE_HEALTH,
        payload={
            "changes": [change("gpu-a", acme.pk), change("gpu-g", globex.pk), change("sw", None)],
            "change_count": 3,
        },
    )
    assert payload_for(event, tenant_id=acme.pk) == {
        "changes": [change("gpu-a", acme.pk)],
        "change_count": 1,
    }


def test_a_member_of_two_tenants_gets_both_parts(acme: Any, globex: Any) -> None:
    event = Event(type=EventType.FABRIC_ALERT, payload=alert_payload(acme, globex))
    cut = payload_for(event, tenant_id={acme.pk, globex.pk})
    assert len(cut["blast_radius"]["compositions"]) == 2
    assert cut["blast_radius"]["composition_count"] == 2
    assert "tenants" not in cut["blast_radius"]


# --- who sees what ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("admin_user", {"acme", "globex", "both", "fabric"}),
        ("alice", {"acme", "both"}),
        ("bob", {"acme", "both"}),
        ("carol", {"globex", "both"}),
    ],
)
def test_each_persona_sees_only_its_events(
    persona: str, visible: set[str], acme: Any, globex: Any, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)
    recorded = {
        "acme": event_record(EventType.DEVICE_HEALTH, {}, tenant_ids=[acme.pk]),
        "globex": event_record(EventType.DEVICE_HEALTH, {}, tenant_ids=[globex.pk]),
        "both": event_record(EventType.FABRIC_ALERT, {}, tenant_ids=[acme.pk, globex.pk]),
        "fabric": event_record(EventType.DEVICE_HEALTH, {}),
    }
    seen = list(events_visible(user))
    assert [e.pk for e in seen] == sorted(recorded[name].pk for name in visible)
    assert [e.pk for e in events_visible(user, since=recorded["both"].pk)] == [
        recorded[name].pk for name in ("fabric",) if name in visible
    ]


def test_anonymous_and_inactive_users_see_nothing(acme: Any, alice: Any) -> None:
    from django.contrib.auth.models import AnonymousUser

    event_record(EventType.DEVICE_HEALTH, {}, tenant_ids=[acme.pk])
    assert not events_visible(AnonymousUser()).exists()
    alice.is_active = False
    assert not events_visible(alice).exists()


def test_a_member_of_two_tenants_sees_an_event_once(acme: Any, globex: Any) -> None:
    user = UserFactory.create(username="dave")
    MembershipFactory(user=user, tenant=acme)
    MembershipFactory(user=user, tenant=globex)
    event_record(EventType.FABRIC_ALERT, {}, tenant_ids=[acme.pk, globex.pk])
    assert events_visible(user).count() == 1


# --- fan-out ------------------------------------------------------------------------------------


def test_fan_out_sends_full_payloads_to_operators_and_cuts_to_tenants(
    acme: Any, globex: Any, composition: Composition
) -> None:
    job = Job.objects.create(kind=JobKind.COMPOSE, tenant=acme)
    event = event_record(
        EventType.FABRIC_ALERT,
        alert_payload(acme, globex),
        tenant_ids=[acme.pk, globex.pk],
        composition=composition.pk,
        job=job,
    )
    groups = {
        group: message for group, message in event_layer_messages(event, [acme.pk, globex.pk])
    }
    assert set(groups) == {
        "operators",
        f"tenant-{acme.pk}",
        f"tenant-{globex.pk}",
        f"composition-{composition.pk}",
        f"job-{job.pk}",
    }
    assert groups["operators"]["tenant_id"] is None
    assert "globex-infer" in groups["operators"]["text"]
    assert groups[f"tenant-{acme.pk}"]["tenant_id"] == acme.pk
    assert "globex" not in groups[f"tenant-{acme.pk}"]["text"]
    # The composition and job groups carry the owner's (the job's tenant's) cut.
    owner_cut = groups[f"tenant-{acme.pk}"]
    assert groups[f"composition-{composition.pk}"] == groups[f"job-{job.pk}"] == owner_cut


def test_a_tenantless_jobs_group_gets_the_operators_message(db: None) -> None:
    job = Job.objects.create(kind=JobKind.INVENTORY_SYNC)
    event = event_record(EventType.JOB_PROGRESS, {"tenant_id": None}, job=job)
    groups = dict(event_layer_messages(event, []))
    assert set(groups) == {"operators", f"job-{job.pk}"}
    assert groups[f"job-{job.pk}"]["tenant_id"] is None


# --- the outbox ---------------------------------------------------------------------------------


def test_the_sweep_publishes_what_failed_once_it_is_old_enough(
    acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with (
        mock.patch.object(outbox, "publish_many", side_effect=ConnectionError("redis down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        failed = event_record(EventType.DEVICE_HEALTH, {"device": {"id": 1}}, tenant_ids=[acme.pk])
        fresh = event_record(EventType.DEVICE_HEALTH, {"device": {"id": 2}})
    Event.objects.filter(pk=failed.pk).update(at=timezone.now() - timedelta(seconds=10))

    with mock.patch.object(outbox, "publish_many") as sent:
        assert events_publish_pending() == 1  # `fresh` may still be on its way

    groups = [group for group, _ in sent.call_args.args[0]]
    assert groups == ["operators", f"tenant-{acme.pk}"]
    failed.refresh_from_db()
    fresh.refresh_from_db()
    assert failed.published_at is not None and fresh.published_at is None
    with mock.patch.object(outbox, "publish_many") as sent:
        assert events_publish_pending(older_than_s=0) == 1
        assert events_publish_pending(older_than_s=0) == 0


@pytest.fixture
def redis_events(redis_url: str, settings: Any) -> str:
    """Events on a real Redis under a prefix of their own: the hub's publish and ledger."""
    settings.COMPOSER_EVENTS_HUB = True
    return use_layer(settings, redis_url)


def test_the_sweep_marks_what_the_ledger_says_went_out_and_sends_the_rest(
    acme: Any, redis_events: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        sent = event_record(EventType.DEVICE_HEALTH, {"device": {"id": 1}}, tenant_ids=[acme.pk])
    with (
        mock.patch.object(fanout, "publish_many", side_effect=redis.ConnectionError("down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        lost = event_record(EventType.DEVICE_HEALTH, {"device": {"id": 2}}, tenant_ids=[acme.pk])
    sent.refresh_from_db()
    assert sent.published_at is None, "published through Redis: marked by the sweep"
    assert fanout.ledger_published([outbox.ledger_token(sent), outbox.ledger_token(lost)]) == {
        outbox.ledger_token(sent)
    }

    with mock.patch.object(fanout, "publish_many", wraps=fanout.publish_many) as again:
        assert events_publish_pending(older_than_s=0) == 1  # only the lost one goes out again
    assert [frame[1] for frame in again.call_args.args[0]] == [lost.pk, lost.pk]
    assert Event.objects.filter(published_at__isnull=True).count() == 0
    assert fanout.ledger_published([outbox.ledger_token(sent)]) == set(), "forgotten once marked"


def test_the_ledger_vouches_for_an_event_only_with_its_time(
    acme: Any, redis_events: str, django_capture_on_commit_callbacks: Any
) -> None:
    # Another database's event 1 (a previous test run on the same Redis) was published...
    with django_capture_on_commit_callbacks(execute=True):
        event = event_record(EventType.DEVICE_HEALTH, {}, tenant_ids=[acme.pk])
    # ...this one has the same id but another time: it is not taken as sent.
    Event.objects.filter(pk=event.pk).update(at=event.at - timedelta(seconds=1))
    event.refresh_from_db()
    assert fanout.ledger_published([outbox.ledger_token(event)]) == set()
    assert events_publish_pending(older_than_s=0) == 1


def test_the_sweep_takes_several_batches_while_they_come_full(acme: Any) -> None:
    for _ in range(5):
        event_record(EventType.DEVICE_HEALTH, {})
    Event.objects.update(published_at=None)
    with mock.patch.object(outbox, "publish_many") as sent:
        assert events_publish_pending(older_than_s=0, limit=2) == 5
    assert sent.call_count == 5
    Event.objects.update(published_at=None)
    with mock.patch.object(outbox, "publish_many"):
        assert events_publish_pending(older_than_s=0, limit=2, rounds=2) == 4


def test_the_sweep_stops_at_the_first_failure_and_keeps_the_rest(acme: Any) -> None:
    first = event_record(EventType.DEVICE_HEALTH, {})
    second = event_record(EventType.DEVICE_HEALTH, {})
    Event.objects.update(published_at=None)
    with mock.patch.object(outbox, "publish_many", side_effect=[None, ConnectionError("down")]):
        assert events_publish_pending(older_than_s=0) == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.published_at is not None and second.published_at is None


def test_the_sweep_is_a_fixed_number_of_queries(
    acme: Any, globex: Any, django_assert_max_num_queries: Any
) -> None:
    job = Job.objects.create(kind=JobKind.COMPOSE, tenant=acme)
    for _ in range(5):
        event_record(EventType.JOB_PROGRESS, {"tenant_id": acme.pk}, tenant_ids=[acme.pk], job=job)
        event_record(EventType.FABRIC_ALERT, {}, tenant_ids=[acme.pk, globex.pk])
    Event.objects.update(published_at=None)
    with mock.patch.object(outbox, "publish_many"), django_assert_max_num_queries(3):
        assert events_publish_pending(older_than_s=0) == 10


def test_beat_runs_the_sweep_every_few_seconds(acme: Any, settings: Any) -> None:
    from composer.tasks import events_publish_pending_task

    entry = settings.CELERY_BEAT_SCHEDULE["events-publish-pending"]
    assert entry["task"] == events_publish_pending_task.name
    assert entry["schedule"] <= 10
    event_record(EventType.DEVICE_HEALTH, {})
    Event.objects.update(at=timezone.now() - timedelta(seconds=30))
    with mock.patch.object(outbox, "publish_many"):
        assert events_publish_pending_task.delay().get() == 1
