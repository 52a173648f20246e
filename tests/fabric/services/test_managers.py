"""Fabric managers from the console, the service layer: the rules (one place for the pages'
and the API's words), the audit trail, enabling, and what deleting may and may not do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from fabric.choices import ChangeAction, DeviceState
from fabric.models import ChangeRecord, Device, FabricManager, Host
from fabric.services.managers import (
    CredentialsInput,
    ManagerInput,
    ManagerInUse,
    manager_create,
    manager_delete,
    manager_set_enabled,
    manager_update,
)
from tests.factories.fabric import FabricManagerFactory, fabric_small

pytestmark = pytest.mark.django_db

SECRET = "pw-Zq8-never-shown"


def _input(**changes: Any) -> ManagerInput:
    values: dict[str, Any] = {
        "name": "fm-new",
        "driver": "simulated",
        "endpoint": "https://fm.example:8443",
        "settings": {"fabric": "lab"},
    }
    values.update(changes)
    return ManagerInput(**values)


def _errors(**changes: Any) -> dict[str, list[str]]:
    credentials = changes.pop("credentials", None)
    with pytest.raises(ValidationError) as caught:
        manager_create(data=_input(**changes), credentials=credentials)
    assert not FabricManager.objects.filter(name=changes.get("name", "fm-new")).exists()
    return caught.value.message_dict


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"driver": "banana"}, "driver", "Unknown driver 'banana'; choose one of"),
        ({"endpoint": "fm.example"}, "endpoint", "with its scheme"),
        ({"endpoint": "https://ops:pw@fm.example"}, "endpoint", "credentials fields"),
        ({"endpoint": "https://fm.example:port"}, "endpoint", "check the port"),
        ({"settings": {"api_token": "abc"}}, "settings", "looks like a secret"),
        (
            {"settings": {"auth": {"password": "x"}}},
            "settings",
            "Setting 'auth.password' looks like a secret: enter secrets in the credentials",
        ),
        (
            {"settings": {"servers": [{"host": "a"}, {"token": "t"}]}},
            "settings",
            "Setting 'servers[1].token' looks like a secret",
        ),
        ({"settings": {"verify_tls": False}}, "settings", "its own field"),
        ({"ca_bundle": "certs/ca.pem"}, "ca_bundle", "full path"),
        ({"ca_bundle": "/nonexistent/ca.pem"}, "ca_bundle", "no file at /nonexistent/ca.pem"),
        ({"name": " "}, "name", "This field cannot be blank."),
        ({"health_poll_interval_s": 0}, "health_poll_interval_s", "greater than or equal to 1"),
        (
            {"credentials": CredentialsInput(username="ops")},
            "password",
            "Enter the password for this username.",
        ),
        (
            {"credentials": CredentialsInput(password=SECRET)},
            "username",
            "Enter the username this password belongs to.",
        ),
        (
            {"credentials": CredentialsInput(username="ops", password="x", token="t")},
            "token",
            "either a token or a username and password",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    changes: dict[str, Any], field: str, words: str
) -> None:
    errors = _errors(**changes)
    assert field in errors, errors
    assert any(words in message for message in errors[field]), errors


def test_a_ca_bundle_needs_tls_verification(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    errors = _errors(ca_bundle=str(bundle), verify_tls=False)
    assert errors["ca_bundle"] == ["A CA bundle is only used when TLS verification is on."]


def test_a_taken_name_is_refused_in_the_operators_words() -> None:
    FabricManagerFactory.create(name="fm-new")
    with pytest.raises(ValidationError) as caught:
        manager_create(data=_input())
    assert caught.value.message_dict["name"] == ["Another fabric manager already has this name."]


def test_without_a_key_credentials_are_refused_and_nothing_is_saved(settings: Any) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = []
    errors = _errors(credentials=CredentialsInput(token=SECRET))
    assert "no encryption key is set" in errors["token"][0]
    assert SECRET not in str(errors)


def test_adding_a_manager_is_audited_without_its_credentials(admin_user: Any) -> None:
    manager = manager_create(
        data=_input(verify_tls=False),
        credentials=CredentialsInput(username="ops", password=SECRET),
        actor=admin_user,
        remote_addr="10.0.0.7",
        source="console",
    )
    assert manager.settings == {"fabric": "lab", "verify_tls": False}
    (record,) = ChangeRecord.objects.filter(target_type="fabric_manager", target_id=manager.pk)
    assert record.action == ChangeAction.ADDED
    assert (record.actor, record.remote_addr, record.source) == (admin_user, "10.0.0.7", "console")
    assert record.changes["credentials"] == [None, "stored"]
    assert record.changes["endpoint"] == [None, "https://fm.example:8443"]
    assert SECRET not in str(record.changes) and "ops" not in str(record.changes)


def test_an_edit_keeps_blank_credentials_and_records_what_changed(admin_user: Any) -> None:
    manager = manager_create(data=_input(), credentials=CredentialsInput(token=SECRET))
    ciphertext = manager.credentials_ciphertext
    changed = manager_update(
        manager=manager,
        data=_input(endpoint="https://FM.example:8443/v2", health_poll_interval_s=60),
        actor=admin_user,
    )
    assert changed == ["endpoint", "health_poll_interval_s"]
    manager.refresh_from_db()
    assert manager.credentials_ciphertext == ciphertext
    assert manager.endpoint == "https://FM.example:8443/v2"
    record = ChangeRecord.objects.filter(action=ChangeAction.CHANGED).get()
    assert record.changes == {
        "endpoint": ["https://fm.example:8443", "https://FM.example:8443/v2"],
        "health_poll_interval_s": [30, 60],
    }


def test_an_edit_replaces_or_removes_credentials_and_says_so_in_words() -> None:
    manager = manager_create(data=_input(), credentials=CredentialsInput(token=SECRET))
    assert manager_update(
        manager=manager, data=_input(), credentials=CredentialsInput(token=SECRET + "2")
    ) == ["credentials"]
    assert manager_update(
        manager=manager, data=_input(), credentials=CredentialsInput(clear=True)
    ) == ["credentials"]
    manager.refresh_from_db()
    assert manager.credentials_ciphertext == ""
    changes = [
        r.changes["credentials"]
        for r in ChangeRecord.objects.filter(action=ChangeAction.CHANGED).order_by("id")
    ]
    assert changes == [["stored", "replaced"], ["stored", "removed"]]
    assert list(
        ChangeRecord.objects.filter(action=ChangeAction.CHANGED)
        .order_by("id")
        .values_list("message", flat=True)
    ) == [
        "fabric manager changed; credentials replaced",
        "fabric manager changed; credentials removed",
    ]


def test_an_unchanged_save_writes_nothing() -> None:
    manager = manager_create(data=_input())
    assert manager_update(manager=manager, data=_input()) == []
    assert ChangeRecord.objects.filter(action=ChangeAction.CHANGED).count() == 0


def test_a_masked_setting_keeps_its_stored_value() -> None:
    manager = FabricManagerFactory.create(settings={"fabric": "lab", "api_key": "legacy-k"})
    manager_update(manager=manager, data=_input(settings={"fabric": "lab", "api_key": "********"}))
    manager.refresh_from_db()
    assert manager.settings["api_key"] == "legacy-k"


def test_a_masked_nested_setting_keeps_its_stored_value_and_audit_rows_hold_the_mask() -> None:
    stored = {"fabric": "lab", "auth": {"user": "ops", "api_key": "legacy-k"}, "pool": [{"x": 1}]}
    manager = FabricManagerFactory.create(settings=stored)
    manager_update(
        manager=manager,
        data=_input(
            settings={
                "fabric": "lab2",
                "auth": {"user": "ops", "api_key": "********"},
                "pool": [{"x": 1}],
            }
        ),
    )
    manager.refresh_from_db()
    assert manager.settings["auth"] == {"user": "ops", "api_key": "legacy-k"}
    assert manager.settings["fabric"] == "lab2"
    record = ChangeRecord.objects.get(action=ChangeAction.CHANGED)
    assert record.changes["settings"][0]["auth"] == {"user": "ops", "api_key": "********"}
    assert "legacy-k" not in str(record.changes)


@pytest.mark.parametrize(
    "endpoint", ["https://evil.example:8443", "http://fm.example:8443", "https://fm.example:9443"]
)
def test_blank_credentials_do_not_follow_an_endpoint_to_another_address(endpoint: str) -> None:
    manager = manager_create(data=_input(), credentials=CredentialsInput(token=SECRET))
    with pytest.raises(ValidationError) as caught:
        manager_update(manager=manager, data=_input(endpoint=endpoint))
    assert caught.value.message_dict == {
        "password": [
            "The endpoint's address changed: enter the credentials again (a username and "
            "password, or a token). The stored ones are only sent to the address they were "
            "saved for."
        ]
    }
    manager.refresh_from_db()
    assert manager.endpoint == "https://fm.example:8443"
    assert not ChangeRecord.objects.filter(action=ChangeAction.CHANGED).exists()
    # Entered again, or removed, the move is saved.
    assert manager_update(
        manager=manager, data=_input(endpoint=endpoint), credentials=CredentialsInput(token="t2")
    ) == ["credentials", "endpoint"]
    other = manager_create(
        data=_input(name="fm-pw", endpoint="https://fm.example"),
        credentials=CredentialsInput(username="ops", password=SECRET),
    )
    with pytest.raises(ValidationError) as caught:
        manager_update(manager=other, data=_input(name="fm-pw", endpoint=endpoint))
    assert list(caught.value.message_dict) == ["password"]
    assert manager_update(
        manager=other,
        data=_input(name="fm-pw", endpoint="https://fm.example:443/api"),
    ) == ["endpoint"]  # the same address, its default port written out
    assert manager_update(
        manager=other,
        data=_input(name="fm-pw", endpoint=endpoint),
        credentials=CredentialsInput(clear=True),
    ) == ["credentials", "endpoint"]


def test_disabling_and_enabling_are_audited_once_each(admin_user: Any) -> None:
    manager = manager_create(data=_input())
    assert manager_set_enabled(manager=manager, enabled=False, actor=admin_user)
    assert not manager_set_enabled(manager=manager, enabled=False, actor=admin_user)
    assert not manager.is_enabled
    assert manager_set_enabled(manager=manager, enabled=True, actor=admin_user)
    messages = list(
        ChangeRecord.objects.filter(action=ChangeAction.CHANGED)
        .order_by("id")
        .values_list("message", flat=True)
    )
    assert messages == ["fabric manager disabled", "fabric manager enabled"]


def test_deleting_a_manager_with_a_bound_device_is_refused_and_suggests_disabling() -> None:
    small = fabric_small()
    gpu = small.gpus[0]
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.BOUND, bound_host=small.hosts[0])
    with pytest.raises(ManagerInUse) as caught:
        manager_delete(manager=small.manager)
    assert "1 of its devices is bound or reserved" in caught.value.message
    assert "disable the manager instead" in caught.value.message
    assert FabricManager.objects.filter(pk=small.manager.pk).exists()
    assert Device.objects.filter(manager=small.manager).count() == 10


def test_deleting_an_unused_manager_removes_its_inventory_and_is_audited(admin_user: Any) -> None:
    small = fabric_small()
    pk = small.manager.pk
    check = manager_delete(manager=small.manager, actor=admin_user, remote_addr="10.0.0.9")
    assert (check.devices, check.hosts, check.switches) == (10, 2, 2)
    assert not FabricManager.objects.filter(pk=pk).exists()
    assert not Host.objects.filter(manager_id=pk).exists()
    record = ChangeRecord.objects.get(action=ChangeAction.DELETED)
    assert (record.target_id, record.target_label, record.actor) == (pk, "fm-small", admin_user)
    assert record.changes["devices"] == [10, None]
