"""A Redfish composition request (the body of `POST /Systems`, or a `ComposeSystem` stanza's
`Request`) read as Composer's request: a spec for `composer.specs`, a name, a tenant.

Two ways, which may be mixed:

- specific: `Links.ResourceBlocks` names the blocks (one host block at most, and device
  blocks); they become the spec's `host` and named `devices`;
- constrained: each of `Processors`, `Memory`, `Storage`, `EthernetInterfaces` /
  `NetworkInterfaces` is a list (or `{"Members": [...]}`) of constraints, each with
  `@Redfish.RequestedCount` (default 1):
    - `Processors`: `ProcessorType` `GPU` or `FPGA` (with an optional `Model`) is that many
      devices; with `Oem.Composer.Share` (thousandths of one device, the kind's shares), a
      share of one GPU instead (Redfish has no word for part of a processor); `CPU` with
      `TotalCores` asks the host for count x cores;
    - `Memory`: `CapacityMiB` each, as CXL memory (whole GiB);
    - `Drives` (or `Storage`): NVMe drives, each of at least `CapacityBytes` when given,
      `Model` optional;
    - `EthernetInterfaces` / `NetworkInterfaces`: NICs.
  `ProcessorSummary.CoreCount` and `MemorySummary.TotalSystemMemoryGiB` ask the host for
  cores and local memory.

`Oem.Composer` carries what Redfish has no word for: `Tenant` (its slug), `Policy`,
`MaxLatencyNs`, `SameSwitch`, `Critical`, `SelfHeal`, and `ReservationSeconds` (how long a
`PreviewReserve` holds). Every spec field keeps the JSON pointer of the property it came
from (`pointers`), so an error names the property the client sent. Nothing here reads the
database but the block lookup.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from composer.redfish.caller import Caller
from composer.redfish.composed import block_target
from fabric.kinds import all_kinds
from fabric.models import Host
from fabric.redfish_render.errors import RedfishError, refuse
from fabric.validators import text_problem

__all__ = ["SystemRequest", "system_request"]

COUNT = "@Redfish.RequestedCount"
# The same annotation as some clients spell it.
COUNT_ALIASES = (COUNT, "@Redfish.RequestCount")
# The ProcessorType a request names -> the device kind: each kind's first (`fabric.kinds`).
PROCESSOR_KINDS = {
    k.redfish.processor_types[0]: k.name for k in all_kinds() if k.redfish.processor_types
}
IGNORED = frozenset({"Description", "PowerState", "Id"})
OEM_KEYS: dict[str, str] = {
    "Policy": "policy",
    "MaxLatencyNs": "max_latency_ns",
    "SameSwitch": "same_switch",
    "Critical": "critical",
    "SelfHeal": "self_heal",
}
MIB_PER_GIB = 1024
LARGEST = 2**53  # a JSON number every client reads exactly; far above any real request


@dataclass
class SystemRequest:
    """What a Redfish request asks for, as Composer's request."""

    name: str
    spec: dict[str, Any] = field(default_factory=dict)
    tenant: str | None = None
    blocks: list[tuple[str, Any]] = field(default_factory=list)  # (pointer, device or host)
    reservation_s: Any = None
    pointers: dict[str, str] = field(default_factory=dict)  # spec field -> JSON pointer

    def pointer(self, spec_field: str | None) -> str:
        """The request's property a spec field came from (its longest known prefix)."""
        name = spec_field or ""
        while name:
            if name in self.pointers:
                return self.pointers[name]
            cut = max(name.rfind("."), name.rfind("["))
            name = name[:cut] if cut > 0 else ""
        return self.pointers.get("", "#")


def _unknown(pointer: str) -> RedfishError:
    name = pointer.rsplit("/", 1)[-1]
    return refuse(
        400,
        f"{name} is not a property Composer takes in a composition request ({pointer[1:]}).",
        "Base.PropertyUnknown",
        name,
        properties=(pointer,),
    )


