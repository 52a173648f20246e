"""Odd composition requests, of every wrong type in every place: answered 4xx in the Redfish
error shape, never a 500, and nothing composed."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from composer.models import Composition
from fabric.models import FabricManager

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"
COMPOSE = f"{V1}/CompositionService/Actions/CompositionService.Compose"
ODD: list[Any] = [None, True, -1, 2**70, 1.5, "", "x" * 300, "\x00", [], [None], {}, {"a": 1}]
PLACES = [
    "Name",
    "Processors",
    "Memory",
    "Drives",
    "Links",
    "Oem",
    "ProcessorSummary",
    "MemorySummary",
    "NetworkInterfaces",
]
MEMBER_PLACES = [
    ("Processors", "ProcessorType"),
    ("Processors", "Model"),
    ("Processors", "@Redfish.RequestedCount"),
    ("Processors", "TotalCores"),
    ("Memory", "CapacityMiB"),
    ("Drives", "CapacityBytes"),
    ("Drives", "Model"),
]
OEM = ["Tenant", "Policy", "MaxLatencyNs", "SameSwitch", "Critical", "SelfHeal"]


def bodies() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for place, value in itertools.product(PLACES, ODD):
        found.append({"Processors": [{"ProcessorType": "GPU"}], place: value})
    for (part, key), value in itertools.product(MEMBER_PLACES, ODD):
        member = {"ProcessorType": "GPU"} if part == "Processors" and key != "ProcessorType" else {}
        found.append({part: [{**member, key: value}]})
    for key, value in itertools.product(OEM, ODD):
        found.append({"Processors": [{"ProcessorType": "GPU"}], "Oem": {"Composer": {key: value}}})
    for value in ODD:
        found.append({"Links": {"ResourceBlocks": [{"@odata.id": value}]}})
        found.append({"Links": {"ResourceBlocks": value}})
    return found


def test_no_odd_request_is_a_500_or_composes(
    synced: FabricManager, alice: Any, redfish_as: Any
) -> None:
    client = redfish_as(alice)
    for body in bodies():
        answer = client.post(f"{V1}/Systems", body)
        assert 400 <= answer.status_code < 500 or answer.status_code == 202, (body, answer)
        if answer.status_code >= 400:
            assert answer.json()["error"]["@Message.ExtendedInfo"], body
    for value in ODD:
        for action in (
            {"RequestType": value},
            {"RequestType": "Preview", "Manifest": value},
            {"RequestType": "Preview", "Manifest": {"Stanzas": value}},
            {"RequestType": "Preview", "Manifest": {"Stanzas": [value]}},
            {"RequestType": "Apply", "ReservationId": value},
            {"RequestType": "Preview", "RequestFormat": value},
        ):
            answer = client.post(COMPOSE, action)
            assert 400 <= answer.status_code < 500, (action, answer)
    assert not Composition.objects.filter(name__startswith="x" * 10).exists()
