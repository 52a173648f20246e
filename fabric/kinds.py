"""The device kinds: each declared once, with how it is handed out, counted and shown.

Every layer reads this registry instead of asking "is it CXL memory?" or "is it a GPU?":
the Device model and the capacity figures (`fabric.capacity`), the allocation and heal
services, request specs and quotas, the pages, the Redfish mapping both ways, the
simulator, and the placement engine, whose snapshot must stay free of Django. Hence plain
values and no imports beyond the standard library (tests/composer/placement/test_purity.py
holds it so).

A kind's `name` is the value stored in `Device.kind` (`fabric.choices.DeviceKind`, which a
test holds equal to this registry). Adding a kind is one `Kind(...)` in `DECLARED` plus its
tests (CONTRIBUTING.md, "Adding a device kind"); tests declare a kind of their own with
`declare()` and take it back with `withdraw()`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Literal

__all__ = [
    "DECLARED",
    "Kind",
    "Measure",
    "Partition",
    "QuotaLimit",
    "Redfish",
    "all_kinds",
    "balanced",
    "by_pcie_class",
    "by_processor_type",
    "declare",
    "find",
    "is_sliced",
    "kind",
    "label",
    "measured",
    "names",
    "partitioned",
    "plural",
    "requestable",
    "shares_per_device",
    "withdraw",
]

# How a device is handed out: whole (one composition holds it), in GiB slices of its
# `memory_gib` (several hosts, one slice per device and host: CXL memory), or in `shares`
# parts held by several compositions on the one host it is bound to.
Partition = Literal["whole", "slices", "shares"]
# What a request asks for of it: a number of devices, GiB (`memory_gib`) or GB (NVMe
# capacity, asked for in TB as `storage_tb`).
Measure = Literal["count", "gib", "gb"]
# The limits a quota on the kind may set: devices (`max_count`), GiB (`max_memory_gib`),
# TB (`max_storage_tb`).
QuotaLimit = Literal["count", "gib", "tb"]


@dataclass(frozen=True, slots=True)
class Redfish:
    """How the kind appears in Redfish, read (`fabric.drivers.redfish.mapping`) and served
    (`composer.redfish`): its resource block's type, the block property that lists its
    part with the part's id and type, the EntityType a port names it by, and the
    ProcessorType / PCIe device classes a manager reports it as (the first ProcessorType is
    the one a compose request names)."""

    block_type: str
    collection: str
    part: str
    part_type: str
    entity_type: str
    processor_types: tuple[str, ...] = ()
    pcie_classes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Kind:
    """One device kind.

    - `label`, `plural`: the kind in sentences and on pages ("GPU", "GPUs"); `amount_of`
      names its capacity after a figure ("256 GiB of CXL memory"), for kinds measured in
      GiB or GB.
    - `partition`, `shares`: how it is handed out (see `Partition`); `shares` is how many
      parts one device splits into when `partition` is "shares" (a GPU: 1000, thousandths,
      as Kubernetes and the Alibaba trace count GPU milli), 1 otherwise. The placement
      engine places shares (`composer.placement.shares`); the allocation service claims
      them (`Device.allocated_shares`, `composer.services.allocations.shares`).
    - `measure`: what a request asks for of it and what the engine counts ("count", "gib",
      "gb"); `quota`: the limits a quota on it may set.
    - `balance`: scoring keeps the hosts' free cores in proportion to the free devices of
      this kind (the CPU:GPU balance), so that no host is left with cores and no GPUs.
    - `size`, `size_label`: the Device field that says how big one is ("memory_gib",
      "capacity_gb", "" for none) and its name on the device page ("GPU memory").
    - `by_model`: pools of it are named by model even when one model exists ("H100 GPUs").
    - `enclosure`: the EnclosureKind of a chassis that holds it (the first declared kind
      found in a chassis decides).
    """

    name: str
    label: str
    plural: str
    enclosure: str
    redfish: Redfish
    amount_of: str = ""
    partition: Partition = "whole"
    shares: int = 1
    measure: Measure = "count"
    quota: tuple[QuotaLimit, ...] = ("count",)
    balance: bool = False
    size: Literal["memory_gib", "capacity_gb", ""] = ""
    size_label: str = ""
    by_model: bool = False

    def __post_init__(self) -> None:
        # A declaration that contradicts itself would fail far from here (every share
        # refused, or shares silently ignored): refuse it where it is written.
        if (self.partition == "shares") != (self.shares > 1):
            raise ValueError(
                f"Kind {self.name!r}: shares={self.shares} with partition={self.partition!r}; "
                'a kind splits into shares (more than 1) exactly when partition is "shares".'
            )

    @property
    def sliced(self) -> bool:
        """Handed out in GiB slices rather than whole."""
        return self.partition == "slices"

    @property
    def requestable(self) -> bool:
        """Asked for as a number of devices (request items); a kind handed out in slices
        is asked for only as an amount (CXL memory: `memory_gib`)."""
        return self.partition != "slices"

    @property
    def unit(self) -> str:
        """The unit its amounts are given in: "GiB", "GB", or its plural for devices."""
        return {"gib": "GiB", "gb": "GB"}.get(self.measure, self.plural)


DECLARED: tuple[Kind, ...] = (
    Kind(
        name="gpu",
        label="GPU",
        plural="GPUs",
        enclosure="gpu_chassis",
        redfish=Redfish(
            "Processor",
            "Processors",
            "GPU",
            "Processor",
            "Processor",
            processor_types=("GPU", "Accelerator"),
            pcie_classes=("DisplayController", "ProcessingAccelerators"),
        ),
        partition="shares",
        shares=1000,
        balance=True,
        size="memory_gib",
        size_label="GPU memory",
        by_model=True,
    ),
    Kind(
        name="cxl_memory",
        label="CXL memory",
        plural="CXL memory",
        enclosure="cxl_memory_box",
        redfish=Redfish("Memory", "Memory", "CXL", "Memory", "CXLDevice"),
        amount_of="CXL memory",
        partition="slices",
        measure="gib",
        quota=("gib",),
        size="memory_gib",
        size_label="CXL capacity",
    ),
    Kind(
        name="nvme",
        label="NVMe drive",
        plural="NVMe drives",
        enclosure="jbof",
        redfish=Redfish(
            "Storage", "Drives", "NVMe", "Drive", "Drive", pcie_classes=("MassStorageController",)
        ),
        amount_of="NVMe",
        measure="gb",
        quota=("count", "tb"),
        size="capacity_gb",
        size_label="NVMe capacity",
    ),
    Kind(
        name="nic",
        label="NIC",
        plural="NICs",
        enclosure="io_chassis",
        redfish=Redfish(
            "Network",
            "NetworkInterfaces",
            "NIC",
            "NetworkInterface",
            "NetworkController",
            pcie_classes=("NetworkController",),
        ),
        by_model=True,
    ),
    Kind(
        name="dpu",
        label="DPU",
        plural="DPUs",
        enclosure="io_chassis",
        redfish=Redfish(
            "Network", "NetworkInterfaces", "DPU", "NetworkInterface", "NetworkController"
        ),
        by_model=True,
    ),
    Kind(
        name="fpga",
        label="FPGA",
        plural="FPGAs",
        enclosure="io_chassis",
        redfish=Redfish(
            "Processor", "Processors", "FPGA", "Processor", "Processor", processor_types=("FPGA",)
        ),
        by_model=True,
    ),
)

_REGISTRY: dict[str, Kind] = {k.name: k for k in DECLARED}


def declare(new: Kind) -> Kind:
    """Add a kind to the registry (tests declare their own this way). Its name must be new:
    a kind is declared once."""
    if new.name in _REGISTRY:
        raise ValueError(f"Device kind {new.name!r} is already declared.")
    _REGISTRY[new.name] = new
    _clear()
    return new


def withdraw(name: str) -> None:
    """Take back a kind added with `declare` (the declared ones stay)."""
    if any(k.name == name for k in DECLARED):
        raise ValueError(f"Device kind {name!r} is declared here; it cannot be withdrawn.")
    _REGISTRY.pop(name, None)
    _clear()


def all_kinds() -> Iterator[Kind]:
    """Every kind, in declaration order."""
    return iter(tuple(_REGISTRY.values()))


def find(name: str) -> Kind | None:
    """The kind called `name`, or None (a request may name a kind that does not exist)."""
    return _REGISTRY.get(name)


def kind(name: str) -> Kind:
    """The kind called `name`; KeyError for a name never declared."""
    return _REGISTRY[name]


def label(name: str) -> str:
    """The kind in a sentence ("GPU"); an unknown name as it is."""
    found = _REGISTRY.get(name)
    return found.label if found else name


def plural(name: str) -> str:
    """More than one of the kind ("GPUs"); an unknown name as it is."""
    found = _REGISTRY.get(name)
    return found.plural if found else name


def is_sliced(name: str) -> bool:
    """Handed out in GiB slices (CXL memory) rather than whole."""
    return name in partitioned("slices")


def shares_per_device(name: str) -> int:
    """How many shares a device of kind `name` splits into (0: it is only taken whole)."""
    found = _REGISTRY.get(name)
    return found.shares if found is not None and found.partition == "shares" else 0


@cache
def names() -> tuple[str, ...]:
    """Every kind's name, in declaration order."""
    return tuple(_REGISTRY)


