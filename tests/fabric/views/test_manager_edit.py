"""Fabric managers from the console's pages: add, edit, test the connection, disable and
delete, with errors beside the fields; tenant members get 404 on every one of them."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fabric.choices import ChangeAction, DeviceState
from fabric.credentials import decrypt
from fabric.models import ChangeRecord, Device, FabricManager
from fabric.simulator.redfish.server import serve_world
from tests.fabric.simulated_world import simulated_manager
from tests.factories.fabric import FabricManagerFactory, fabric_small
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db

SECRET = "page-Secret-71x-never-rendered"


def _form(**changes: str) -> dict[str, str]:
    data = {
        "name": "fm-page",
        "driver": "simulated",
        "endpoint": "https://fm.example",
        "settings": '{"fabric": "lab"}',
        "verify_tls": "on",
        "ca_bundle": "",
        "username": "",
        "password": "",
        "token": "",
        "is_enabled": "on",
        "health_poll_interval_s": "30",
    }
    data.update(changes)
    return data


def test_an_operator_adds_a_manager_from_the_form(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    page = client.get(reverse("fabric:manager_create"))
    assert page.status_code == 200
    assert b'<option value="simulated"' in page.content
    response = client.post(reverse("fabric:manager_create"), _form(username="ops", password=SECRET))
    manager = FabricManager.objects.get(name="fm-page")
    assert response.status_code == 302
    assert response["Location"] == reverse("fabric:manager_detail", args=[manager.pk])
    assert decrypt(manager) == {"username": "ops", "password": SECRET}
    assert manager.settings == {"fabric": "lab", "verify_tls": True}
    detail = client.get(response["Location"])
    assert b"stored, encrypted" in detail.content
    assert SECRET.encode() not in detail.content


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"driver": "banana"}, "driver", "Select a valid choice."),
        ({"settings": "{not json"}, "settings", "Settings are not valid JSON"),
        ({"settings": "[1]"}, "settings", "must be a JSON object"),
        ({"endpoint": "https://a:b@fm.example"}, "endpoint", "credentials fields"),
        (
            {"username": "ops", "password": "", "token": ""},
            "password",
            "Enter the password for this username.",
        ),
        ({"health_poll_interval_s": "0"}, "health_poll_interval_s", "at least 1 second"),
        ({"ca_bundle": "/nonexistent/ca.pem"}, "ca_bundle", "no file at /nonexistent"),
        ({"settings": '{"fabric": "a\\u0000b"}'}, "settings", "Settings: fabric: Contains a"),
        ({"settings": '{"a\\u001bb": 1}'}, "settings", "(a terminal escape)"),
        ({"name": "fm\x1b[31m"}, "name", "a terminal escape"),
        (
            {"settings": '{"auth": {"password": "x"}}'},
            "settings",
            "Setting &#x27;auth.password&#x27; looks like a secret: enter secrets in the",
        ),
    ],
)
def test_bad_input_comes_back_beside_the_field_and_saves_nothing(
    changes: dict[str, str],
    field: str,
    words: str,
    admin_user: Any,
    client_as: Callable[[Any], Client],
) -> None:
    response = client_as(admin_user).post(
        reverse("fabric:manager_create"),
        _form(**{"username": "ops", "password": SECRET, **changes}),
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert f'id="error-{field}"' in body
    assert body.count("is-invalid") == 1  # the input at fault is outlined, no other
    assert words in body
    assert SECRET not in body  # a password is never rendered back, not even after an error
    assert not FabricManager.objects.filter(name="fm-page").exists()


def test_the_edit_form_keeps_credentials_left_blank_for_the_same_address_only(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    client = client_as(admin_user)
    client.post(reverse("fabric:manager_create"), _form(token=SECRET))
    manager = FabricManager.objects.get(name="fm-page")
    ciphertext = manager.credentials_ciphertext
    page = client.get(reverse("fabric:manager_edit", args=[manager.pk]))
    assert page.status_code == 200
    assert SECRET.encode() not in page.content and ciphertext.encode() not in page.content
    assert b"some are stored: leave blank to keep them" in page.content
    response = client.post(
        reverse("fabric:manager_edit", args=[manager.pk]),
        _form(endpoint="https://fm.example/v2", manager=str(manager.pk)),
    )
    assert response.status_code == 302
    manager.refresh_from_db()
    assert manager.endpoint == "https://fm.example/v2"
    assert manager.credentials_ciphertext == ciphertext

    # Moved to another host, blank credentials are neither tested there nor saved with it.
    moved = _form(endpoint="https://attacker.example", manager=str(manager.pk))
    tested = client.post(reverse("fabric:manager_test_entered"), moved, HTTP_HX_REQUEST="true")
    assert tested.status_code == 400
    words = "Password: The endpoint&#x27;s address changed: enter the credentials again"
    assert words in tested.content.decode()
    assert not ChangeRecord.objects.filter(action=ChangeAction.TESTED).exists()  # not probed
    saved = client.post(reverse("fabric:manager_edit", args=[manager.pk]), moved)
    assert saved.status_code == 400
    assert 'id="error-password"' in saved.content.decode()
    manager.refresh_from_db()
    assert manager.endpoint == "https://fm.example/v2"


@pytest.mark.parametrize("value", ["abc", "", "\u00b2", "1" * 40])
def test_test_connection_with_a_manager_that_is_no_id_is_404(
    value: str, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).post(
        reverse("fabric:manager_test_entered"), _form(manager=value)
    )
    assert response.status_code == 404


def test_disable_then_enable_from_the_page(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    manager = FabricManagerFactory.create()
    client = client_as(admin_user)
    url = reverse("fabric:manager_enabled", args=[manager.pk])
    assert client.post(url, {"enabled": "0"}).status_code == 302
    manager.refresh_from_db()
    assert not manager.is_enabled
    detail = client.get(reverse("fabric:manager_detail", args=[manager.pk])).content.decode()
    assert 'id="toggle-enabled"' in detail and "Enable" in detail
    client.post(url, {"enabled": "1"})
    manager.refresh_from_db()
    assert manager.is_enabled
    assert ChangeRecord.objects.filter(target_id=manager.pk).count() == 2


def test_deleting_a_manager_in_use_is_refused_with_disable_offered(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    small = fabric_small()
    Device.objects.filter(pk=small.gpus[0].pk).update(
        state=DeviceState.BOUND, bound_host=small.hosts[0]
    )
    client = client_as(admin_user)
    url = reverse("fabric:manager_delete", args=[small.manager.pk])
    page = client.get(url).content.decode()
    assert 'id="delete-refused"' in page and 'id="disable-instead"' in page
    assert 'id="confirm-delete"' not in page
    refused = client.post(url)
    assert refused.status_code == 409
    assert b"bound or reserved" in refused.content
    assert FabricManager.objects.filter(pk=small.manager.pk).exists()


def test_deleting_an_unused_manager_goes_back_to_the_list(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    manager = FabricManagerFactory.create(name="fm-gone")
    client = client_as(admin_user)
    page = client.get(reverse("fabric:manager_delete", args=[manager.pk])).content.decode()
    assert 'id="confirm-delete"' in page
    response = client.post(reverse("fabric:manager_delete", args=[manager.pk]))
    assert response["Location"] == reverse("fabric:manager_list")
    assert not FabricManager.objects.filter(pk=manager.pk).exists()
    assert ChangeRecord.objects.filter(action=ChangeAction.DELETED, target_id=manager.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_test_connection_of_the_entered_values_shows_the_counts_and_saves_nothing(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    simulated_manager(name="existing", fabric="sim")
    response = client_as(admin_user).post(
        reverse("fabric:manager_test_entered"),
        _form(name="fm-try", endpoint="sim://sim", settings='{"fabric": "sim"}'),
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="probe-ok"' in body and "simulated fabric sim" in body
    assert 'data-kind="devices">9<' in body
    assert not FabricManager.objects.filter(name="fm-try").exists()
    record = ChangeRecord.objects.get(action=ChangeAction.TESTED)
    assert (record.target_id, record.target_label) == (0, "fm-try")


@pytest.mark.django_db(transaction=True)
def test_test_connection_of_a_redfish_manager_says_each_method_in_plain_words(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    simulated_manager(name="existing", fabric="rf-words")
    with serve_world("rf-words", username="ops", password=SECRET) as url:
        response = client_as(admin_user).post(
            reverse("fabric:manager_test_entered"),
            _form(
                name="rf-try",
                driver="redfish",
                endpoint=url,
                settings="{}",
                username="ops",
                password=SECRET,
            ),
            HTTP_HX_REQUEST="true",
        )
    body = html.unescape(response.content.decode())
    assert 'id="probe-ok"' in body, body
    expandable = body.split('data-method="expandable">', 1)[-1].split("</div>", 1)[0]
    assert expandable == (
        '<span class="mono">expandable</span>: '
        "adds devices to an existing server (PATCH of its resource blocks)"
    )


@pytest.mark.django_db(transaction=True)
def test_the_connection_test_message_says_each_method_in_plain_words(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    manager = simulated_manager(name="words", fabric="sim")
    response = client_as(admin_user).post(
        reverse("fabric:manager_test", args=[manager.pk]), follow=True
    )
    body = html.unescape(response.content.decode())
    assert "composes by bind: binds each device to its host, one at a time." in body


def test_test_connection_of_bad_values_says_which_field(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).post(
        reverse("fabric:manager_test_entered"), _form(endpoint="nowhere")
    )
    assert response.status_code == 400
    assert b"Endpoint: Enter the manager" in response.content


def test_test_connection_of_a_saved_manager_shows_the_failure(
    admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    manager = FabricManagerFactory.create(settings={"fabric": "does-not-exist"})
    response = client_as(admin_user).post(
        reverse("fabric:manager_test", args=[manager.pk]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert b'id="probe-failed"' in response.content


@pytest.mark.parametrize("persona_name", TENANTS)
def test_tenant_members_get_404_on_every_manager_page(
    persona_name: str, persona: Any, client_as: Callable[[Any], Client]
) -> None:
    manager = FabricManagerFactory.create(endpoint="https://fm.internal.example")
    client = client_as(persona(persona_name))
    responses = [
        client.get(reverse("fabric:manager_create")),
        client.post(reverse("fabric:manager_create"), _form()),
        client.get(reverse("fabric:manager_edit", args=[manager.pk])),
        client.post(reverse("fabric:manager_edit", args=[manager.pk]), _form()),
        client.post(reverse("fabric:manager_enabled", args=[manager.pk]), {"enabled": "0"}),
        client.get(reverse("fabric:manager_delete", args=[manager.pk])),
        client.post(reverse("fabric:manager_delete", args=[manager.pk])),
        client.post(reverse("fabric:manager_test", args=[manager.pk])),
        client.post(reverse("fabric:manager_test_entered"), _form()),
    ]
    for response in responses:
        assert response.status_code == 404
        assert b"fm.internal.example" not in response.content
    manager.refresh_from_db()
    assert manager.is_enabled and FabricManager.objects.count() == 1


@pytest.mark.parametrize(
    ("stored", "secret"),
    [
        ({"fabric": "lab", "api_key": "legacy-789"}, "legacy-789"),
        ({"fabric": "lab", "auth": {"user": "ops", "password": "legacy-456"}}, "legacy-456"),
    ],
)
def test_the_edit_form_masks_secret_looking_settings_and_saving_keeps_them(
    stored: dict[str, Any], secret: str, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    manager = FabricManagerFactory.create(name="fm-legacy", settings=stored)
    client = client_as(admin_user)
    page = client.get(reverse("fabric:manager_edit", args=[manager.pk])).content.decode()
    assert secret not in page and "********" in page
    form = page.split('name="settings"', 1)[1].split(">", 1)[1].split("</textarea>", 1)[0]
    response = client.post(
        reverse("fabric:manager_edit", args=[manager.pk]),
        _form(name="fm-legacy", endpoint="", settings=html.unescape(form)),
    )
    assert response.status_code == 302
    manager.refresh_from_db()
    assert manager.settings == {**stored, "verify_tls": True}
