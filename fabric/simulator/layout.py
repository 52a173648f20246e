"""Lays out a simulated data centre: the elements of the world a `WorldSpec` describes.

`world_elements(spec)` is a deterministic function of the spec (same spec, same names,
serials, latencies) and touches no database, so the shape of the world can be read and
tested apart from how `builder.world_write` stores it in the simulated manager's tables.

Shape of the world (the default spec is the demo data centre):

- racks `rack-a`, `rack-b`, ... each with two power feeds `pdu-a-1`, `pdu-a-2`; gear in a
  rack alternates between its feeds, so losing one feed takes half the rack;
- CXL switches in leaf/spine: one or more leaves per rack (`cxl-leaf-a`), each cabled to
  two spines (`cxl-spine-1`, `cxl-spine-2`); hosts, GPU chassis and I/O chassis hang off
  their rack's leaf, CXL memory boxes and JBOFs are dual-homed to two spines so that memory
  and storage are shared by every rack and survive the loss of one spine;
- devices are named after their enclosure and slot: `gpu-a-01-3` is slot 3 of GPU
  chassis 1 in rack A;
- every switch, host and enclosure has its units in its 52U rack (`mounting.mount`):
  switches at the top, the boxes stacked from the bottom.
"""

from __future__ import annotations

import math
import random
import string
from dataclasses import dataclass
from typing import Any

from fabric.simulator.catalogue import (
    ENCLOSURES,
    GEN5_GTS,
    GPU_MODELS,
    HOST_MODELS,
    LANES,
    MEMORY_DEVICE,
    NIC,
    NVME_DRIVE,
    SWITCH,
    HardwareModel,
    lane_bandwidth_gbps,
)
from fabric.simulator.models import SimulatedElement
from fabric.simulator.mounting import mount
from fabric.simulator.spec import WorldSpec

__all__ = ["KIND_ORDER", "WorldElement", "rack_letter", "world_elements"]

Kind = SimulatedElement.Kind
KIND_ORDER = (
    Kind.RACK,
    Kind.POWER_FEED,
    Kind.SWITCH,
    Kind.HOST,
    Kind.ENCLOSURE,
    Kind.DEVICE,
    Kind.PORT,
    Kind.LINK,
)


@dataclass(frozen=True, slots=True)
class WorldElement:
    """One element to store: its kind, the manager's id for it, and what discovery reports."""

    kind: str
    external_id: str
    data: dict[str, Any]


def rack_letter(index: int) -> str:
    """0 -> "a", 25 -> "z", 26 -> "aa": the rack's short name."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = string.ascii_lowercase[rem] + letters
    return letters


def _split(total: int, parts: int) -> list[int]:
    """Spread `total` over `parts` as evenly as possible, the first parts taking the extra."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


_SERIAL_CHARS = string.digits + "ABCDEFGHJKLMNPRSTVWXYZ"


def _serial(rng: random.Random, prefix: str, digits: int = 8, *, numeric: bool = False) -> str:
    alphabet = string.digits if numeric else _SERIAL_CHARS
    return prefix + "".join(rng.choice(alphabet) for _ in range(digits))


class _World:
    """Accumulates elements and hands out switch ports while the world is laid out."""

    def __init__(self, spec: WorldSpec) -> None:
        self.spec = spec
        self.elements: dict[str, list[WorldElement]] = {kind: [] for kind in KIND_ORDER}
        self.switch_ports: dict[str, list[str]] = {}  # switch -> roles of used ports
        self.switch_order: list[str] = []

    def rng(self, external_id: str) -> random.Random:
        # Seeded per element: growing the world never changes an existing element's serial.
        return random.Random(f"{self.spec.seed}:{external_id}")

    def add(self, element_kind: str, external_id: str, /, **data: Any) -> str:
        self.elements[element_kind].append(WorldElement(element_kind, external_id, data))
        return external_id

    def add_switch(self, name: str, tier: str, rack: str, feed: str) -> None:
        rng = self.rng(name)
        self.add(
            Kind.SWITCH,
            name,
            name=name,
            protocol="cxl",
            tier=tier,
            vendor=SWITCH.vendor,
            model=SWITCH.model,
            serial=_serial(rng, SWITCH.serial_prefix),
            firmware=SWITCH.firmware,
            rack_id=rack,
            power_feed_id=feed,
            attributes={
                **SWITCH.attributes,
                "ports": self.spec.ports_per_switch,
                "lanes": self.spec.ports_per_switch * LANES,
            },
        )
        self.switch_ports[name] = []
        self.switch_order.append(name)

    def free(self, switch: str) -> int:
        return self.spec.ports_per_switch - len(self.switch_ports[switch])

    def pick(self, candidates: list[str], count: int) -> list[str]:
        """The `count` candidate switches with the most free ports (ties: the first named)."""
        ranked = sorted(candidates, key=lambda s: (-self.free(s), self.switch_order.index(s)))
        chosen = [s for s in ranked[:count] if self.free(s) > 0]
        if len(chosen) < count:
            raise ValueError("ports_per_switch is too small for this world; raise it")
        return chosen

    def take_port(self, switch: str, role: str) -> str:
        self.switch_ports[switch].append(role)
        return f"{switch}/p{len(self.switch_ports[switch]):02d}"

    def own_port(self, owner_kind: str, owner: str, number: int) -> str:
        port = f"{owner}/p{number}"
        self.add(
            Kind.PORT,
            port,
            name=f"p{number}",
            owner_kind=owner_kind,
            owner_id=owner,
            role="uplink",
            number=number,
            lanes=LANES,
            speed_gts=GEN5_GTS,
        )
        return port

    def cable(self, switch: str, role: str, other_port: str, latency: tuple[int, int]) -> None:
        """A link from a new port of `switch` to `other_port`, with a latency in ns."""
        port = self.take_port(switch, role)
        low, high = latency
        self.add(
            Kind.LINK,
            f"{port}~{other_port}",
            a_port_id=port,
            b_port_id=other_port,
            latency_ns=self.rng(port).randint(low, high),
            bandwidth_gbps=lane_bandwidth_gbps(LANES, GEN5_GTS),
            attributes={
                "kind": role,
                "generation": "PCIe Gen5",
                "protocol": "CXL 2.0",
                "width": f"x{LANES}",
            },
        )

    def finish_switch_ports(self) -> None:
        """Every switch reports all its ports, cabled or not."""
        for switch in self.switch_order:
            roles = self.switch_ports[switch]
            for number in range(1, self.spec.ports_per_switch + 1):
                role = roles[number - 1] if number <= len(roles) else "downstream"
                self.add(
                    Kind.PORT,
                    f"{switch}/p{number:02d}",
                    name=f"p{number:02d}",
                    owner_kind="switch",
                    owner_id=switch,
                    role=role,
                    number=number,
                    lanes=LANES,
                    speed_gts=GEN5_GTS,
                    attributes={} if number <= len(roles) else {"cabled": False},
                )


