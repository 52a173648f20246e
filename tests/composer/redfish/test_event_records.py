"""Composer's events as Redfish Event records (composer.redfish.event_records): which
message, about which resource, and nothing a tenant's cut of the payload does not name."""

from __future__ import annotations

from typing import Any

import pytest

from composer.events import NOBODY, event_message, payload_for
from composer.models import Event
from composer.redfish.event_records import blocks_change, redfish_event
from fabric.redfish_render.messages import registries

V1 = "/redfish/v1"
AT = "2026-12-03T12:00:00+00:00"


def _message(event_type: str, payload: dict[str, Any], event_id: int = 7) -> dict[str, Any]:
    return {"id": event_id, "event_type": event_type, "at": AT, "payload": payload}


def _records(message: dict[str, Any], **kwargs: Any) -> list[tuple[str, str, list[str]]]:
    body = redfish_event(message, **kwargs)
    if body is None:
        return []
    assert body["Id"] == str(message["id"])
    assert [r["MemberId"] for r in body["Events"]] == [str(i) for i in range(len(body["Events"]))]
    return [
        (r["MessageId"], r["OriginOfCondition"]["@odata.id"], r["MessageArgs"])
        for r in body["Events"]
    ]


def _state(before: str, to: str) -> dict[str, Any]:
    payload = {"composition_id": 4, "name": "c", "tenant_id": 1, "from": before, "to": to}
    return _message("composition.state", {**payload, "reason": ""})


def test_a_composition_s_life_as_system_and_block_records() -> None:
    system = f"{V1}/Systems/4"
    assert _records(_state("requested", "placing")) == [
        ("ResourceEvent.1.4.3.ResourceCreated", system, [])
    ]
    assert _records(_state("placing", "binding")) == []  # still Starting, still OK
    ready = _state("binding", "ready")
    assert blocks_change(ready) == 4
    block = f"{V1}/CompositionService/ResourceBlocks/device-9"
    assert _records(ready, blocks=[block]) == [
        ("ResourceEvent.1.4.3.ResourceStateChanged", system, [system, "Enabled"]),
        ("Composition.1.1.3.ResourceBlockCompositionStateChanged", block, ["device-9"]),
    ]
    assert blocks_change(_state("ready", "degraded")) is None
    assert _records(_state("ready", "degraded")) == [
        ("ResourceEvent.1.4.3.ResourceStatusChangedWarning", system, [system, "Warning"])
    ]
    assert _records(_state("decomposing", "released")) == [
        ("ResourceEvent.1.4.3.ResourceRemoved", system, [])
    ]


def test_every_message_sent_is_in_a_registry_file() -> None:
    sent = {"ResourceCreated", "ResourceRemoved", "ResourceStateChanged", "ResourceChanged"}
    sent |= {f"ResourceStatusChanged{h}" for h in ("OK", "Warning", "Critical")}
    assert sent <= set(registries()["ResourceEvent"]["Messages"])
    assert "ResourceBlockCompositionStateChanged" in registries()["Composition"]["Messages"]


def test_health_changes_of_fabric_internals_have_no_record() -> None:
    change = {"id": 3, "name": "sw", "health": "critical", "previous_health": "ok"}
    payload = {
        "changes": [
            {**change, "target_type": "switch", "composition_id": None, "tenant_id": None},
            {**change, "target_type": "device", "composition_id": 4, "tenant_id": 1},
            {**change, "target_type": "host", "health": "unknown", "tenant_id": None},
        ],
        "change_count": 3,
    }
    assert _records(_message("device.health", payload)) == [
        (
            "ResourceEvent.1.4.3.ResourceStatusChangedCritical",
            f"{V1}/CompositionService/ResourceBlocks/device-3",
            [f"{V1}/CompositionService/ResourceBlocks/device-3", "Critical"],
        )
    ]
    job = {"job_id": 12, "status": "running", "tenant_id": 1}
    assert _records(_message("job.progress", job)) == [
        ("ResourceEvent.1.4.3.ResourceChanged", f"{V1}/TaskService/Tasks/12", [])
    ]
    assert _records(_message("alert.acknowledged", {"alert": {}})) == []


@pytest.mark.django_db
def test_a_tenant_hears_of_an_alert_on_its_own_systems_only() -> None:
    ref = {"name": "c", "state": "ready"}
    event = Event.objects.create(
        type="fabric.alert",
        payload={
            "type": "fabric.alert",
            "alert": {"state": "open", "severity": "critical", "source_name": "encl-7"},
            "blast_radius": {
                "compositions": [
                    {**ref, "id": 4, "tenant_id": 1},
                    {**ref, "id": 5, "tenant_id": 2},
                ],
                "compositions_degraded": [{**ref, "id": 6, "tenant_id": 2}],
                "tenants": [1, 2],
            },
        },
    )
    operator = _records(dict(event_message(event, payload=dict(event.payload))))
    assert [origin for _m, origin, _a in operator] == [f"{V1}/Systems/{n}" for n in (4, 5, 6)]
    cut = payload_for(event, tenant_id=1)
    assert cut is not None
    tenant = _records(dict(event_message(event, payload=cut)))
    assert tenant == [
        (
            "ResourceEvent.1.4.3.ResourceStatusChangedCritical",
            f"{V1}/Systems/4",
            [f"{V1}/Systems/4", "Critical"],
        )
    ]
    closed = dict(event.payload, alert={"state": "closed", "severity": "critical"})
    assert [m for m, _o, _a in _records(_message("fabric.alert", closed))] == [
        "ResourceEvent.1.4.3.ResourceStatusChangedOK"
    ] * 3


@pytest.mark.django_db
def test_a_stream_s_caller_is_re_read_and_loses_the_stream_with_its_session(
    alice: Any, acme: Any, redfish_as: Any
) -> None:
    from composer.events import scope_for
    from composer.models import Membership, RedfishSession
    from composer.redfish.sse import scope_now

    session = redfish_as(alice)
    heard = scope_for(alice)
    public_id = RedfishSession.objects.get().public_id
    assert scope_now(heard, public_id) == heard
    Membership.objects.filter(user=alice).delete()
    assert scope_now(heard, public_id).tenant_ids == frozenset()
    session.delete(f"{V1}/SessionService/Sessions/{public_id}")
    assert scope_now(heard, public_id) is NOBODY
