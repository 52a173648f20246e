"""Test-only device kinds: declared in `fabric.kinds` for one test, withdrawn after it.

with declared(TPU):
    ...  # the registry, the engine and the capacity figures know "tpu" here
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fabric import kinds
from fabric.kinds import Kind, Redfish

# A whole accelerator whose balance with host cores scoring keeps, as it does for GPUs.
TPU = Kind(
    name="tpu",
    label="TPU",
    plural="TPUs",
    enclosure="io_chassis",
    redfish=Redfish(
        "Processor", "Processors", "TPU", "Processor", "Processor", processor_types=("TPU",)
    ),
    balance=True,
    size="memory_gib",
    size_label="TPU memory",
)
# Memory handed out in GiB slices, as CXL memory is.
HBM = Kind(
    name="hbm_pool",
    label="HBM pool",
    plural="HBM pools",
    enclosure="cxl_memory_box",
    redfish=Redfish("Memory", "Memory", "HBM", "Memory", "CXLDevice"),
    amount_of="pooled HBM",
    partition="slices",
    measure="gib",
    quota=("gib",),
    size="memory_gib",
    size_label="HBM capacity",
)


@contextmanager
def declared(*extra: Kind) -> Iterator[None]:
    """The registry with `extra` kinds for the time of the block."""
    for kind in extra:
        kinds.declare(kind)
    try:
        yield
    finally:
        for kind in extra:
            kinds.withdraw(kind.name)
