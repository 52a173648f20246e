"""The fabric admin: every model listed, faults and syncs as actions, every change audited."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.test import Client
from django.urls import reverse

from fabric.admin import DeviceAdmin, SwitchAdmin
from fabric.choices import ChangeAction, ComponentState, DeviceState, Health
from fabric.models import ChangeRecord, Device, FabricManager, Host, PowerFeed, Switch
from fabric.services.sync import inventory_sync
from fabric.simulator.models import SimulatedElement

# Fabric's models and the simulated manager's (their own app, installed in tests).
APPS = ("fabric", "simulated_fabric")
FABRIC_MODELS = [m for m in admin.site._registry if m._meta.app_label in APPS]


@pytest.fixture
def operator_client(sim_manager: FabricManager) -> Client:
    inventory_sync(manager=sim_manager)
    operator = get_user_model().objects.create_superuser("op", "op@example.com", "pw")
    client = Client()
    client.force_login(operator)
    return client


def _url(model: Any, view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def meanwhile(
    monkeypatch: pytest.MonkeyPatch, admin_class: Any, rows: QuerySet[Any], **values: Any
) -> None:
    """As if another writer (a claim, a poll) set `values` on `rows` while a POST to
    `admin_class` runs: after the admin read the object, before it saves."""
    real = admin_class.get_object

    def changed_meanwhile(self: Any, request: Any, object_id: str, from_field: Any = None) -> Any:
        obj = real(self, request, object_id, from_field)
        if request.method == "POST":
            rows.update(**values)
        return obj

    monkeypatch.setattr(admin_class, "get_object", changed_meanwhile)


def test_every_fabric_model_is_registered() -> None:
    from django.apps import apps

    every = {model for label in APPS for model in apps.get_app_config(label).get_models()}
    assert every == set(FABRIC_MODELS)


@pytest.mark.parametrize("model", FABRIC_MODELS, ids=lambda m: m.__name__)
def test_every_fabric_admin_list_and_change_page_renders(
    operator_client: Client, model: Any
) -> None:
    assert operator_client.get(_url(model, "changelist")).status_code == 200
    obj = model.objects.first()
    if obj is not None:
        assert operator_client.get(_url(model, "change", obj.pk)).status_code == 200


def test_the_fail_action_injects_a_fault_and_records_the_operator(operator_client: Client) -> None:
    feed = PowerFeed.objects.get(name="pdu-a-1")
    response = operator_client.post(
        _url(PowerFeed, "changelist"),
        {"action": "inject_fail", "_selected_action": [feed.pk]},
        REMOTE_ADDR="192.0.2.9",
    )
    assert response.status_code == 302
    assert SimulatedElement.objects.get(external_id="pdu-a-1").fault == "failed"
    record = ChangeRecord.objects.get(action=ChangeAction.FAULT)
    assert (record.actor.username, record.remote_addr, record.source) == (
        "op",
        "192.0.2.9",
        "admin",
    )


def test_the_sync_action_runs_an_inventory_sync(operator_client: Client) -> None:
    SimulatedElement.objects.filter(external_id="gpu-a-01").update(fault="failed")
    manager = FabricManager.objects.get(name="sim")
    operator_client.post(
        _url(FabricManager, "changelist"), {"action": "sync_now", "_selected_action": [manager.pk]}
    )
    assert Device.objects.get(external_id="gpu-a-01-1").state == DeviceState.FAILED


def test_an_operator_may_put_a_device_in_maintenance_and_it_is_audited(
    operator_client: Client,
) -> None:
    device = Device.objects.get(external_id="gpu-a-01-1")
    response = operator_client.post(_url(Device, "change", device.pk), {"state": "maintenance"})
    assert response.status_code == 302
    device.refresh_from_db()
    assert device.state == DeviceState.MAINTENANCE
    record = ChangeRecord.objects.filter(target_type="device", target_id=device.pk).first()
    assert record.changes == {"state": ["free", "maintenance"]}
    assert record.actor.username == "op"


def test_states_owned_by_discovery_cannot_be_set_in_the_admin(operator_client: Client) -> None:
    device = Device.objects.get(external_id="gpu-a-01-1")
    response = operator_client.post(_url(Device, "change", device.pk), {"state": "bound"})
    assert response.status_code == 200  # the form again, with the error
    device.refresh_from_db()
    assert device.state == DeviceState.FREE


def test_discovered_rows_cannot_be_added_or_deleted(operator_client: Client) -> None:
    device = Device.objects.first()
    assert operator_client.get(_url(Device, "add")).status_code == 403
    assert operator_client.get(_url(Device, "delete", device.pk)).status_code == 403


def test_a_device_still_held_cannot_be_taken_out_of_maintenance_as_free(
    operator_client: Client,
) -> None:
    device = Device.objects.get(external_id="gpu-a-01-1")
    host = Host.objects.order_by("pk").first()
    # Bound to a host (its composition keeps it) when the operator took it out of service.
    Device.objects.filter(pk=device.pk).update(state=DeviceState.MAINTENANCE, bound_host=host)

    response = operator_client.post(_url(Device, "change", device.pk), {"state": "free"})

    assert response.status_code == 200  # the form again, with the reason
    assert "is Bound, not Free: a composition still holds it" in response.content.decode()
    device.refresh_from_db()
    assert device.state == DeviceState.MAINTENANCE

    response = operator_client.post(_url(Device, "change", device.pk), {"state": "bound"})
    assert response.status_code == 302
    device.refresh_from_db()
    assert (device.state, device.bound_host) == (DeviceState.BOUND, host)
    record = ChangeRecord.objects.filter(target_type="device", target_id=device.pk).first()
    assert record is not None
    assert (record.changes, record.source) == ({"state": ["maintenance", "bound"]}, "admin")


def test_a_memory_device_whose_slices_are_held_is_not_free_out_of_maintenance(
    operator_client: Client,
) -> None:
    memory = Device.objects.get(kind="cxl_memory", external_id="mem-a-01-1")
    Device.objects.filter(pk=memory.pk).update(state=DeviceState.MAINTENANCE, allocated_gib=256)

    response = operator_client.post(_url(Device, "change", memory.pk), {"state": "free"})

    assert response.status_code == 200
    memory.refresh_from_db()
    assert (memory.state, memory.allocated_gib) == (DeviceState.MAINTENANCE, 256)


def test_the_admin_never_writes_back_what_changed_during_its_request(
    operator_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim that commits while the admin's request runs keeps its GiB: the admin saves
    no stale copy of the row."""
    memory = Device.objects.get(kind="cxl_memory", external_id="mem-a-01-1")
    meanwhile(monkeypatch, DeviceAdmin, Device.objects.filter(pk=memory.pk), allocated_gib=256)

    operator_client.post(_url(Device, "change", memory.pk), {"state": "maintenance"})

    memory.refresh_from_db()
    assert (memory.state, memory.allocated_gib) == (DeviceState.MAINTENANCE, 256)


