"""WorldSpec: how big a simulated data centre is (the demo's sizes are the defaults)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class WorldSpec:
    """How big the simulated data centre is. Totals are spread evenly over the racks.

    The defaults are the demo: 2 racks, 16 hosts, 8 GPU chassis of 8 GPUs (H100 and L40S),
    8 CXL memory boxes of 2 TiB (4 x 512 GiB devices each), 4 JBOFs of 8 x 7.68 TB drives,
    16 NICs in 4 I/O chassis, and 4 CXL switches (2 spines, 2 leaves) of 16 x16 ports.
    """

    racks: int = 2
    hosts: int = 16
    gpu_enclosures: int = 8
    gpus_per_enclosure: int = 8
    memory_boxes: int = 8
    memory_devices_per_box: int = 4
    memory_box_gib: int = 2048
    jbofs: int = 4
    drives_per_jbof: int = 8
    nics: int = 16
    nics_per_chassis: int = 4
    ports_per_switch: int = 16
    seed: int = 7

    def validate(self) -> None:
        """Raise ValueError naming the first field that is out of range."""
        for name in ("racks", "ports_per_switch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1; got {getattr(self, name)}")
        if self.ports_per_switch < 4:
            raise ValueError(f"ports_per_switch must be at least 4; got {self.ports_per_switch}")
        for spec_field in fields(self):
            value = getattr(self, spec_field.name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{spec_field.name} must be a whole number >= 0; got {value!r}")
        for per, total in (
            ("gpus_per_enclosure", "gpu_enclosures"),
            ("memory_devices_per_box", "memory_boxes"),
            ("drives_per_jbof", "jbofs"),
            ("nics_per_chassis", "nics"),
        ):
            if getattr(self, total) and getattr(self, per) < 1:
                raise ValueError(f"{per} must be at least 1 when {total} is set")
        if self.memory_boxes and self.memory_box_gib < self.memory_devices_per_box:
            raise ValueError("memory_box_gib must give each memory device at least 1 GiB")

    @property
    def io_chassis(self) -> int:
        """NIC chassis needed for `nics` at `nics_per_chassis` each."""
        return math.ceil(self.nics / self.nics_per_chassis) if self.nics else 0

    @property
    def device_count(self) -> int:
        """How many devices the world holds."""
        return (
            self.gpu_enclosures * self.gpus_per_enclosure
            + self.memory_boxes * self.memory_devices_per_box
            + self.jbofs * self.drives_per_jbof
            + self.nics
        )

    @classmethod
    def for_device_count(cls, devices: int, *, seed: int = 7) -> WorldSpec:
        """A world of exactly `devices` devices for benchmarks: 60 % GPUs, 8 % CXL memory,
        20 % NVMe, the rest NICs, one host per 4 GPUs, 8 GPU chassis per rack, 32-port
        switches."""
        if devices < 1:
            raise ValueError(f"devices must be at least 1; got {devices}")
        gpu_enclosures = max(1, round(devices * 0.60 / 8))
        memory_boxes = round(devices * 0.08 / 4)
        jbofs = round(devices * 0.20 / 24)
        used = gpu_enclosures * 8 + memory_boxes * 4 + jbofs * 24
        while used > devices:  # tiny worlds: drop storage, then memory, then GPU chassis
            if jbofs:
                jbofs, used = jbofs - 1, used - 24
            elif memory_boxes:
                memory_boxes, used = memory_boxes - 1, used - 4
            else:
                return cls(
                    racks=1,
                    hosts=1,
                    gpu_enclosures=1,
                    gpus_per_enclosure=devices,
                    memory_boxes=0,
                    jbofs=0,
                    nics=0,
                    ports_per_switch=32,
                    seed=seed,
                )
        return cls(
            racks=max(1, math.ceil(gpu_enclosures / 8)),
            hosts=max(1, gpu_enclosures * 2),
            gpu_enclosures=gpu_enclosures,
            gpus_per_enclosure=8,
            memory_boxes=memory_boxes,
            memory_devices_per_box=4,
            memory_box_gib=2048,
            jbofs=jbofs,
            drives_per_jbof=24,
            nics=devices - used,
            nics_per_chassis=8,
            ports_per_switch=32,
            seed=seed,
        )
