"""A fabric manager's credentials reach its driver and nothing else: one known secret, entered
through the page and the API, then looked for on every surface an operator or a tenant
could read — pages, API answers, the admin, logs, job logs and the audit trail."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.models import Job, JobLogLine
from composer.services.jobs import inventory_sync_job_create, inventory_sync_run
from fabric.choices import ChangeAction
from fabric.drivers.base import DriverError, ProbeReport
from fabric.drivers.registry import DRIVERS
from fabric.models import ChangeRecord, FabricManager
from fabric.simulator.driver import SimulatedDriver
from tests.fabric.simulated_world import simulated_manager
from tests.factories.fabric import FabricManagerFactory

SECRET = "Leak-Canary-4e1f-9b7c-secret"
USERNAME = "canary-operator-name"
API_SECRET = "Leak-Canary-api-77d0-token"


class EchoingDriver(SimulatedDriver):
    """The simulated manager behind a driver that was given credentials and, on a refused
    probe, says what it sent (as a careless real manager's error might)."""

    seen: list[Mapping[str, str]] = []

    def __init__(self, *, credentials: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.credentials = dict(credentials or {})
        EchoingDriver.seen.append(self.credentials)

    def probe(self) -> ProbeReport:
        if self.settings.get("refuse"):
            raise DriverError(
                f"login refused for {self.credentials.get('username')} with password "
                f"{self.credentials.get('password')}",
                permanent=True,
            )
        return super().probe()


@pytest.fixture
def echo_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(DRIVERS, "echo", f"{__name__}.EchoingDriver")
    EchoingDriver.seen = []


@pytest.mark.django_db(transaction=True)
def test_a_managers_credentials_appear_on_no_surface(
    echo_driver: None,
    admin_user: Any,
    alice: Any,
    client_as: Callable[[Any], Client],
    api_as: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    simulated_manager(name="world", fabric="sim")
    bodies: list[bytes] = []
    client = client_as(admin_user)

    # Added through the form (tested first with the entered values), then through the API.
    form = {
        "name": "fm-canary",
        "driver": "echo",
        "endpoint": "https://fm.example",
        "settings": '{"fabric": "sim"}',
        "verify_tls": "on",
        "username": USERNAME,
        "password": SECRET,
        "is_enabled": "on",
        "health_poll_interval_s": "30",
    }
    bodies.append(client.post(reverse("fabric:manager_test_entered"), form).content)
    refused = client.post(
        reverse("fabric:manager_test_entered"), {**form, "settings": '{"refuse": true}'}
    )
    assert b"login refused for" in refused.content  # the driver's reason is shown...
    bodies.append(refused.content)  # ...with the secrets masked out of it
    created = client.post(reverse("fabric:manager_create"), form)
    assert created.status_code == 302
    bodies.append(client.post(reverse("fabric:manager_create"), form).content)  # name taken
    manager = FabricManager.objects.get(name="fm-canary")
    api = api_as(admin_user)
    api_created = api.post(
        "/api/v1/fabric-managers/",
        {
            "name": "fm-canary-api",
            "driver": "echo",
            "settings": {"fabric": "sim"},
            "token": API_SECRET,
        },
        format="json",
    )
    assert api_created.status_code == 201
    bodies.append(api_created.content)

    # Every page and answer that shows managers, as the operator.
    for url in (
        reverse("fabric:manager_list"),
        reverse("fabric:manager_detail", args=[manager.pk]),
        reverse("fabric:manager_edit", args=[manager.pk]),
        reverse("fabric:manager_delete", args=[manager.pk]),
        reverse("admin:fabric_fabricmanager_changelist"),
        reverse("admin:fabric_fabricmanager_change", args=[manager.pk]),
        reverse("admin:fabric_changerecord_changelist"),
        "/api/v1/fabric-managers/",
        f"/api/v1/fabric-managers/{manager.pk}/",
        "/api/schema/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        bodies.append(response.content)
    bodies.append(client.post(reverse("fabric:manager_test", args=[manager.pk])).content)
    tested = api.post(f"/api/v1/fabric-managers/{manager.pk}/test-connection/")
    assert tested.json()["ok"] is True
    bodies.append(tested.content)
    edited = client.post(
        reverse("fabric:manager_edit", args=[manager.pk]),
        {**form, "endpoint": "https://fm2.example", "manager": str(manager.pk)},
    )
    assert edited.status_code == 302

    # A sync job through the driver, which did receive the credentials.
    job = inventory_sync_job_create(manager=manager, requested_by=admin_user)
    inventory_sync_run(job)
    job.refresh_from_db()
    assert {"username": USERNAME, "password": SECRET} in EchoingDriver.seen
    bodies.append(client.get(reverse("composer:job_detail", args=[job.pk])).content)
    bodies.append(api.get(f"/api/v1/jobs/{job.pk}/").content)

    # A tenant member's view of the same console.
    member = client_as(alice)
    for url in (reverse("fabric:manager_list"), "/api/v1/fabric-managers/", "/api/v1/jobs/"):
        bodies.append(member.get(url).content)

    stored = [
        *(str(r.changes) + r.message + r.target_label for r in ChangeRecord.objects.all()),
        *(line.message + line.tenant_message for line in JobLogLine.objects.all()),
        *(str(j.result) + j.message + j.error for j in Job.objects.all()),
        *(m.last_sync_error + str(m.settings) + m.endpoint for m in FabricManager.objects.all()),
    ]
    assert ChangeRecord.objects.filter(target_type="fabric_manager").count() >= 5
    assert JobLogLine.objects.filter(job=job).exists()
    logs = [record.getMessage() for record in caplog.records]
    for secret in (SECRET, API_SECRET, USERNAME):
        for body in bodies:
            assert secret.encode() not in body
        for text in stored + logs:
            assert secret not in text


@pytest.mark.django_db
def test_a_settings_secret_at_any_depth_reaches_no_audit_row(
    admin_user: Any, client_as: Callable[[Any], Client], api_as: Any
) -> None:
    # Stored before the console refused secrets in settings; edits must not copy it out.
    manager = FabricManagerFactory.create(
        name="fm-legacy",
        endpoint="",
        settings={"fabric": "lab", "auth": {"user": "ops", "password": SECRET}},
    )
    page = client_as(admin_user).get(reverse("fabric:manager_edit", args=[manager.pk]))
    shown = page.content.decode().split('name="settings"', 1)[1].split(">", 1)[1]
    shown = html.unescape(shown.split("</textarea>", 1)[0])
    assert SECRET not in shown
    edited = client_as(admin_user).post(
        reverse("fabric:manager_edit", args=[manager.pk]),
        {
            "name": "fm-legacy",
            "driver": "simulated",
            "settings": shown.replace('"lab"', '"lab2"'),
            "verify_tls": "on",
            "is_enabled": "on",
            "health_poll_interval_s": "30",
        },
    )
    assert edited.status_code == 302
    patched = api_as(admin_user).patch(
        f"/api/v1/fabric-managers/{manager.pk}/",
        {"settings": {"fabric": "lab3", "auth": {"user": "ops2", "password": "********"}}},
        format="json",
    )
    assert patched.status_code == 200, patched.content
    manager.refresh_from_db()
    assert manager.settings["auth"] == {"user": "ops2", "password": SECRET}  # kept, not lost
    records = ChangeRecord.objects.filter(target_id=manager.pk, action=ChangeAction.CHANGED)
    assert records.count() == 2
    for record in records:
        assert "settings" in record.changes
        assert SECRET not in str(record.changes)
