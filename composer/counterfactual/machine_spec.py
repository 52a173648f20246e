"""The server shapes of a machine list: Alibaba's PAI trace `pai_machine_spec.csv`.

The file (cluster-trace-gpu-v2020 of alibaba/clusterdata, CC BY 4.0) lists one machine a
line, without a header: `machine,gpu_type,cap_cpu,cap_mem,cap_gpu` (cores, GB of memory,
GPUs). It is read where it lies (`COMPOSER_SERVER_SHAPES_CSV`, else the shared data folder
beside the repository or above it), never copied into the repository. The distinct
(gpu_type, cores, memory, GPUs) are the shapes, each with how many machines have it.
The trace's memory figure is a machine's nominal memory (512 for 512 GiB of DIMMs), taken
as GiB.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

__all__ = ["RELATIVE", "MachineShape", "machine_shapes", "machine_spec_path"]

RELATIVE = Path("shared/data/alibaba-gpu-v2020/pai_machine_spec.csv")
SOURCE = "Alibaba PAI trace 2020 (pai_machine_spec.csv)"
# A GPU type that names no model: its shape takes GPUs of any model.
ANY_MODEL = frozenset({"MISC", "CPU"})


@dataclass(frozen=True)
class MachineShape:
    """One distinct machine shape of the list and how many machines have it."""

    gpu_type: str
    gpus: int
    cores: int
    memory_gib: int
    machines: int

    @property
    def name(self) -> str:
        if not self.gpus:
            return f"PAI CPU {self.cores}c {self.memory_gib} GiB"
        return f"PAI {self.gpu_type} {self.gpus}x {self.cores}c {self.memory_gib} GiB"

    @property
    def gpu_model(self) -> str:
        return "" if self.gpu_type in ANY_MODEL else self.gpu_type


def machine_spec_path() -> Path | None:
    """The list: the setting when set (None when that file is absent), else the first
    `shared/data/...` found beside the repository or in a folder above it."""
    configured = getattr(settings, "COMPOSER_SERVER_SHAPES_CSV", "")
    if configured:
        path = Path(configured)
        return path if path.is_file() else None
    base = Path(settings.BASE_DIR).resolve()
    for parent in (base, *base.parents):
        candidate = parent / RELATIVE
        if candidate.is_file():
            return candidate
    return None


def machine_shapes(lines: Iterable[str]) -> list[MachineShape]:
    """The distinct shapes of the list's lines, most common first. A line that is not
    five fields with whole numbers where numbers belong raises ValueError naming it."""
    counts: Counter[tuple[str, int, int, int]] = Counter()
    for number, row in enumerate(csv.reader(lines), start=1):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 5:
            raise ValueError(f"line {number}: {len(row)} fields, 5 expected")
        _, gpu_type, cores, memory, gpus = (field.strip() for field in row)
        try:
            counts[(gpu_type, int(gpus), int(cores), int(memory))] += 1
        except ValueError as exc:
            raise ValueError(f"line {number}: cores, memory and GPUs must be numbers") from exc
    return [
        MachineShape(gpu_type, gpus, cores, memory, machines)
        for (gpu_type, gpus, cores, memory), machines in sorted(
            counts.items(), key=lambda item: (-item[1], item[0])
        )
    ]
