"""Fabric manager pages: operators only, secrets masked, counts, the "Sync now" button."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from fabric.models import FabricManager
from tests.factories.fabric import SmallFabric
from tests.support.personas import TENANTS

pytestmark = pytest.mark.django_db

SECRET_SETTINGS = {
    "fabric": "small",
    "username": "fmadmin",
    "password": "hunter2-password",
    "api_token": "tok-0123456789",
    "client_secret": "shh-secret-value",
    "tls": {"ca_bundle": "/etc/ssl/fabric.pem", "private_key": "-----BEGIN KEY-----"},
    "ApiKey": "AKIA-EXAMPLE",
}
SECRET_VALUES = [
    "hunter2-password",
    "tok-0123456789",
    "shh-secret-value",
    "BEGIN KEY",
    "AKIA-EXAMPLE",
]


@pytest.fixture
def manager(small: SmallFabric) -> FabricManager:
    small.manager.settings = SECRET_SETTINGS
    small.manager.endpoint = "https://fm.dc1.example:8443"
    small.manager.last_synced_at = timezone.now()
    small.manager.last_sync_error = "Timeout talking to the fabric manager after 30 s"
    small.manager.save()
    return small.manager


def test_operators_see_the_managers_with_counts(
    manager: FabricManager, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(reverse("fabric:manager_list"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "fm-small" in body and "https://fm.dc1.example:8443" in body
    assert "Timeout talking to the fabric manager" in body
    (row,) = [m for m in response.context["managers"] if m.pk == manager.pk]
    counts = row.counts
    assert (counts.switches, counts.hosts, counts.enclosures, counts.devices, counts.links) == (
        2,
        2,
        3,
        10,
        5,
    )


def test_the_manager_page_masks_secret_looking_settings(
    manager: FabricManager, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(reverse("fabric:manager_detail", args=[manager.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    for value in SECRET_VALUES:
        assert value not in body
    assert "fmadmin" in body and "/etc/ssl/fabric.pem" in body and "small" in body
    assert "password" in body and "api_token" in body  # the keys stay visible
    assert "Sync now" in body
    assert reverse("composer:manager_sync", args=[manager.pk]) in body


@pytest.mark.parametrize("who", TENANTS)
def test_tenant_members_get_404_on_manager_pages(
    who: str,
    manager: FabricManager,
    persona: Callable[[str], Any],
    client_as: Callable[[Any], Client],
) -> None:
    client = client_as(persona(who))
    assert client.get(reverse("fabric:manager_list")).status_code == 404
    response = client.get(reverse("fabric:manager_detail", args=[manager.pk]))
    assert response.status_code == 404
    assert "fm.dc1.example" not in response.content.decode()


def test_an_unknown_manager_is_404(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    response = client_as(admin_user).get(reverse("fabric:manager_detail", args=[424242]))
    assert response.status_code == 404


def test_every_secret_the_api_masks_is_masked_on_the_pages_and_in_history(
    small: SmallFabric, admin_user: Any, client_as: Callable[[Any], Client]
) -> None:
    from fabric.choices import ChangeAction
    from fabric.models import ChangeRecord

    manager = small.manager
    endpoint = "https://admin:hunter2@fm.example/redfish?access_token=QTOK&site=a"
    manager.endpoint = endpoint
    manager.settings = {"fabric": "small", "passwd": "PASSWD1", "credentials": "CRED1"}
    manager.save()
    ChangeRecord.objects.create(
        target_type="fabric_manager",
        target_id=manager.pk,
        target_label=manager.name,
        action=ChangeAction.CHANGED,
        changes={"endpoint": ["", endpoint], "settings": [{}, {"passwd": "PASSWD1"}]},
    )
    client = client_as(admin_user)

    pages = [
        client.get(reverse("fabric:manager_list")).content.decode(),
        client.get(reverse("fabric:manager_detail", args=[manager.pk])).content.decode(),
    ]

    for body in pages:
        for secret in ("hunter2", "QTOK", "PASSWD1", "CRED1"):
            assert secret not in body
    assert "fm.example/redfish" in pages[1]
