"""fabric.kinds: each device kind declared once; a table per kind, the lookups, and a kind
declared by a test (no database)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabric import kinds
from fabric.choices import DeviceKind, EnclosureKind
from tests.support.kinds import HBM, TPU, declared


def test_the_registry_is_the_stored_device_kinds() -> None:
    assert [(k.name, k.label) for k in kinds.all_kinds()] == list(DeviceKind.choices)
    assert kinds.names() == tuple(DeviceKind.values)


@pytest.mark.parametrize(
    ("name", "partition", "shares", "measure", "quota", "balance", "size", "requestable"),
    [
        ("gpu", "shares", 1000, "count", ("count",), True, "memory_gib", True),
        ("cxl_memory", "slices", 1, "gib", ("gib",), False, "memory_gib", False),
        ("nvme", "whole", 1, "gb", ("count", "tb"), False, "capacity_gb", True),
        ("nic", "whole", 1, "count", ("count",), False, "", True),
        ("dpu", "whole", 1, "count", ("count",), False, "", True),
        ("fpga", "whole", 1, "count", ("count",), False, "", True),
    ],
)
def test_how_each_kind_is_handed_out_counted_and_asked_for(
    name: str,
    partition: str,
    shares: int,
    measure: str,
    quota: tuple[str, ...],
    balance: bool,
    size: str,
    requestable: bool,
) -> None:
    kind = kinds.kind(name)
    assert (kind.partition, kind.shares, kind.measure) == (partition, shares, measure)
    assert (kind.quota, kind.balance, kind.size) == (quota, balance, size)
    assert kind.requestable is requestable
    assert kind.sliced is (partition == "slices")
    assert kind.enclosure in EnclosureKind.values


@pytest.mark.parametrize(
    ("name", "label", "plural", "unit", "block", "part"),
    [
        ("gpu", "GPU", "GPUs", "GPUs", "Processor", ("Processors", "GPU", "Processor")),
        ("cxl_memory", "CXL memory", "CXL memory", "GiB", "Memory", ("Memory", "CXL", "Memory")),
        ("nvme", "NVMe drive", "NVMe drives", "GB", "Storage", ("Drives", "NVMe", "Drive")),
        ("nic", "NIC", "NICs", "NICs", "Network", ("NetworkInterfaces", "NIC", "NetworkInterface")),
        ("dpu", "DPU", "DPUs", "DPUs", "Network", ("NetworkInterfaces", "DPU", "NetworkInterface")),
        ("fpga", "FPGA", "FPGAs", "FPGAs", "Processor", ("Processors", "FPGA", "Processor")),
    ],
)
def test_how_each_kind_is_shown(
    name: str, label: str, plural: str, unit: str, block: str, part: tuple[str, str, str]
) -> None:
    kind = kinds.kind(name)
    assert (kinds.label(name), kinds.plural(name), kind.unit) == (label, plural, unit)
    assert kind.redfish.block_type == block
    assert (kind.redfish.collection, kind.redfish.part, kind.redfish.part_type) == part


@pytest.mark.parametrize(
    ("partition", "shares"), [("shares", 1), ("whole", 1000), ("slices", 8), ("shares", 0)]
)
def test_a_declaration_that_contradicts_itself_is_refused_where_it_is_written(
    partition: kinds.Partition, shares: int
) -> None:
    with pytest.raises(ValueError, match="exactly when partition is"):
        replace(TPU, partition=partition, shares=shares)


def test_a_gpu_declares_its_shares_but_is_still_handed_out_whole() -> None:
    assert kinds.kind("gpu").shares == 1000
    assert not kinds.is_sliced("gpu")
    assert "gpu" in kinds.requestable()
    assert kinds.partitioned("slices") == {"cxl_memory"}


def test_lookups() -> None:
    assert kinds.find("banana") is None
    assert (kinds.label("banana"), kinds.plural("banana")) == ("banana", "banana")
    with pytest.raises(KeyError):
        kinds.kind("banana")
    assert kinds.measured("gib").name == "cxl_memory"
    assert kinds.measured("gb").name == "nvme"
    assert kinds.balanced() == {"gpu"}
    assert kinds.requestable() == ("gpu", "nvme", "nic", "dpu", "fpga")
    assert [kinds.by_processor_type(t) for t in ("GPU", "Accelerator", "FPGA", "CPU")] == [
        "gpu",
        "gpu",
        "fpga",
        None,
    ]
    assert kinds.by_pcie_class("MassStorageController") == "nvme"
    assert kinds.by_pcie_class("NetworkController") == "nic"
    assert kinds.by_pcie_class("Bridge") is None


def test_a_kind_declared_by_a_test_is_read_by_every_lookup_then_withdrawn() -> None:
    with declared(TPU, HBM):
        assert kinds.kind("tpu") is TPU
        assert kinds.balanced() == {"gpu", "tpu"}
        assert kinds.partitioned("slices") == {"cxl_memory", "hbm_pool"}
        assert kinds.is_sliced("hbm_pool")
        assert "tpu" in kinds.requestable()
        assert "hbm_pool" not in kinds.requestable()
        assert kinds.names()[-2:] == ("tpu", "hbm_pool")
        assert kinds.by_processor_type("TPU") == "tpu"  # what the Redfish mapping reads
    assert kinds.find("tpu") is None
    assert kinds.by_processor_type("TPU") is None
    assert kinds.balanced() == {"gpu"}
    assert kinds.partitioned("slices") == {"cxl_memory"}


def test_a_kind_is_declared_once() -> None:
    with pytest.raises(ValueError, match="already declared"):
        kinds.declare(kinds.kind("gpu"))
    with pytest.raises(ValueError, match="cannot be withdrawn"):
        kinds.withdraw("gpu")
