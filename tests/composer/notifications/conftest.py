"""Fixtures of the notification tests: a composition an enclosure failure hurts, the
failure and its recovery through real health polls, and a local HTTP receiver
(tests/support/http_receiver.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.db import transaction

from composer.choices import CompositionState, JobKind
from composer.models import Composition, Job
from composer.notifications import Actor
from composer.services.compositions import composition_request
from composer.services.health_poll import health_poll_run
from composer.tasks import composition_compose_task
from fabric.health.poll import PollOutcome
from fabric.models import Alert, FabricManager
from fabric.simulator.faults import fault_inject
from tests.composer.services.conftest import synced  # noqa: F401
from tests.support.http_receiver import receiver  # noqa: F401

L40S = {"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}], "memory_gib": 128}


@pytest.fixture
def c1(synced: FabricManager, acme: Any, alice: Any) -> Composition:  # noqa: F811
    """Acme's composition, ready: the enclosure of its GPU is what the tests fail."""
    composition = composition_request(tenant=acme, requested_by=alice, spec=L40S, name="c1")
    composition_compose_task.delay(
        Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk).pk
    )
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY
    return composition


def _poll(manager: FabricManager, capture: Any) -> PollOutcome:
    """One poll, its after-commit work (sending the notifications) run as in production."""
    with capture(execute=True), transaction.atomic():
        return health_poll_run(manager=manager)


@dataclass
class Failure:
    """Fail the enclosure of c1's GPU (one alert that hurts Acme) and recover it."""

    manager: FabricManager
    enclosure: str
    capture: Any

    def fail(self) -> Alert:
        fault_inject(
            manager=self.manager, target_type="enclosure", target_id=self.enclosure, action="fail"
        )
        outcome = _poll(self.manager, self.capture)
        return Alert.objects.get(pk__in=outcome.opened)

    def recover(self, alert: Alert) -> None:
        fault_inject(
            manager=self.manager,
            target_type="enclosure",
            target_id=self.enclosure,
            action="recover",
        )
        for _ in range(5):  # recovery is damped: a few clean polls close it
            _poll(self.manager, self.capture)
            alert.refresh_from_db()
            if not alert.is_open:
                return
        raise AssertionError("the alert did not close")


@pytest.fixture
def failure(
    synced: FabricManager,  # noqa: F811
    c1: Composition,
    django_capture_on_commit_callbacks: Any,
) -> Failure:
    device = c1.allocations.get(device__kind="gpu").device
    return Failure(
        manager=synced, enclosure=device.enclosure.name, capture=django_capture_on_commit_callbacks
    )


@pytest.fixture
def as_admin(admin_user: Any) -> Actor:
    return Actor(user=admin_user, source="test", remote_addr="127.0.0.1")


@pytest.fixture
def as_alice(alice: Any) -> Actor:
    return Actor(user=alice, source="test", remote_addr="127.0.0.1")


@pytest.fixture
def as_carol(carol: Any) -> Actor:
    return Actor(user=carol, source="test", remote_addr="127.0.0.1")