def test_a_switch_put_in_maintenance_keeps_the_health_a_poll_wrote_meanwhile(
    operator_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    switch = Switch.objects.get(name="cxl-spine-1")
    meanwhile(monkeypatch, SwitchAdmin, Switch.objects.filter(pk=switch.pk), health="critical")

    operator_client.post(_url(Switch, "change", switch.pk), {"state": "maintenance"})

    switch.refresh_from_db()
    assert (switch.state, switch.health) == (ComponentState.MAINTENANCE, Health.CRITICAL)


@pytest.mark.django_db
def test_managers_are_read_only_in_the_admin_with_secrets_masked(
    operator_client: Client, sim_manager: FabricManager
) -> None:
    FabricManager.objects.filter(pk=sim_manager.pk).update(
        endpoint="https://ops:legacy-pw-123@fm.example",
        settings={"fabric": "sim", "api_key": "legacy-key-456"},
        credentials_ciphertext="gAAAA-ciphertext-never-shown",
    )
    for url in (_url(FabricManager, "changelist"), _url(FabricManager, "change", sim_manager.pk)):
        response = operator_client.get(url)
        assert response.status_code == 200
        for secret in (b"legacy-pw-123", b"legacy-key-456", b"ciphertext-never-shown"):
            assert secret not in response.content
    assert operator_client.get(_url(FabricManager, "add")).status_code == 403
    assert operator_client.post(_url(FabricManager, "delete", sim_manager.pk)).status_code == 403
    assert (
        operator_client.post(
            _url(FabricManager, "change", sim_manager.pk), {"name": "renamed"}
        ).status_code
        == 403
    )
    assert FabricManager.objects.filter(pk=sim_manager.pk, name="sim").exists()
