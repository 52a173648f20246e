"""What each resource block holds, as the resource a Redfish client looks for there: a
GPU or FPGA is a Processor, a CXL memory device a Memory, an NVMe drive a Drive, a NIC or
DPU a NetworkInterface, and a host's compute block its CPU (a Processor) and its DRAM (a
Memory). Each block holds one part, at `<block>/<collection>/<part>`
(`.../ResourceBlocks/gpu-12/Processors/GPU`), seen by whoever sees the block.
"""

from __future__ import annotations

from typing import Any

from composer.redfish.blocks import DEVICE_PARTS, node_path
from composer.redfish.caller import Call
from composer.redfish.inventory import Inventory, inventory, status
from composer.redfish.paths import RESOURCE_BLOCKS
from composer.redfish.routes import Route
from fabric.redfish_render.build import resource
from fabric.redfish_render.errors import refuse
from fabric.topology.elements import Node

MIB = 1024  # MiB per GiB


def _body(node: Node, prop: str, part: str, path: str) -> dict[str, Any] | None:
    attrs = node.attrs
    own = {"Status": status(node)}
    if node.kind == "host":
        if (prop, part) == ("Processors", "CPU"):
            return resource(
                path, "CPU", "Processor", ProcessorType="CPU",
                TotalCores=attrs.get("cores", 0), **own,
            )  # fmt: skip
        if (prop, part) == ("Memory", "DRAM"):
            gib = attrs.get("memory_gib", 0)
            return resource(path, "DRAM", "Memory", MemoryType="DRAM", CapacityMiB=gib * MIB, **own)
        return None
    kind = attrs["device_kind"]
    if DEVICE_PARTS.get(kind, ("", "", ""))[:2] != (prop, part):
        return None
    model = {"Model": attrs["model"]} if attrs.get("model") else {}
    if prop == "Processors":
        memory = {"TotalMemorySizeMiB": attrs.get("memory_gib", 0) * MIB}
        return resource(
            path, node.name, "Processor", ProcessorType=part, MemorySummary=memory,
            **model, **own,
        )  # fmt: skip
    if prop == "Memory":
        gib = attrs.get("memory_gib", 0)
        return resource(
            path, node.name, "Memory", MemoryType="DRAM", CapacityMiB=gib * MIB, **model, **own
        )
    if prop == "Drives":
        return resource(
            path, node.name, "Drive", Protocol="NVMe", MediaType="SSD",
            CapacityBytes=attrs.get("capacity_gb", 0) * 10**9, **model, **own,
        )  # fmt: skip
    return resource(path, node.name, "NetworkInterface", **own)


def part_get(call: Call) -> dict[str, Any]:
    inv: Inventory = inventory(call)
    key, prop, part = call.params["block"], call.params["prop"], call.params["part"]
    kind, _, pk = key.rpartition("-")
    node = inv.node(f"{'host' if kind == 'host' else 'device'}:{pk}")
    found = None
    if node is not None and node_path(node) == f"{RESOURCE_BLOCKS}/{key}" and inv.visible(node):
        found = _body(node, prop, part, call.path)
    if found is None:
        raise refuse(404, f"There is no {call.path}.", "Base.ResourceMissingAtURI", call.path)
    return found


ROUTES = [Route(f"{RESOURCE_BLOCKS}/{{block}}/{{prop}}/{{part}}", get=part_get)]
