"""The fault-injection page: operators only; inject, see the fault in force, recover."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from fabric.models import Alert, Enclosure, FabricManager, SimulatedElement

pytestmark = pytest.mark.django_db
URL = reverse("composer:fault_injection")


def test_tenants_get_404(client_as: Any, alice: Any, synced: FabricManager) -> None:
    assert client_as(alice).get(URL).status_code == 404


def test_an_operator_injects_then_recovers(
    client_as: Any,
    admin_user: Any,
    synced: FabricManager,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = client_as(admin_user)
    page = client.get(URL)
    assert page.status_code == 200 and b"No faults" in page.content
    enclosure = Enclosure.objects.filter(manager=synced).order_by("name").first()
    assert enclosure.name.encode() in page.content  # offered in the target's autocomplete

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            URL,
            {
                "manager": synced.pk,
                "target_type": "enclosure",
                "target": enclosure.name,
                "action": "fail",
            },
            follow=True,
        )
    assert response.status_code == 200
    assert b"Fail injected on enclosure" in response.content
    assert b'id="active-faults"' in response.content and b">failed<" in response.content
    assert Alert.objects.filter(source_type="enclosure", source_id=enclosure.pk).exists()

    client.post(
        URL,
        {
            "manager": synced.pk,
            "target_type": "enclosure",
            "target": enclosure.external_id,
            "action": "recover",
        },
    )
    element = SimulatedElement.objects.get(kind="enclosure", external_id=enclosure.external_id)
    assert element.fault == ""


def test_an_unknown_target_is_a_field_error(
    client_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    response = client_as(admin_user).post(
        URL, {"manager": synced.pk, "target_type": "switch", "target": "nope", "action": "fail"}
    )
    assert response.status_code == 400
    assert b'data-field="target"' in response.content and b"nope" in response.content
    assert not SimulatedElement.objects.exclude(fault="").exists()


@pytest.mark.parametrize("target", ["\u00b2", "9" * 40])
def test_odd_targets_are_field_errors_not_crashes(
    client_as: Any, admin_user: Any, synced: FabricManager, target: str
) -> None:
    response = client_as(admin_user).post(
        URL, {"manager": synced.pk, "target_type": "switch", "target": target, "action": "fail"}
    )
    assert response.status_code == 400
    assert b'data-field="target"' in response.content
