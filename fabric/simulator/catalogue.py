"""The hardware the simulated data centre is made of: vendors, models, firmware, serials.

Real products where that helps the demo read true (H100, L40S, ConnectX-7, PM1743);
enclosure and switch models are plausible stand-ins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GEN5_GTS = 32.0
LANES = 16


def lane_bandwidth_gbps(lanes: int, gts: float) -> float:
    """One direction's usable bandwidth in GB/s (128b/130b encoding): Gen5 x16 is 63 GB/s."""
    return round(lanes * gts * 128 / 130 / 8, 1)


@dataclass(frozen=True, slots=True)
class HardwareModel:
    vendor: str
    model: str
    firmware: str
    serial_prefix: str
    attributes: dict[str, Any] = field(default_factory=dict)
    # How the vendor's serials go on after the prefix: so many characters, digits only or not.
    serial_digits: int = 8
    serial_numeric: bool = False
    # How many rack units a box of this model takes (enclosures and switches).
    height_u: int = 1


# Hosts: (vendor, model, cpu, cores, memory choices in GiB); every one of them is a 2U server.
HOST_HEIGHT_U = 2
HOST_MODELS: tuple[tuple[str, str, str, int, tuple[int, ...]], ...] = (
    ("Supermicro", "AS-2125HS-TNR", "2x AMD EPYC 9354", 64, (512, 768)),
    ("Dell", "PowerEdge R760", "2x Intel Xeon Platinum 8468", 96, (768, 1024)),
    ("HPE", "ProLiant DL385 Gen11", "2x AMD EPYC 9534", 128, (1024,)),
)
GPU_MODELS: tuple[tuple[HardwareModel, int], ...] = (
    (
        HardwareModel(
            "NVIDIA",
            "H100 PCIe 80GB",
            "96.00.99.00.01",
            "1654923",
            {"architecture": "Hopper", "tdp_w": 350, "interface": "PCIe Gen5 x16"},
            serial_digits=6,
            serial_numeric=True,
        ),
        80,
    ),
    (
        HardwareModel(
            "NVIDIA",
            "L40S 48GB",
            "95.02.66.00.02",
            "1325123",
            {"architecture": "Ada Lovelace", "tdp_w": 350, "interface": "PCIe Gen4 x16"},
            serial_digits=6,
            serial_numeric=True,
        ),
        48,
    ),
)
MEMORY_DEVICE = HardwareModel(
    "SK hynix", "CMM-DDR5", "1.2.7", "SKH", {"cxl_type": 3, "media": "DDR5-4800"}
)
NVME_DRIVE = HardwareModel(
    "Samsung",
    "PM1743 7.68TB",
    "EPK9GB5Q",
    "S7JX",
    {"form_factor": "E3.S 1T", "interface": "PCIe Gen5 x4"},
)
NIC = HardwareModel(
    "NVIDIA",
    "ConnectX-7 400GbE",
    "28.39.1002",
    "MT2339",
    {"network_ports": 1, "network_gbps": 400, "interface": "PCIe Gen5 x16"},
)
SWITCH = HardwareModel("XConn Technologies", "XC50256", "2.1.4", "XC5", {"cxl_version": "2.0"})
ENCLOSURES: dict[str, HardwareModel] = {
    "gpu_chassis": HardwareModel(
        "H3 Platform", "Falcon 5208 GPU chassis", "3.4.0", "H3F", height_u=4
    ),
    "cxl_memory_box": HardwareModel(
        "SK hynix", "Niagara 2.0 CXL memory box", "2.0.3", "SKN", height_u=2
    ),
    "jbof": HardwareModel("Western Digital", "OpenFlex Data24 4000", "4.1.2", "WDO", height_u=2),
    "io_chassis": HardwareModel("H3 Platform", "Falcon 4010 I/O chassis", "3.4.0", "H3I"),
}
