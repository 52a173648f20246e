"""POST /api/v1/simulator/faults/: operators fail, degrade and recover simulated elements;
the health poll it queues opens the alert at once (eager tasks here)."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.models import Alert, ChangeRecord, FabricManager, Switch
from fabric.simulator.models import SimulatedElement
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db
URL = "/api/v1/simulator/faults/"


def test_an_operator_fails_a_switch_and_the_alert_follows(
    api_as: Any, admin_user: Any, synced: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    switch = Switch.objects.filter(manager=synced).order_by("name").first()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(admin_user).post(
            URL,
            {"target_type": "switch", "target_id": switch.name, "action": "fail"},
            format="json",
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["target_id"] == switch.pk and body["target_name"] == switch.name
    assert (body["before"], body["after"], body["health_poll"]) == ("none", "failed", "queued")
    record = ChangeRecord.objects.get(pk=body["change_record"])
    assert record.actor == admin_user and record.source == "api"
    element = SimulatedElement.objects.get(kind="switch", external_id=switch.external_id)
    assert element.fault == "failed"
    alert = Alert.objects.get(source_type="switch", source_id=switch.pk, state="open")
    assert alert.severity == "critical"


def test_by_console_id_and_recover(api_as: Any, admin_user: Any, synced: FabricManager) -> None:
    switch = Switch.objects.filter(manager=synced).first()
    api = api_as(admin_user)
    api.post(
        URL, {"target_type": "switch", "target_id": switch.pk, "action": "degrade"}, format="json"
    )
    response = api.post(
        URL,
        {
            "target_type": "switch",
            "target_id": switch.pk,
            "action": "recover",
            "manager": synced.name,
        },
        format="json",
    )
    assert response.status_code == 202
    assert (response.json()["before"], response.json()["after"]) == ("degraded", "none")


def inject(api: Any, target_type: str, target_id: int | str, action: str) -> Any:
    body = {"target_type": target_type, "target_id": target_id, "action": action}
    return api.post(URL, body, format="json")


def test_a_link_by_its_two_ends_as_on_the_fault_page(
    api_as: Any, admin_user: Any, synced: FabricManager, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = inject(api_as(admin_user), "link", "mem-a-01 <-> cxl-spine-1", "fail")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["target_name"] == "cxl-spine-1 <-> mem-a-01" and body["changed"] is True
    assert body["message"].startswith("Link cxl-spine-1 <-> mem-a-01 failed (it was running")


def test_recovering_a_healthy_element_says_nothing_changed(
    api_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    response = inject(api_as(admin_user), "switch", "cxl-leaf-a", "recover")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["before"], body["after"], body["changed"]) == ("none", "none", False)
    assert (body["change_record"], body["health_poll"]) == (None, "queued")
    assert body["message"] == "Switch cxl-leaf-a has no fault to recover from; nothing changed."
    assert not ChangeRecord.objects.filter(action="fault").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"target_id": "x", "action": "fail"}, "target_type"),
        ({"target_type": "rack", "target_id": "x", "action": "fail"}, "target_type"),
        ({"target_type": "switch", "action": "fail"}, "target_id"),
        ({"target_type": "switch", "target_id": True, "action": "fail"}, "target_id"),
        ({"target_type": "switch", "target_id": "nope", "action": "fail"}, "target_id"),
        ({"target_type": "switch", "target_id": 99999, "action": "fail"}, "target_id"),
        ({"target_type": "switch", "target_id": 10**30, "action": "fail"}, "target_id"),
        ({"target_type": "switch", "target_id": "x", "action": "explode"}, "action"),
        ({"target_type": "switch", "target_id": "x", "action": "fail", "manager": "zz"}, "manager"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(
    api_as: Any, admin_user: Any, synced: FabricManager, body: dict[str, Any], field: str
) -> None:
    response = api_as(admin_user).post(URL, body, format="json")
    assert_error(response, 400, "invalid", field=field)
    assert not SimulatedElement.objects.exclude(fault="").exists()
    assert not ChangeRecord.objects.filter(action="fault").exists()


def test_a_manager_that_is_not_simulated_refuses(
    api_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    real = FabricManager.objects.create(name="redfish-1", driver="redfish", endpoint="https://x")
    response = api_as(admin_user).post(
        URL,
        {"target_type": "switch", "target_id": "x", "action": "fail", "manager": real.pk},
        format="json",
    )
    assert_error(response, 400, "invalid", field="manager")


def test_tenants_get_404_and_anonymous_401(
    api_as: Any, api: Any, alice: Any, synced: FabricManager
) -> None:
    body = {"target_type": "switch", "target_id": "x", "action": "fail"}
    assert api.post(URL, body, format="json").status_code == 401
    assert api_as(alice).post(URL, body, format="json").status_code == 404
    assert not ChangeRecord.objects.filter(action="fault").exists()