# Latencies of one link, in ns: a host's own link to its leaf, an enclosure's link to its
# switch, and a switch-to-switch hop (which crosses another CXL switch's port logic).
HOST_LINK_NS = (100, 150)
ENCLOSURE_LINK_NS = (150, 250)
FABRIC_LINK_NS = (200, 400)


def world_elements(spec: WorldSpec) -> list[WorldElement]:
    """Lay out the world described by `spec`, in dependency order (racks first, links last)."""
    spec.validate()
    world = _World(spec)
    racks = [rack_letter(i) for i in range(spec.racks)]
    per_rack = {
        "hosts": _split(spec.hosts, spec.racks),
        "gpu": _split(spec.gpu_enclosures, spec.racks),
        "mem": _split(spec.memory_boxes, spec.racks),
        "jbof": _split(spec.jbofs, spec.racks),
        "io": _split(spec.io_chassis, spec.racks),
    }
    nics_per_io = _split(spec.nics, spec.io_chassis) if spec.io_chassis else []

    for r, letter in enumerate(racks):
        rack = world.add(
            Kind.RACK,
            f"rack-{letter}",
            name=f"rack-{letter}",
            location=f"Hall 1, row {r // 10 + 1}, position {r % 10 + 1}",
        )
        for n in (1, 2):
            world.add(
                Kind.POWER_FEED,
                f"pdu-{letter}-{n}",
                name=f"pdu-{letter}-{n}",
                rack_id=rack,
                capacity_kw=22.0,
                attributes={"side": "AB"[n - 1], "voltage_v": 230, "phases": 3, "breaker_a": 32},
            )

    def feed(letter: str, index: int) -> str:
        return f"pdu-{letter}-{index % 2 + 1}"

    # Switches: enough leaves per rack for its hosts, GPU and I/O chassis (two ports of each
    # leaf go to spines), and enough spines for the leaves and the dual-homed boxes.
    leaves: dict[str, list[str]] = {}
    for r, letter in enumerate(racks):
        attach = per_rack["hosts"][r] + per_rack["gpu"][r] + per_rack["io"][r]
        count = max(1, math.ceil(attach / (spec.ports_per_switch - 2)))
        leaves[letter] = [
            f"cxl-leaf-{letter}" if count == 1 else f"cxl-leaf-{letter}{k + 1}"
            for k in range(count)
        ]
    leaf_count = sum(len(v) for v in leaves.values())
    spine_demand = 2 * (leaf_count + spec.memory_boxes + spec.jbofs)
    spine_count = max(2, math.ceil(spine_demand * 1.0 / spec.ports_per_switch))
    spines = [f"cxl-spine-{j + 1}" for j in range(spine_count)]
    for j, spine in enumerate(spines):
        letter = racks[j % spec.racks]
        world.add_switch(spine, "spine", f"rack-{letter}", feed(letter, j // spec.racks))
    for letter in racks:
        for k, leaf in enumerate(leaves[letter]):
            world.add_switch(leaf, "leaf", f"rack-{letter}", feed(letter, k + 1))
            for spine in world.pick(spines, 2):
                leaf_port = world.take_port(leaf, "fabric")
                world.cable(spine, "fabric", leaf_port, FABRIC_LINK_NS)

    for r, letter in enumerate(racks):
        for i in range(1, per_rack["hosts"][r] + 1):
            name = f"host-{letter}-{i:02d}"
            rng = world.rng(name)
            vendor, model, cpu, cores, memory = HOST_MODELS[rng.randrange(len(HOST_MODELS))]
            world.add(
                Kind.HOST,
                name,
                name=name,
                vendor=vendor,
                model=model,
                serial=_serial(rng, vendor[:2].upper(), 7),
                cores=cores,
                memory_gib=rng.choice(memory),
                rack_id=f"rack-{letter}",
                power_feed_id=feed(letter, i - 1),
                attributes={"cpu": cpu, "os": "Ubuntu 24.04"},
            )
            port = world.own_port("host", name, 0)
            world.cable(world.pick(leaves[letter], 1)[0], "host", port, HOST_LINK_NS)

    def enclosure(
        kind: str,
        name: str,
        letter: str,
        index: int,
        slots: int,
        uplinks: list[str],
        link_ns: tuple[int, int],
    ) -> str:
        meta = ENCLOSURES[kind]
        world.add(
            Kind.ENCLOSURE,
            name,
            name=name,
            kind=kind,
            vendor=meta.vendor,
            model=meta.model,
            serial=_serial(world.rng(name), meta.serial_prefix),
            slots=slots,
            rack_id=f"rack-{letter}",
            power_feed_id=feed(letter, index - 1),
            attributes={"firmware": meta.firmware, "psus": 2},
        )
        for number, switch in enumerate(uplinks):
            world.cable(switch, "downstream", world.own_port("enclosure", name, number), link_ns)
        return name

    def device(
        kind: str,
        name: str,
        meta: HardwareModel,
        enclosure_id: str,
        slot: int,
        memory_gib: int = 0,
        capacity_gb: int = 0,
    ) -> None:
        world.add(
            Kind.DEVICE,
            name,
            name=name,
            kind=kind,
            vendor=meta.vendor,
            model=meta.model,
            serial=_serial(
                world.rng(name), meta.serial_prefix, meta.serial_digits, numeric=meta.serial_numeric
            ),
            firmware=meta.firmware,
            enclosure_id=enclosure_id,
            slot=slot,
            memory_gib=memory_gib,
            capacity_gb=capacity_gb,
            attributes=dict(meta.attributes),
        )

    io_index = 0
    for r, letter in enumerate(racks):
        count = per_rack["gpu"][r]
        for i in range(1, count + 1):
            # The first half of a rack's GPU chassis hold the first model, and so on.
            gpu_model, gpu_memory = GPU_MODELS[((i - 1) * len(GPU_MODELS)) // count]
            name = enclosure(
                "gpu_chassis",
                f"gpu-{letter}-{i:02d}",
                letter,
                i,
                spec.gpus_per_enclosure,
                world.pick(leaves[letter], 1),
                ENCLOSURE_LINK_NS,
            )
            for slot in range(1, spec.gpus_per_enclosure + 1):
                device("gpu", f"{name}-{slot}", gpu_model, name, slot, memory_gib=gpu_memory)
        for i in range(1, per_rack["mem"][r] + 1):
            name = enclosure(
                "cxl_memory_box",
                f"mem-{letter}-{i:02d}",
                letter,
                i,
                spec.memory_devices_per_box,
                world.pick(spines, 2),
                ENCLOSURE_LINK_NS,
            )
            sizes = _split(spec.memory_box_gib, spec.memory_devices_per_box)
            for slot, size in enumerate(sizes, start=1):
                meta = HardwareModel(
                    MEMORY_DEVICE.vendor,
                    f"{MEMORY_DEVICE.model} {size}GB",
                    MEMORY_DEVICE.firmware,
                    MEMORY_DEVICE.serial_prefix,
                    MEMORY_DEVICE.attributes,
                )
                device("cxl_memory", f"{name}-{slot}", meta, name, slot, memory_gib=size)
        for i in range(1, per_rack["jbof"][r] + 1):
            name = enclosure(
                "jbof",
                f"jbof-{letter}-{i:02d}",
                letter,
                i,
                spec.drives_per_jbof,
                world.pick(spines, 2),
                ENCLOSURE_LINK_NS,
            )
            for slot in range(1, spec.drives_per_jbof + 1):
                device(
                    "nvme",
                    f"nvme-{letter}-{i:02d}-{slot}",
                    NVME_DRIVE,
                    name,
                    slot,
                    capacity_gb=7680,
                )
        for i in range(1, per_rack["io"][r] + 1):
            nics = nics_per_io[io_index]
            io_index += 1
            name = enclosure(
                "io_chassis",
                f"io-{letter}-{i:02d}",
                letter,
                i,
                nics,
                world.pick(leaves[letter], 1),
                ENCLOSURE_LINK_NS,
            )
            for slot in range(1, nics + 1):
                device("nic", f"nic-{letter}-{i:02d}-{slot}", NIC, name, slot)

    world.finish_switch_ports()
    elements = [element for kind in KIND_ORDER for element in world.elements[kind]]
    mount(elements)
    return elements
