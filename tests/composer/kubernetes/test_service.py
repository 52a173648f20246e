"""The controller's loop and command: each pass recorded for the console (leader or not,
its error), only the leader reconciling, and a command that refuses a tenant that does not
exist before it touches the cluster."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.utils import timezone

import composer.management.commands.k8s_controller as command
from composer.kubernetes.controller import Controller
from composer.kubernetes.leader import Elector
from composer.kubernetes.service import Loop, serve, serve_once
from composer.models import KubernetesController
from composer.services.bookings import booking_request
from composer.services.compositions import composition_request
from fabric.models import Device, FabricManager
from fabric.services.maintenance import maintenance_set
from tests.support.kube import FakeKube

pytestmark = pytest.mark.django_db


def test_each_pass_is_recorded_and_only_the_leader_reconciles(
    synced: FabricManager, acme: Any
) -> None:
    kube = FakeKube()
    leader = Elector(kube, "composer", "lease", "a")
    follower = Elector(kube, "composer", "lease", "b")

    report = serve_once(Controller(kube, default_tenant="acme"), leader, "a", 5)
    assert report is not None and report.pools and len(kube.slices) == len(report.pools)
    assert serve_once(Controller(kube, default_tenant="acme"), follower, "b", 5) is None

    a, b = KubernetesController.objects.order_by("identity")
    assert (a.identity, a.is_leader, a.pools, a.last_error) == ("a", True, len(report.pools), "")
    assert (b.identity, b.is_leader, b.pools) == ("b", False, 0)
    assert a.last_pass_at is not None and a.driver == "fabric.composer.dev"


def test_a_failed_pass_is_recorded_with_its_error_and_the_next_one_runs(
    synced: FabricManager, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube = FakeKube()

    def down() -> list[dict[str, Any]]:
        raise ConnectionError("API server unreachable")

    monkeypatch.setattr(kube, "claims_list", down)
    assert serve_once(Controller(kube), None, "solo", 5) is None
    record = KubernetesController.objects.get(identity="solo")
    assert record.last_error == "ConnectionError: API server unreachable"

    monkeypatch.undo()
    assert serve_once(Controller(kube), None, "solo", 5) is not None
    assert KubernetesController.objects.get(identity="solo").last_error == ""


def test_the_command_runs_a_pass_and_refuses_a_tenant_that_does_not_exist(
    synced: FabricManager, acme: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    kube = FakeKube()
    monkeypatch.setattr(command, "client_api", lambda kubeconfig, context: kube)

    with pytest.raises(CommandError, match="--tenant: no active tenant has the slug 'nobody'"):
        call_command("k8s_controller", "--once", "--tenant", "nobody")
    assert not kube.slices

    call_command("k8s_controller", "--once", "--tenant", "acme", "--identity", "one")
    assert kube.slices and kube.leases
    assert KubernetesController.objects.get(identity="one").is_leader


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_pass_comes_every_interval_and_at_once_after_the_console_s_events(
    synced: FabricManager, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    kube, ticks = FakeKube(), Ticks()
    loop = Loop(Controller(kube, default_tenant="acme"), None, "solo", 60, clock=ticks)
    assert loop.step() is not None  # the first step passes
    ticks.now += 5
    assert loop.step() is None  # nothing happened, the interval is not over
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None and f"gpu-{gpu.pk}" in published(kube)

    with django_capture_on_commit_callbacks(execute=True):  # the console composes it
        composition_request(tenant=acme, requested_by=None, name="c",
                            spec={"devices": [{"device": gpu.pk}]})  # fmt: skip
    ticks.now += 1
    report = loop.step()  # its state events call for a pass: the GPU leaves its slice

    assert report is not None and f"gpu-{gpu.pk}" not in published(kube)
    ticks.now += 1
    assert loop.step() is None  # no event since
    ticks.now += 60
    assert loop.step() is not None  # the interval is over


def test_a_booking_or_maintenance_calls_for_a_pass_at_once(
    synced: FabricManager, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Neither tells a live event; both are audited, and the audit trail is watched too."""
    kube, ticks = FakeKube(), Ticks()
    loop = Loop(Controller(kube, default_tenant="acme"), None, "solo", 60, clock=ticks)
    assert loop.step() is not None
    first, second = Device.objects.filter(kind="gpu").order_by("pk")[:2]
    assert {f"gpu-{first.pk}", f"gpu-{second.pk}"} <= set(published(kube))

    maintenance_set(target=first, on=True, reason="reseat")
    ticks.now += 1
    assert loop.step() is not None and f"gpu-{first.pk}" not in published(kube)

    start = timezone.now() + timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=True):
        booking_request(tenant=acme, requested_by=None, name="b",
                        spec={"devices": [{"device": second.pk}]},
                        starts_at=start, ends_at=start + timedelta(hours=1))  # fmt: skip
    ticks.now += 1
    assert loop.step() is not None and f"gpu-{second.pk}" not in published(kube)
    ticks.now += 1
    assert loop.step() is None  # nothing since


def published(kube: FakeKube) -> list[str]:
    return [d["name"] for s in kube.slices.values() for d in s["spec"]["devices"]]


def test_the_command_refuses_a_watch_longer_than_its_interval(
    synced: FabricManager, acme: Any
) -> None:
    with pytest.raises(CommandError, match="--watch"):
        call_command("k8s_controller", "--tenant", "acme", "--interval", "5", "--watch", "9")


def test_a_lease_that_cannot_be_reached_makes_no_leader_and_says_why(
    synced: FabricManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube = FakeKube()

    def away(namespace: str, name: str) -> None:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(kube, "lease_get", away)
    elector = Elector(kube, "composer", "lease", "a")

    assert serve_once(Controller(kube), elector, "a", 5) is None
    record = KubernetesController.objects.get(identity="a")
    assert not record.is_leader and "connection refused" in record.last_error
    assert not kube.slices


def test_the_loop_outlives_a_step_that_fails(
    synced: FabricManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()
    steps: list[int] = []

    def step(self: Loop) -> None:
        steps.append(1)
        if len(steps) == 1:
            raise OperationalError("the database went away")
        stop.set()

    monkeypatch.setattr(Loop, "step", step)
    serve(Controller(FakeKube()), None, "a", 5, stop, watch=0.01)

    assert len(steps) == 2