def _type_error(value: Any, pointer: str, want: str) -> RedfishError:
    name = pointer.rsplit("/", 1)[-1]
    return refuse(
        400,
        f"{name} must be {want} (got {value!r}).",
        "Base.PropertyValueTypeError",
        value,
        name,
        properties=(pointer,),
    )


def _check_keys(body: dict[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    for key in body:
        if "@" in key or key in allowed:
            continue
        raise _unknown(f"{where}/{key}")


def _members(value: Any, where: str) -> list[tuple[dict[str, Any], str]]:
    """A constraint list, given as a list or as {"Members": [...]}, with each pointer."""
    if isinstance(value, dict):
        _check_keys(value, {"Members"}, where)
        value, where = value.get("Members", []), f"{where}/Members"
    if not isinstance(value, list):
        raise _type_error(value, where, "a list of constraints")
    found = []
    for index, member in enumerate(value):
        if not isinstance(member, dict):
            raise _type_error(member, f"{where}/{index}", "an object")
        found.append((member, f"{where}/{index}"))
    return found


def _count(member: dict[str, Any], where: str) -> tuple[Any, str]:
    for alias in COUNT_ALIASES:
        if alias in member:
            return member[alias], f"{where}/{alias}"
    return 1, f"{where}/{COUNT}"


def _whole(value: Any, pointer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(value, pointer, "a whole number")
    if not 0 <= value <= LARGEST:
        name = pointer.rsplit("/", 1)[-1]
        raise refuse(
            400,
            f"{name} must be from 0 to {LARGEST:,} (got {value}).",
            "Base.PropertyValueOutOfRange",
            value,
            name,
            properties=(pointer,),
        )
    return value


def _item(request: SystemRequest, kind: str, member: dict[str, Any], where: str) -> None:
    items: list[dict[str, Any]] = request.spec.setdefault("items", [])
    index = len(items)
    count, count_at = _count(member, where)
    item: dict[str, Any] = {"kind": kind, "count": count}
    request.pointers[f"items[{index}]"] = where
    request.pointers[f"items[{index}].count"] = count_at
    request.pointers[f"items[{index}].kind"] = where
    if member.get("Model") is not None:
        item["model"] = member["Model"]
        request.pointers[f"items[{index}].model"] = f"{where}/Model"
    if member.get("CapacityBytes") is not None:
        size = _whole(member["CapacityBytes"], f"{where}/CapacityBytes")
        item["minima"] = {"capacity_gb": size / 1e9}
        request.pointers[f"items[{index}].minima"] = f"{where}/CapacityBytes"
    items.append(item)


def _share(member: dict[str, Any], at: str) -> int | None:
    """A processor constraint's `Oem.Composer.Share`: the thousandths of one device it asks
    for (the kind's shares, `fabric.kinds`), or None. Its range is the spec's to check."""
    value: Any = member
    for key, allowed in (("Oem", {"Composer"}), ("Composer", {"Share"})):
        value, at = value.get(key), f"{at}/{key}"
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _type_error(value, at, "an object")
        _check_keys(value, allowed, at)
    share = value.get("Share")
    return None if share is None else _whole(share, f"{at}/Share")


def _processors(request: SystemRequest, value: Any, where: str) -> None:
    for member, at in _members(value, where):
        _check_keys(member, {"ProcessorType", "Model", "TotalCores", "Oem"}, at)
        kind = member.get("ProcessorType")
        if kind is not None and not isinstance(kind, str):
            raise _type_error(kind, f"{at}/ProcessorType", "a string")
        share = _share(member, at)
        if share is not None and kind == "CPU":
            raise refuse(
                400,
                "Share is a share of one GPU; the host's CPU cores are asked for whole, "
                "with TotalCores.",
                "Base.PropertyValueError",
                "Share",
                properties=(f"{at}/Oem/Composer/Share",),
            )
        if kind == "CPU":
            count, count_at = _count(member, at)
            cores = _whole(member.get("TotalCores", 0), f"{at}/TotalCores")
            request.spec["cores"] = request.spec.get("cores", 0) + _whole(count, count_at) * cores
            request.pointers["cores"] = f"{at}/TotalCores"
            continue
        if kind not in PROCESSOR_KINDS:
            raise refuse(
                400,
                f"ProcessorType must be one of GPU, FPGA or CPU (got {kind!r}).",
                "Base.PropertyValueNotInList" if kind is not None else "Base.PropertyMissing",
                *((kind, "ProcessorType") if kind is not None else ("ProcessorType",)),
                properties=(f"{at}/ProcessorType",),
            )
        _item(request, PROCESSOR_KINDS[kind], member, at)
        if share is not None:
            index = len(request.spec["items"]) - 1
            request.spec["items"][index]["share"] = share
            request.pointers[f"items[{index}].share"] = f"{at}/Oem/Composer/Share"


def _memory(request: SystemRequest, value: Any, where: str) -> None:
    for member, at in _members(value, where):
        _check_keys(member, {"CapacityMiB", "MemoryType", "MemoryDeviceType"}, at)
        if "CapacityMiB" not in member:
            raise refuse(
                400,
                "Each memory constraint gives CapacityMiB.",
                "Base.PropertyMissing",
                "CapacityMiB",
                properties=(f"{at}/CapacityMiB",),
            )
        mib = _whole(member["CapacityMiB"], f"{at}/CapacityMiB")
        count, count_at = _count(member, at)
        if mib % MIB_PER_GIB:
            raise refuse(
                400,
                f"CapacityMiB is taken in whole GiB (multiples of 1024; got {mib}).",
                "Base.PropertyValueError",
                "CapacityMiB",
                properties=(f"{at}/CapacityMiB",),
            )
        gib = _whole(count, count_at) * mib // MIB_PER_GIB
        request.spec["memory_gib"] = request.spec.get("memory_gib", 0) + gib
        request.pointers["memory_gib"] = f"{at}/CapacityMiB"


def _summaries(request: SystemRequest, body: dict[str, Any]) -> None:
    cores = body.get("ProcessorSummary")
    if cores is not None:
        if not isinstance(cores, dict):
            raise _type_error(cores, "#/ProcessorSummary", "an object")
        _check_keys(cores, {"CoreCount"}, "#/ProcessorSummary")
        if "CoreCount" in cores:
            request.spec["cores"] = request.spec.get("cores", 0) + _whole(
                cores["CoreCount"], "#/ProcessorSummary/CoreCount"
            )
            request.pointers["cores"] = "#/ProcessorSummary/CoreCount"
    memory = body.get("MemorySummary")
    if memory is not None:
        if not isinstance(memory, dict):
            raise _type_error(memory, "#/MemorySummary", "an object")
        _check_keys(memory, {"TotalSystemMemoryGiB"}, "#/MemorySummary")
        if "TotalSystemMemoryGiB" in memory:
            request.spec["host_memory_gib"] = memory["TotalSystemMemoryGiB"]
            request.pointers["host_memory_gib"] = "#/MemorySummary/TotalSystemMemoryGiB"


def _blocks(request: SystemRequest, links: Any, where: str, caller: Caller) -> None:
    if not isinstance(links, dict):
        raise _type_error(links, where, "an object")
    _check_keys(links, {"ResourceBlocks"}, where)
    named = links.get("ResourceBlocks") or []
    if not isinstance(named, list):
        raise _type_error(named, f"{where}/ResourceBlocks", "a list of links")
    devices: list[dict[str, Any]] = []
    for index, link in enumerate(named):
        at = f"{where}/ResourceBlocks/{index}"
        path = link.get("@odata.id") if isinstance(link, dict) else None
        if not isinstance(path, str):
            raise _type_error(link, at, 'a link ({"@odata.id": ...})')
        target = block_target(path, caller, at)
        request.blocks.append((at, target))
        if isinstance(target, Host):
            if "host" in request.spec:
                raise refuse(
                    400,
                    "A system is built on one host: name one compute block.",
                    "Base.PropertyValueError",
                    "ResourceBlocks",
                    properties=(at,),
                )
            request.spec["host"] = target.pk
            request.pointers["host"] = at
        else:
            request.pointers[f"devices[{len(devices)}]"] = at
            devices.append({"device": target.pk})
    if devices:
        request.spec["devices"] = devices


def _oem(request: SystemRequest, oem: Any, where: str) -> None:
    if not isinstance(oem, dict):
        raise _type_error(oem, where, "an object")
    _check_keys(oem, {"Composer"}, where)
    ours = oem.get("Composer") or {}
    where = f"{where}/Composer"
    if not isinstance(ours, dict):
        raise _type_error(ours, where, "an object")
    _check_keys(ours, {"Tenant", "ReservationSeconds", *OEM_KEYS}, where)
    if "Tenant" in ours:
        if not isinstance(ours["Tenant"], str):
            raise _type_error(ours["Tenant"], f"{where}/Tenant", "a tenant's slug")
        request.tenant = ours["Tenant"]
    request.reservation_s = ours.get("ReservationSeconds")
    for key, spec_key in OEM_KEYS.items():
        if key in ours:
            request.spec[spec_key] = ours[key]
            request.pointers[spec_key] = f"{where}/{key}"


def _storage(request: SystemRequest, value: Any, where: str) -> None:
    for member, at in _members(value, where):
        _check_keys(member, {"CapacityBytes", "Model"}, at)
        _item(request, "nvme", member, at)


def _nics(request: SystemRequest, value: Any, where: str) -> None:
    for member, at in _members(value, where):
        _check_keys(member, set(), at)
        _item(request, "nic", member, at)


PARTS = {
    "Processors": _processors,
    "Memory": _memory,
    "Storage": _storage,
    "Drives": _storage,
    "EthernetInterfaces": _nics,
    "NetworkInterfaces": _nics,
}


def _text_checked(value: Any, where: str) -> None:
    """Every string of the request is one a name may be (no control characters, no
    bidirectional overrides): the database refuses some of them, and none is meant."""
    if isinstance(value, dict):
        for key, item in value.items():
            _text_checked(item, f"{where}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _text_checked(item, f"{where}/{index}")
    elif isinstance(value, str) and (problem := text_problem(value)) is not None:
        name = where.rsplit("/", 1)[-1]
        raise refuse(
            400,
            f"{name}: {problem}",
            "Base.PropertyValueFormatError",
            value.encode("unicode_escape").decode("ascii"),
            name,
            properties=(where,),
        )


def system_request(body: dict[str, Any], caller: Caller) -> SystemRequest:
    """Read `body` (a ComputerSystem to create) for `caller`, who may name only the blocks
    it sees. Raises RedfishError (400) naming the property for what Composer does not take;
    the spec itself is checked by the service."""
    allowed = {"Name", "Links", "Oem", "ProcessorSummary", "MemorySummary", *PARTS}
    _check_keys(body, allowed | IGNORED, "#")
    _text_checked(body, "#")
    name = body.get("Name")
    if name is not None and not isinstance(name, str):
        raise _type_error(name, "#/Name", "a string")
    request = SystemRequest(name=name or f"system-{secrets.token_hex(3)}")
    request.pointers.update({"name": "#/Name", "": "#"})
    for key, read in PARTS.items():
        if body.get(key) is not None:
            read(request, body[key], f"#/{key}")
    _summaries(request, body)
    if body.get("Links") is not None:
        _blocks(request, body["Links"], "#/Links", caller)
    if body.get("Oem") is not None:
        _oem(request, body["Oem"], "#/Oem")
    asked = ("items", "devices", "memory_gib", "cores", "host", "host_memory_gib")
    if not any(request.spec.get(k) for k in asked):
        raise refuse(
            400,
            "The request asks for nothing: name resource blocks (Links.ResourceBlocks) or "
            "constrain Processors, Memory, Drives or NetworkInterfaces.",
            "Base.CreateFailedMissingReqProperties",
            "Links/ResourceBlocks",
            properties=("#/Links/ResourceBlocks",),
        )
    return request
