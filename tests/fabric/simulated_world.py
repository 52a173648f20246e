"""Small simulated worlds for tests: written into the simulated manager's tables, then a
FabricManager that reads them through the simulated driver (no shortcuts into the console
tables: tests learn the fabric by discovery, like the product)."""

from __future__ import annotations

from fabric.models import FabricManager
from fabric.simulator.builder import WorldSpec, world_write

# One rack (feeds pdu-a-1 and pdu-a-2), a leaf and two spines of 8 ports, three hosts, two
# GPU chassis of two GPUs (gpu-a-01 on pdu-a-1, gpu-a-02 on pdu-a-2), one 1 TiB CXL memory
# device, a JBOF of two drives, two NICs.
TINY = WorldSpec(
    racks=1,
    hosts=3,
    gpu_enclosures=2,
    gpus_per_enclosure=2,
    memory_boxes=1,
    memory_devices_per_box=1,
    memory_box_gib=1024,
    jbofs=1,
    drives_per_jbof=2,
    nics=2,
    nics_per_chassis=2,
    ports_per_switch=8,
)


def simulated_manager(
    *, name: str = "sim", fabric: str = "sim", spec: WorldSpec = TINY
) -> FabricManager:
    """Write the world of `spec` as simulated fabric `fabric` and return its manager."""
    world_write(fabric_name=fabric, spec=spec)
    manager, _ = FabricManager.objects.get_or_create(
        name=name,
        defaults={
            "driver": "simulated",
            "endpoint": f"sim://{fabric}",
            "settings": {"fabric": fabric},
        },
    )
    return manager