@cache
def partitioned(how: Partition) -> frozenset[str]:
    """The names of the kinds handed out `how` ("slices": CXL memory)."""
    return frozenset(k.name for k in _REGISTRY.values() if k.partition == how)


@cache
def requestable() -> tuple[str, ...]:
    """The kinds a request names as items, by count (not CXL memory, asked for in GiB)."""
    return tuple(k.name for k in _REGISTRY.values() if k.requestable)


@cache
def balanced() -> frozenset[str]:
    """The kinds whose free devices scoring keeps in proportion to free cores (GPUs)."""
    return frozenset(k.name for k in _REGISTRY.values() if k.balance)


@cache
def measured(measure: Measure) -> Kind:
    """The kind a request's amount in `measure` draws on: "gib" (`memory_gib`) is CXL
    memory, "gb" (`storage_tb`) NVMe. The first declared kind so measured."""
    return next(k for k in _REGISTRY.values() if k.measure == measure)


@cache
def by_processor_type(processor_type: str) -> str | None:
    """The kind a Redfish Processor of this ProcessorType is ("GPU" -> "gpu"), or None."""
    return next(
        (k.name for k in _REGISTRY.values() if processor_type in k.redfish.processor_types),
        None,
    )


@cache
def by_pcie_class(device_class: str) -> str | None:
    """The kind a Redfish PCIeDevice of this DeviceClass is, or None."""
    return next(
        (k.name for k in _REGISTRY.values() if device_class in k.redfish.pcie_classes), None
    )


def _clear() -> None:
    for helper in (
        names,
        partitioned,
        requestable,
        balanced,
        measured,
        by_processor_type,
        by_pcie_class,
    ):
        helper.cache_clear()
