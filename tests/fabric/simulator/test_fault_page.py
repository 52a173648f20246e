"""The fault-injection page: operators only; inject, see the fault in force, recover."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from fabric.models import Alert, ChangeRecord, Enclosure, FabricManager
from fabric.simulator.models import SimulatedElement

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
    assert f"Enclosure {enclosure.name} failed (it was running normally).".encode() in (
        response.content
    )
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


def test_the_form_keeps_what_was_typed_after_an_injection(
    client_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    client = client_as(admin_user)
    data = {
        "manager": synced.pk,
        "target_type": "link",
        "target": "cxl-spine-1 <-> mem-a-01",
        "action": "degrade",
    }

    response = client.post(URL, data)

    assert response.status_code == 302
    page = client.get(response["Location"])
    form = page.context["form"]
    assert {name: str(form[name].value()) for name in data} == {
        name: str(value) for name, value in data.items()
    }
    content = page.content.decode()
    assert 'value="cxl-spine-1 &lt;-&gt; mem-a-01"' in content
    assert 'list="fault-targets-link"' in content
    assert "Link cxl-spine-1 &lt;-&gt; mem-a-01 degraded (it was running normally)." in content


def test_the_suggestions_offer_devices_and_links_by_kind(
    client_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    content = client_as(admin_user).get(URL).content.decode()
    assert '<datalist id="fault-targets-device"' in content
    assert '<option value="gpu-a-01-1" label="GPU · H100 PCIe 80GB">' in content
    assert '<option value="cxl-spine-1 &lt;-&gt; mem-a-01">' in content
    assert 'list="fault-targets-device"' in content  # the first kind, until one is picked


def test_recovering_a_healthy_element_says_nothing_changed(
    client_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    response = client_as(admin_user).post(
        URL,
        {
            "manager": synced.pk,
            "target_type": "switch",
            "target": "cxl-leaf-a",
            "action": "recover",
        },
        follow=True,
    )
    content = response.content.decode()
    assert "Switch cxl-leaf-a has no fault to recover from; nothing changed." in content
    assert "none → none" not in content
    assert not ChangeRecord.objects.filter(action="fault").exists()


def test_a_fault_in_force_is_recovered_by_its_name(
    client_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    client = client_as(admin_user)
    client.post(
        URL,
        {
            "manager": synced.pk,
            "target_type": "link",
            "target": "cxl-spine-1 <-> mem-a-01",
            "action": "fail",
        },
    )
    content = client.get(URL).content.decode()
    assert '<input type="hidden" name="target" value="cxl-spine-1 &lt;-&gt; mem-a-01">' in content
    assert ">cxl-spine-1 &lt;-&gt; mem-a-01<" in content  # the table names it, not its id
