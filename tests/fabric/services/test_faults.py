"""Fault injection: validated, applied in the simulated fabric, audited, seen by discovery."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from fabric.choices import ChangeAction, DeviceState, Health
from fabric.models import ChangeRecord, Device, FabricManager, Link, SimulatedElement, Switch
from fabric.services.faults import fault_inject
from fabric.services.sync import inventory_sync


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    inventory_sync(manager=sim_manager)
    return sim_manager


def _fault(external_id: str) -> str:
    return SimulatedElement.objects.get(fabric__name="sim", external_id=external_id).fault


def test_a_fault_by_console_id_is_applied_and_audited(synced: FabricManager) -> None:
    operator = get_user_model().objects.create_user("op", is_staff=True)
    device = Device.objects.get(external_id="gpu-a-01-1")

    record = fault_inject(
        manager=synced,
        target_type="device",
        target_id=device.pk,
        action="fail",
        actor=operator,
        remote_addr="10.0.0.7",
    )

    assert _fault("gpu-a-01-1") == "failed"
    assert (record.action, record.target_type, record.target_id) == (
        ChangeAction.FAULT,
        "device",
        device.pk,
    )
    assert record.changes == {"fault": ["none", "failed"]}
    assert (record.actor, record.remote_addr) == (operator, "10.0.0.7")
    # The console learns it by discovery, like from real hardware.
    inventory_sync(manager=synced)
    device.refresh_from_db()
    assert (device.state, device.health) == (DeviceState.FAILED, Health.CRITICAL)


def test_a_fault_by_name_or_external_id_is_applied(synced: FabricManager) -> None:
    fault_inject(manager=synced, target_type="switch", target_id="cxl-spine-1", action="degrade")
    assert _fault("cxl-spine-1") == "degraded"
    link = Link.objects.first()
    fault_inject(manager=synced, target_type="link", target_id=link.external_id, action="fail")
    assert _fault(link.external_id) == "failed"
    fault_inject(manager=synced, target_type="power_feed", target_id="pdu-a-2", action="fail")
    fault_inject(manager=synced, target_type="power_feed", target_id="pdu-a-2", action="recover")
    assert _fault("pdu-a-2") == ""


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_type": "rack", "target_id": "rack-a", "action": "fail"}, "target_type"),
        ({"target_type": "device", "target_id": "gpu-a-01-1", "action": "explode"}, "action"),
        ({"target_type": "device", "target_id": "no-such-gpu", "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": 999999, "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": "", "action": "fail"}, "target_id"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    synced: FabricManager, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        fault_inject(manager=synced, **kwargs)  # type: ignore[arg-type]
    assert field in caught.value.message_dict
    assert not ChangeRecord.objects.filter(action=ChangeAction.FAULT).exists()


def test_only_simulated_managers_take_faults(synced: FabricManager) -> None:
    synced.driver = "redfish"
    with pytest.raises(ValidationError) as caught:
        fault_inject(manager=synced, target_type="device", target_id="gpu-a-01-1", action="fail")
    assert "manager" in caught.value.message_dict


def test_the_sim_fault_command_injects_and_can_sync(synced: FabricManager) -> None:
    call_command("sim_fault", "enclosure", "gpu-a-02", "fail", "--sync")
    assert _fault("gpu-a-02") == "failed"
    assert set(
        Device.objects.filter(enclosure__name="gpu-a-02").values_list("state", flat=True)
    ) == {DeviceState.FAILED}
    call_command("sim_fault", "enclosure", "gpu-a-02", "recover", "--manager", "sim")
    assert _fault("gpu-a-02") == ""


def test_the_sim_fault_command_explains_bad_targets(synced: FabricManager) -> None:
    with pytest.raises(CommandError, match="target_id"):
        call_command("sim_fault", "switch", "no-such-switch", "fail")
    with pytest.raises(CommandError, match="No fabric manager"):
        call_command("sim_fault", "switch", "cxl-spine-1", "fail", "--manager", "nope")


def test_the_sim_operation_fault_command_sets_and_clears(synced: FabricManager) -> None:
    call_command("sim_operation_fault", "bind", "timeout", "--count", "3", "--fabric", "sim")
    assert SimulatedElement.objects.exists()
    from fabric.drivers.simulated import store

    assert store.fabric_get("sim").operation_faults == {"bind": {"mode": "timeout", "remaining": 3}}
    call_command("sim_operation_fault", "bind", "timeout", "--count", "0", "--fabric", "sim")
    assert store.fabric_get("sim").operation_faults == {}
    assert Switch.objects.exists()
