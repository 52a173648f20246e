"""A composition spec in words: what a template (or a request) asks for, in one line.

"2 GPUs (H100 PCIe 80GB, at least 80 GiB each), 1 TiB of CXL memory, 16 host cores; within
800 ns; spread across enclosures; self-heal": the templates page and its export show this
rather than the JSON. The device kinds' words come from their declarations (`fabric.kinds`)
and a policy's from the policy registry, so a new kind or policy reads right here unasked.

Named devices and a pinned host are fabric internals to a tenant member: the member's line
counts them ("3 named devices", "on a set host") without naming them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import composer.placement.policies as policies
from fabric.kinds import find

__all__ = ["spec_words"]


def _amount(value: float) -> str:
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return text or "0"


def _gib(value: float) -> str:
    return f"{_amount(value / 1024)} TiB" if value >= 1024 else f"{_amount(value)} GiB"


def _item(item: Mapping[str, Any]) -> str:
    """One device item: "2 GPUs (H100 PCIe 80GB, at least 80 GiB each)"."""
    kind = str(item.get("kind") or "")
    declared = find(kind)
    label = declared.label if declared else kind
    count = int(item.get("count") or 1)
    if item.get("share"):
        words = f"a {item['share']}/{declared.shares if declared else 1000} share of a {label}"
    else:
        words = f"{count} {declared.plural if declared and count != 1 else label}"
    details = []
    if item.get("model"):
        details.append(str(item["model"]))
    minimum = (item.get("minima") or {}).get("memory_gib")
    if minimum:
        details.append(f"at least {_gib(float(minimum))}{' each' if count != 1 else ''}")
    return f"{words} ({', '.join(details)})" if details else words


def _pin(device: Mapping[str, Any]) -> str:
    """A named device: "gpu-03", "cxl-01 (256 GiB)"."""
    gib = device.get("gib")
    return f"{device.get('device')} ({_gib(float(gib))})" if gib else str(device.get("device"))


def _lowered(text: str) -> str:
    return text[:1].lower() + text[1:]


def spec_words(spec: Mapping[str, Any] | None, *, operator: bool) -> str:
    """`spec` (a normalised composition spec) in one line; `operator`: name the pinned host
    and the named devices, which a tenant member's line only counts."""
    spec = spec or {}
    asks = [_item(item) for item in spec.get("items") or () if isinstance(item, Mapping)]
    devices = [d for d in spec.get("devices") or () if isinstance(d, Mapping)]
    if devices and operator:
        named = ", ".join(_pin(d) for d in devices)
        asks.append(f"named device{'s' if len(devices) != 1 else ''} {named}")
    elif devices:
        asks.append(f"{len(devices)} named device{'s' if len(devices) != 1 else ''}")
    if spec.get("memory_gib"):
        asks.append(f"{_gib(float(spec['memory_gib']))} of CXL memory")
    if spec.get("storage_tb"):
        asks.append(f"{_amount(float(spec['storage_tb']))} TB of NVMe")
    if spec.get("cores"):
        asks.append(f"{spec['cores']} host core{'s' if spec['cores'] != 1 else ''}")
    if spec.get("host_memory_gib"):
        asks.append(f"{_gib(float(spec['host_memory_gib']))} of host memory")
    parts = [", ".join(asks) or "nothing"]
    if spec.get("host") not in (None, ""):
        parts.append(f"on host {spec['host']}" if operator else "on a set host")
    if spec.get("max_latency_ns"):
        parts.append(f"within {spec['max_latency_ns']} ns")
    policy = policies.choice(str(spec.get("policy") or "none"))
    if policy is not None and policy.name != policies.NONE.name:
        parts.append(policy.words or _lowered(policy.label))
    if spec.get("same_switch"):
        parts.append(_lowered(policies.SAME_SWITCH.label))
    if spec.get("critical"):
        parts.append(_lowered(policies.CRITICAL.label))
    if spec.get("self_heal"):
        parts.append("self-heal")
    return "; ".join(parts)
