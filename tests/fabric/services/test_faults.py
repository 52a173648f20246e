"""Fault injection: validated, applied in the simulated fabric, audited, seen by discovery."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from fabric.choices import ChangeAction, DeviceState, Health
from fabric.models import ChangeRecord, Device, FabricManager, Link, Switch
from fabric.services.fault_targets import fault_target_resolve, fault_targets
from fabric.services.sync import inventory_sync
from fabric.simulator.faults import fault_inject
from fabric.simulator.models import SimulatedElement
from tests.factories.fabric import LinkFactory, PortFactory


@pytest.fixture
def synced(sim_manager: FabricManager) -> FabricManager:
    inventory_sync(manager=sim_manager)
    return sim_manager


def _fault(external_id: str) -> str:
    return SimulatedElement.objects.get(fabric__name="sim", external_id=external_id).fault


def test_a_fault_by_console_id_is_applied_and_audited(synced: FabricManager) -> None:
    operator = get_user_model().objects.create_user("op", is_staff=True)
    device = Device.objects.get(external_id="gpu-a-01-1")

    outcome = fault_inject(
        manager=synced,
        target_type="device",
        target_id=device.pk,
        action="fail",
        actor=operator,
        remote_addr="10.0.0.7",
    )

    record = outcome.record
    assert outcome.changed and record is not None
    assert outcome.sentence() == "Device gpu-a-01-1 failed (it was running normally)."
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


def _link(a: str, b: str) -> Link:
    return next(
        link
        for link in Link.objects.select_related(
            "a_port__switch", "a_port__enclosure", "b_port__switch", "b_port__enclosure"
        )
        if {str(link.a_port.owner), str(link.b_port.owner)} == {a, b}
    )


@pytest.mark.parametrize(
    "name",
    [
        "cxl-spine-1 <-> mem-a-01",  # as the topology and the failure domains show it
        "mem-a-01 <-> cxl-spine-1",  # either way round
        "cxl-spine-1 ↔ mem-a-01",
        "  cxl-spine-1<->mem-a-01 ",
    ],
)
def test_a_link_is_found_by_the_name_the_console_shows(synced: FabricManager, name: str) -> None:
    link = _link("cxl-spine-1", "mem-a-01")

    outcome = fault_inject(manager=synced, target_type="link", target_id=name, action="fail")

    assert (outcome.target_id, outcome.target_name) == (link.pk, "cxl-spine-1 <-> mem-a-01")
    assert _fault(link.external_id) == "failed"
    assert outcome.record is not None and outcome.record.target_label == outcome.target_name


def test_a_link_is_found_with_its_ports_as_alerts_name_it(synced: FabricManager) -> None:
    link = _link("cxl-spine-1", "mem-a-01")
    assert str(link).startswith("cxl-spine-1:")  # "cxl-spine-1:p03 <-> mem-a-01:p0"

    fault_target = fault_target_resolve(manager=synced, target_type="link", target_id=str(link))

    assert fault_target == link


def test_two_links_between_the_same_ends_are_told_apart_by_their_ports(
    synced: FabricManager,
) -> None:
    link = _link("cxl-spine-1", "mem-a-01")
    spine, box = link.a_port.owner, link.b_port.owner
    if not isinstance(spine, Switch):
        spine, box = box, spine
    second = LinkFactory(
        manager=synced,
        a_port=PortFactory(manager=synced, switch=spine, name="p99"),
        b_port=PortFactory(manager=synced, switch=None, enclosure=box, name="p9"),
    )

    with pytest.raises(ValidationError) as caught:
        fault_target_resolve(
            manager=synced, target_type="link", target_id="cxl-spine-1 <-> mem-a-01"
        )
    assert "name the ports" in caught.value.message_dict["target_id"][0]
    assert "cxl-spine-1:p99 <-> mem-a-01:p9" in caught.value.message_dict["target_id"][0]
    found = fault_target_resolve(
        manager=synced, target_type="link", target_id="mem-a-01:p9 <-> cxl-spine-1:p99"
    )
    assert found == second
    names = {o.name for o in fault_targets(managers=[synced])["link"]}
    assert "cxl-spine-1:p99 <-> mem-a-01:p9" in names and "cxl-spine-1 <-> mem-a-01" not in names


def test_the_suggestions_name_every_kind_including_devices_and_links(
    synced: FabricManager,
) -> None:
    targets = fault_targets(managers=[synced])

    assert set(targets) == {"device", "link", "switch", "enclosure", "power_feed"}
    devices = {o.name: o.hint for o in targets["device"]}
    assert devices["gpu-a-01-1"] == "GPU · H100 PCIe 80GB"
    assert "cxl-spine-1 <-> mem-a-01" in {o.name for o in targets["link"]}
    assert [o.name for o in targets["power_feed"]] == ["pdu-a-1", "pdu-a-2"]
    # Every suggestion resolves to the element it stands for.
    for kind, options in targets.items():
        for option in options:
            found = fault_target_resolve(manager=synced, target_type=kind, target_id=option.name)
            assert found.pk == option.id


def test_a_number_is_a_name_first_then_a_console_id(synced: FabricManager) -> None:
    switch = Switch.objects.get(name="cxl-spine-1")
    assert fault_target_resolve(manager=synced, target_type="switch", target_id=str(switch.pk)) == (
        switch
    )
    with pytest.raises(ValidationError) as caught:
        fault_target_resolve(manager=synced, target_type="switch", target_id="9" * 40)
    assert "target_id" in caught.value.message_dict


@pytest.mark.parametrize(
    ("action", "sentence"),
    [
        ("recover", "Switch cxl-spine-1 has no fault to recover from; nothing changed."),
        ("fail", "Switch cxl-spine-1 has already failed; nothing changed."),
    ],
)
def test_an_action_that_changes_nothing_records_nothing_and_says_so(
    synced: FabricManager, action: str, sentence: str
) -> None:
    if action == "fail":
        fault_inject(manager=synced, target_type="switch", target_id="cxl-spine-1", action="fail")
    before = ChangeRecord.objects.filter(action=ChangeAction.FAULT).count()

    outcome = fault_inject(
        manager=synced, target_type="switch", target_id="cxl-spine-1", action=action
    )

    assert not outcome.changed and outcome.record is None
    assert outcome.sentence() == sentence
    assert ChangeRecord.objects.filter(action=ChangeAction.FAULT).count() == before


def test_recovery_says_what_it_was(synced: FabricManager) -> None:
    fault_inject(manager=synced, target_type="power_feed", target_id="pdu-a-2", action="degrade")
    outcome = fault_inject(
        manager=synced, target_type="power_feed", target_id="pdu-a-2", action="recover"
    )
    assert outcome.sentence() == "Power feed pdu-a-2 recovered (it was degraded)."
    assert outcome.record is not None and outcome.record.changes == {"fault": ["degraded", "none"]}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_type": "rack", "target_id": "rack-a", "action": "fail"}, "target_type"),
        ({"target_type": "device", "target_id": "gpu-a-01-1", "action": "explode"}, "action"),
        ({"target_type": "device", "target_id": "no-such-gpu", "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": 999999, "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": "", "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": "gpu\x00a", "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": "\ud800", "action": "fail"}, "target_id"),
        ({"target_type": "device", "target_id": 10**30, "action": "fail"}, "target_id"),
        (
            {"target_type": "link", "target_id": "cxl-spine-1 <-> nope", "action": "fail"},
            "target_id",
        ),
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
    from fabric.simulator import store

    assert store.fabric_get("sim").operation_faults == {"bind": {"mode": "timeout", "remaining": 3}}
    call_command("sim_operation_fault", "bind", "timeout", "--count", "0", "--fabric", "sim")
    assert store.fabric_get("sim").operation_faults == {}
    assert Switch.objects.exists()
