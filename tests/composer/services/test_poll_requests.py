"""The outbox of health polls: a poll asked for while the task queue is away is recorded on
the manager, polled by the first health tick once Redis is back, and cleared by that poll."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone

from composer import tasks
from fabric.health.poll import health_poll, managers_due
from fabric.models import Alert, Device, FabricManager
from fabric.simulator.console.faults import simulator_fault

pytestmark = pytest.mark.django_db

BROKER_DOWN = ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


def test_a_fault_injected_while_the_broker_is_away_is_polled_once_it_is_back(
    synced: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 11: the promised poll was dropped, and a fault recovered soon after Redis
    returned was never seen. Now the request waits on the manager's row."""
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    health_poll(manager=synced)  # polled just now: its interval is not up for a while
    assert managers_due() == []
    with (
        mock.patch.object(tasks.health_poll_task, "delay", side_effect=BROKER_DOWN),
        django_capture_on_commit_callbacks(execute=True),
    ):
        simulator_fault(manager=synced, target_type="device", target_id=gpu.name, action="fail")

    synced.refresh_from_db()
    assert synced.poll_requested_at is not None
    assert managers_due() == [synced]
    assert not Alert.objects.exists()

    assert tasks.health_poll_due_task.delay().get() == 1  # Redis back: beat's health tick

    synced.refresh_from_db()
    assert synced.poll_requested_at is None
    assert Alert.objects.filter(source_name=gpu.name, closed_at__isnull=True).exists()
    assert managers_due() == []


def test_a_poll_leaves_a_request_made_after_its_readings_for_the_next_tick(
    synced: FabricManager,
) -> None:
    now = timezone.now()
    FabricManager.objects.filter(pk=synced.pk).update(poll_requested_at=now + timedelta(seconds=1))
    synced.refresh_from_db()
    health_poll(manager=synced, now=now)

    synced.refresh_from_db()
    assert synced.poll_requested_at == now + timedelta(seconds=1)
    assert managers_due(now) == [synced]
