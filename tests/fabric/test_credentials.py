"""Fabric managers' credentials at rest: encrypted with the configured keys, decrypted only
for the driver, rotated by `manage.py rotate_credentials`, and a clear error (never a 500)
when the keys do not open them."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from fabric.choices import ChangeAction
from fabric.credentials import decrypt, encrypt
from fabric.drivers.base import DriverError
from fabric.drivers.registry import get_driver, manager_credentials
from fabric.models import ChangeRecord, FabricManager
from fabric.services.managers import CredentialsInput, ManagerInput, manager_create
from tests.factories.fabric import FabricManagerFactory

pytestmark = pytest.mark.django_db

SECRET = "S3cret-Pa55word-kept-encrypted"
OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()


def _with_credentials(**values: str) -> FabricManager:
    manager: FabricManager = FabricManagerFactory.create()
    manager.credentials_ciphertext = encrypt(values)
    manager.save()
    return manager


def test_credentials_are_stored_encrypted_and_decrypt_for_the_driver() -> None:
    manager = manager_create(
        data=ManagerInput(name="fm-enc", driver="simulated", settings={"fabric": "x"}),
        credentials=CredentialsInput(username="composer", password=SECRET),
    )
    row = FabricManager.objects.get(pk=manager.pk)
    assert row.credentials_ciphertext and SECRET not in row.credentials_ciphertext
    assert SECRET not in str(row.settings) and "composer" not in row.credentials_ciphertext
    assert manager_credentials(row) == {"username": "composer", "password": SECRET}
    assert get_driver(row) is not None


def test_a_manager_without_credentials_gives_the_driver_none() -> None:
    manager = FabricManagerFactory.create()
    assert manager_credentials(manager) == {}


def test_a_wrong_key_is_a_permanent_driver_error_naming_the_manager(settings: Any) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = [OLD_KEY]
    manager = _with_credentials(token=SECRET)
    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY]
    with pytest.raises(DriverError) as caught:
        get_driver(manager)
    assert caught.value.permanent
    assert manager.name in caught.value.message
    assert "none of the keys" in caught.value.message
    assert SECRET not in caught.value.message and NEW_KEY not in caught.value.message


def test_no_key_at_all_is_a_driver_error_that_says_so(settings: Any) -> None:
    manager = _with_credentials(token=SECRET)
    settings.COMPOSER_CREDENTIALS_KEYS = []
    with pytest.raises(DriverError, match="no encryption key is set"):
        decrypt(manager)


def test_a_malformed_key_is_named_by_its_position_not_its_value(settings: Any) -> None:
    manager = _with_credentials(token=SECRET)
    settings.COMPOSER_CREDENTIALS_KEYS = ["not-a-fernet-key"]
    with pytest.raises(DriverError) as caught:
        decrypt(manager)
    assert "key number 1" in caught.value.message
    assert "not-a-fernet-key" not in caught.value.message


def test_rotation_reencrypts_every_manager_with_the_newest_key(settings: Any) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = [OLD_KEY]
    first = _with_credentials(username="u1", password=SECRET)
    second = _with_credentials(token=SECRET + "2")
    bare = FabricManagerFactory.create()
    before = {m.pk: m.credentials_ciphertext for m in (first, second)}

    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY, OLD_KEY]
    out = StringIO()
    call_command("rotate_credentials", stdout=out)
    assert "2 fabric manager(s)" in out.getvalue()

    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY]  # the old key dropped after the rotation
    for manager in (first, second):
        manager.refresh_from_db()
        assert manager.credentials_ciphertext != before[manager.pk]
    assert decrypt(first) == {"username": "u1", "password": SECRET}
    assert decrypt(second) == {"token": SECRET + "2"}
    bare.refresh_from_db()
    assert bare.credentials_ciphertext == ""
    records = ChangeRecord.objects.filter(
        target_type="fabric_manager", action=ChangeAction.CHANGED, source="rotate_credentials"
    )
    assert {r.target_id for r in records} == {first.pk, second.pk}
    assert all(SECRET not in str(r.changes) + r.message for r in records)


def test_rotation_names_managers_no_key_opens_and_leaves_them(settings: Any) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = [OLD_KEY]
    lost = _with_credentials(token=SECRET)
    before = lost.credentials_ciphertext
    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY]
    with pytest.raises(CommandError, match=lost.name):
        call_command("rotate_credentials", stdout=StringIO())
    lost.refresh_from_db()
    assert lost.credentials_ciphertext == before


def test_rotation_without_a_key_writes_nothing_and_says_why(settings: Any) -> None:
    settings.COMPOSER_CREDENTIALS_KEYS = []
    with pytest.raises(CommandError, match="no encryption key is set"):
        call_command("rotate_credentials", stdout=StringIO())


def test_a_sync_and_a_poll_of_a_manager_no_key_opens_fail_with_the_reason(
    settings: Any,
) -> None:
    from fabric.health.poll import health_poll
    from fabric.services.sync import inventory_sync

    settings.COMPOSER_CREDENTIALS_KEYS = [OLD_KEY]
    manager = _with_credentials(token=SECRET)
    settings.COMPOSER_CREDENTIALS_KEYS = [NEW_KEY]
    with pytest.raises(DriverError, match="cannot be decrypted"):
        inventory_sync(manager=manager)
    manager.refresh_from_db()
    assert manager.name in manager.last_sync_error and SECRET not in manager.last_sync_error
    outcome = health_poll(manager=manager)
    assert not outcome.ok
    manager.refresh_from_db()
    assert "cannot be decrypted" in manager.last_health_poll_error
