"""Fabric managers in the API: operators add, change, disable, delete and test them with the
pages' rules and words; credentials are write-only; tenant members get 404 everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.choices import ChangeAction, DeviceState
from fabric.credentials import decrypt
from fabric.models import ChangeRecord, Device, FabricManager
from tests.fabric.simulated_world import simulated_manager
from tests.factories.fabric import FabricManagerFactory, fabric_small
from tests.support.api import assert_error
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db

SECRET = "api-Secret-9f3k-never-returned"
URL = "/api/v1/fabric-managers/"


def _create(api: Any, **body: Any) -> Any:
    payload = {"name": "fm-api", "driver": "simulated", "settings": {"fabric": "lab"}}
    payload.update(body)
    return api.post(URL, payload, format="json")


def test_an_operator_adds_a_manager_with_write_only_credentials(
    api_as: Any, admin_user: Any
) -> None:
    response = _create(
        api_as(admin_user),
        endpoint="https://fm.example",
        username="ops",
        password=SECRET,
        verify_tls=False,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["has_credentials"] is True and body["verify_tls"] is False
    assert body["settings"] == {"fabric": "lab"}
    assert response["Location"] == body["url"]
    for key in ("username", "password", "token", "credentials_ciphertext"):
        assert key not in body
    assert SECRET.encode() not in response.content
    manager = FabricManager.objects.get(pk=body["id"])
    assert decrypt(manager) == {"username": "ops", "password": SECRET}
    record = ChangeRecord.objects.get(target_id=manager.pk, action=ChangeAction.ADDED)
    assert record.source == "api" and record.actor == admin_user


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"driver": "banana"}, "driver", "Unknown driver 'banana'; choose one of"),
        ({"endpoint": "https://a:b@fm.example"}, "endpoint", "credentials fields"),
        ({"settings": {"password": "x"}}, "settings", "looks like a secret"),
        (
            {"settings": {"auth": {"password": "x"}}},
            "settings",
            "Setting 'auth.password' looks like a secret: enter secrets in the credentials",
        ),
        ({"username": "ops"}, "password", "Enter the password for this username."),
        ({"token": "t", "password": "p"}, "token", "either a token or a username"),
        ({"verify_tls": "yes"}, "verify_tls", "Must be a valid boolean."),
        ({"health_poll_interval_s": 0}, "health_poll_interval_s", "at least 1 second"),
    ],
)
def test_bad_input_is_400_naming_the_field_in_the_pages_words(
    body: dict[str, Any], field: str, words: str, api_as: Any, admin_user: Any
) -> None:
    error = assert_error(_create(api_as(admin_user), **body), 400, "invalid", field=field)
    assert words in error["detail"], error
    assert not FabricManager.objects.filter(name="fm-api").exists()


def test_a_patch_changes_only_what_it_names_and_keeps_the_credentials(
    api_as: Any, admin_user: Any
) -> None:
    api = api_as(admin_user)
    created = _create(api, token=SECRET, endpoint="https://fm.example").json()
    before = FabricManager.objects.get(pk=created["id"]).credentials_ciphertext
    response = api.patch(f"{URL}{created['id']}/", {"is_enabled": False}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["is_enabled"] is False
    manager = FabricManager.objects.get(pk=created["id"])
    assert manager.credentials_ciphertext == before
    assert manager.endpoint == "https://fm.example"
    cleared = api.patch(f"{URL}{created['id']}/", {"clear_credentials": True}, format="json")
    assert cleared.json()["has_credentials"] is False


def test_a_patch_moving_the_endpoint_elsewhere_needs_the_credentials_again(
    api_as: Any, admin_user: Any
) -> None:
    api = api_as(admin_user)
    created = _create(api, token=SECRET, endpoint="https://fm.example").json()
    url = f"{URL}{created['id']}/"
    refused = api.patch(url, {"endpoint": "https://attacker.example"}, format="json")
    error = assert_error(refused, 400, "invalid", field="password")
    assert "The endpoint's address changed: enter the credentials again" in error["detail"]
    assert FabricManager.objects.get(pk=created["id"]).endpoint == "https://fm.example"
    moved = api.patch(url, {"endpoint": "https://fm2.example", "token": "t2"}, format="json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["endpoint"] == "https://fm2.example"


def test_delete_is_409_while_a_device_is_bound_and_204_after(api_as: Any, admin_user: Any) -> None:
    small = fabric_small()
    gpu = small.gpus[0]
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.BOUND, bound_host=small.hosts[0])
    api = api_as(admin_user)
    error = assert_error(api.delete(f"{URL}{small.manager.pk}/"), 409, "manager_in_use")
    assert "disable the manager instead" in error["detail"]
    Device.objects.filter(pk=gpu.pk).update(state=DeviceState.FREE, bound_host=None)
    assert api.delete(f"{URL}{small.manager.pk}/").status_code == 204
    assert not FabricManager.objects.filter(pk=small.manager.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_test_connection_reports_what_the_manager_holds(api_as: Any, admin_user: Any) -> None:
    manager = simulated_manager()
    response = api_as(admin_user).post(f"{URL}{manager.pk}/test-connection/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is True and body["error"] == ""
    assert body["service"] == "simulated fabric sim"
    assert body["counts"]["devices"] == 9 and body["counts"]["switches"] == 3
    assert body["composition_methods"] == ["bind"]
    record = ChangeRecord.objects.get(action=ChangeAction.TESTED)
    assert record.target_id == manager.pk
    assert record.message == (
        "connection test ok: answered as simulated fabric sim; reports 1 rack, 2 power feeds, "
        "3 switches, 3 hosts, 5 enclosures, 9 devices, 34 ports, 12 links"
    )


def test_test_connection_says_why_it_failed_and_never_500s(
    api_as: Any, admin_user: Any, settings: Any
) -> None:
    manager = FabricManagerFactory.create(name="fm-lost", settings={"fabric": "nowhere"})
    response = api_as(admin_user).post(f"{URL}{manager.pk}/test-connection/")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False and body["error"]
    # Credentials that no key opens: the same, with the manager and the cause named.
    from cryptography.fernet import Fernet

    manager.credentials_ciphertext = Fernet(Fernet.generate_key()).encrypt(b"{}").decode()
    manager.save()
    body = api_as(admin_user).post(f"{URL}{manager.pk}/test-connection/").json()
    assert body["ok"] is False
    assert "fm-lost" in body["error"] and "none of the keys" in body["error"]


@pytest.mark.parametrize("persona_name", TENANTS)
def test_tenant_members_get_404_and_never_the_managers(
    persona_name: str, persona: Any, api_as: Any
) -> None:
    manager = FabricManagerFactory.create(endpoint="https://fm.internal.example")
    api = api_as(persona(persona_name))
    calls = [
        api.get(URL),
        api.get(f"{URL}{manager.pk}/"),
        _create(api),
        api.patch(f"{URL}{manager.pk}/", {"is_enabled": False}, format="json"),
        api.delete(f"{URL}{manager.pk}/"),
        api.post(f"{URL}{manager.pk}/test-connection/"),
    ]
    for response in calls:
        assert response.status_code == 404, (response.request, response.content)
        assert b"fm.internal.example" not in response.content
    manager.refresh_from_db()
    assert manager.is_enabled and FabricManager.objects.count() == 1


class SlowDriver:
    """A manager that takes longer to answer than the console waits."""

    def __init__(self, **kwargs: Any) -> None:
        pass

    def probe(self) -> Any:
        import time

        time.sleep(2)
        raise AssertionError("never read: the test stopped waiting")


def test_a_manager_that_does_not_answer_in_time_is_reported_so(
    api_as: Any, admin_user: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fabric.drivers.registry import DRIVERS

    monkeypatch.setitem(DRIVERS, "slow", f"{__name__}.SlowDriver")
    settings.COMPOSER_PROBE_TIMEOUT_S = 0.2
    manager = FabricManagerFactory.create(name="fm-slow", driver="slow")
    body = api_as(admin_user).post(f"{URL}{manager.pk}/test-connection/").json()
    assert body["ok"] is False
    assert "did not answer within 0.2 s" in body["error"]
    assert body["elapsed_ms"] < 1500
