"""What is handed out in GiB slices rather than whole: the one definition.

Plain values and no imports, so that every layer shares it: the Device model, the capacity
figures (`fabric.capacity`), the allocation service, the pool pages, the simulator, and the
placement engine, whose snapshot imports nothing that touches Django.
"""

from __future__ import annotations

__all__ = ["PARTITIONABLE_KIND", "PARTITIONABLE_KINDS", "is_partitionable"]

# fabric.choices.DeviceKind.CXL_MEMORY (a test holds them equal): a request's `memory_gib`
# draws on it.
PARTITIONABLE_KIND = "cxl_memory"
PARTITIONABLE_KINDS = frozenset({PARTITIONABLE_KIND})


def is_partitionable(kind: str) -> bool:
    """Handed out in GiB slices (CXL memory) rather than whole."""
    return kind in PARTITIONABLE_KINDS
