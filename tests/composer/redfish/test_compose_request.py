"""A Redfish composition request read as Composer's spec, each field remembering the
property it came from. No database: no blocks are named."""

from __future__ import annotations

import pytest

from composer.redfish.caller import Caller
from composer.redfish.compose_request import system_request
from fabric.redfish_render.errors import RedfishError

NOBODY = Caller.anonymous(None)  # names no blocks, so never asked what it may see


def test_every_constraint_becomes_the_spec_field_it_means() -> None:
    request = system_request(
        {
            "Name": "mixed",
            "Description": "ignored",
            "Processors": [
                {"@Redfish.RequestedCount": 2, "ProcessorType": "GPU", "Model": "L40S 48GB"},
                {"ProcessorType": "FPGA"},
                {"@Redfish.RequestedCount": 2, "ProcessorType": "CPU", "TotalCores": 8},
            ],
            "Memory": {"Members": [{"@Redfish.RequestedCount": 2, "CapacityMiB": 262144}]},
            "Drives": [{"@Redfish.RequestCount": 3, "CapacityBytes": 4_000_000_000_000}],
            "NetworkInterfaces": {"Members": [{}]},
            "MemorySummary": {"TotalSystemMemoryGiB": 64},
            "Oem": {"Composer": {"Tenant": "acme", "Policy": "switch", "SelfHeal": True}},
        },
        NOBODY,
    )
    assert request.name == "mixed" and request.tenant == "acme"
    assert request.spec == {
        "items": [
            {"kind": "gpu", "count": 2, "model": "L40S 48GB"},
            {"kind": "fpga", "count": 1},
            {"kind": "nvme", "count": 3, "minima": {"capacity_gb": 4000.0}},
            {"kind": "nic", "count": 1},
        ],
        "cores": 16,
        "memory_gib": 512,
        "host_memory_gib": 64,
        "policy": "switch",
        "self_heal": True,
    }
    assert request.pointer("items[0].model") == "#/Processors/0/Model"
    assert request.pointer("items[2].count") == "#/Drives/0/@Redfish.RequestCount"
    assert request.pointer("items[3].minima.x") == "#/NetworkInterfaces/Members/0"
    assert request.pointer("memory_gib") == "#/Memory/Members/0/CapacityMiB"
    assert request.pointer("policy") == "#/Oem/Composer/Policy"
    assert request.pointer("nowhere") == "#"


def test_a_processor_constraint_asks_for_a_share_in_its_oem_section() -> None:
    request = system_request(
        {
            "Processors": [
                {"ProcessorType": "GPU", "Model": "L40S 48GB", "Oem": {"Composer": {"Share": 250}}},
                {"ProcessorType": "GPU", "Oem": {}},
            ]
        },
        NOBODY,
    )
    assert request.spec["items"] == [
        {"kind": "gpu", "count": 1, "model": "L40S 48GB", "share": 250},
        {"kind": "gpu", "count": 1},
    ]
    assert request.pointer("items[0].share") == "#/Processors/0/Oem/Composer/Share"
    assert request.pointer("items[0].count") == "#/Processors/0/@Redfish.RequestedCount"


def test_a_request_without_a_name_gets_one() -> None:
    request = system_request({"Processors": [{"ProcessorType": "GPU"}]}, NOBODY)
    assert request.name.startswith("system-")


@pytest.mark.parametrize(
    ("body", "message", "pointer"),
    [
        ({"Memory": [{"CapacityMiB": 1000}]}, "PropertyValueError", "#/Memory/0/CapacityMiB"),
        ({"Memory": [{"CapacityMiB": "lots"}]}, "PropertyValueTypeError", "#/Memory/0/CapacityMiB"),
        ({"Processors": "GPU"}, "PropertyValueTypeError", "#/Processors"),
        ({"Processors": [{}]}, "PropertyMissing", "#/Processors/0/ProcessorType"),
        ({"Oem": {"Vendor": {}}}, "PropertyUnknown", "#/Oem/Vendor"),
        ({"Oem": {"Composer": {"Colour": 1}}}, "PropertyUnknown", "#/Oem/Composer/Colour"),
        ({"Links": {"Chassis": []}}, "PropertyUnknown", "#/Links/Chassis"),
        (
            {"Links": {"ResourceBlocks": ["gpu-1"]}},
            "PropertyValueTypeError",
            "#/Links/ResourceBlocks/0",
        ),
        ({"BiosVersion": "1"}, "PropertyUnknown", "#/BiosVersion"),
        (
            {"Drives": [{"CapacityBytes": 10**400}]},
            "PropertyValueOutOfRange",
            "#/Drives/0/CapacityBytes",
        ),
        ({"Memory": [{"CapacityMiB": -1024}]}, "PropertyValueOutOfRange", "#/Memory/0/CapacityMiB"),
        (
            {"Processors": [{"ProcessorType": "GPU", "Oem": {"Composer": {"Share": "half"}}}]},
            "PropertyValueTypeError",
            "#/Processors/0/Oem/Composer/Share",
        ),
        (
            {"Processors": [{"ProcessorType": "GPU", "Oem": {"Vendor": {}}}]},
            "PropertyUnknown",
            "#/Processors/0/Oem/Vendor",
        ),
        (
            {"Processors": [{"ProcessorType": "GPU", "Oem": {"Composer": {"Slice": 1}}}]},
            "PropertyUnknown",
            "#/Processors/0/Oem/Composer/Slice",
        ),
        (
            {"Processors": [{"ProcessorType": "GPU", "Oem": {"Composer": 250}}]},
            "PropertyValueTypeError",
            "#/Processors/0/Oem/Composer",
        ),
        (
            {
                "Processors": [
                    {"ProcessorType": "CPU", "TotalCores": 4, "Oem": {"Composer": {"Share": 250}}}
                ]
            },
            "PropertyValueError",
            "#/Processors/0/Oem/Composer/Share",
        ),
    ],
)
def test_what_composer_does_not_take_is_refused_naming_the_property(
    body: dict[str, object], message: str, pointer: str
) -> None:
    with pytest.raises(RedfishError) as refused:
        system_request(body, NOBODY)
    info = refused.value.messages[0]
    assert info["MessageId"].endswith(f".{message}")
    assert info["RelatedProperties"] == [pointer]
    assert refused.value.status == 400
