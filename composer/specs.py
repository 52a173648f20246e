"""The shape of a composition request ("spec"): parsed, checked and normalised. Pure Python.

A spec is the JSON a tenant sends (form, API, template):

    {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2,
                "minima": {"memory_gib": 80}}],
     "memory_gib": 1024, "storage_tb": 4, "cores": 32, "host_memory_gib": 256,
     "host": null, "max_latency_ns": 600, "policy": "switch",
     "same_switch": false, "critical": false, "self_heal": false}

`spec_normalise()` checks the shape only (types, ranges, known device kinds and policies)
and raises `SpecError` naming the field (`items[0].count`, `memory_gib`...). What needs the
database (does the model exist, is the host real, does the fabric have that many GPUs) is
checked by `composer.services.compositions`. Templates store a normalised spec too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from composer.errors import SpecError
from composer.placement.request import POLICIES, DeviceItem, PlacementRequest

__all__ = ["DEVICE_KINDS", "LIMITS", "spec_normalise", "spec_to_request"]

# fabric.choices.DeviceKind values a request may name as items (CXL memory goes by GiB).
DEVICE_KINDS = ("gpu", "nvme", "nic", "dpu", "fpga")
MAX_ITEMS = 16
# Ceilings far above any real composition: they turn typos (10**9 GPUs) into field errors.
LIMITS: dict[str, float] = {
    "count": 256,
    "memory_gib": 1024 * 1024,
    "storage_tb": 10_000,
    "cores": 4096,
    "host_memory_gib": 64 * 1024,
    "max_latency_ns": 1_000_000,
    "minimum": 1e12,
}
KEYS = (
    "items",
    "memory_gib",
    "storage_tb",
    "cores",
    "host_memory_gib",
    "host",
    "max_latency_ns",
    "policy",
    "same_switch",
    "critical",
    "self_heal",
)


def _number(value: Any, field: str, *, whole: bool, maximum: float, minimum: float = 0) -> Any:
    """`value` as an int (`whole`) or float within [minimum, maximum], else SpecError."""
    if isinstance(value, bool) or value is None:
        raise SpecError(f"{field} must be a number; got {value!r}.", field=field)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if whole and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise SpecError(f"{field} must be a number; got {value!r}.", field=field) from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"{field} must be a number; got {value!r}.", field=field)
    if whole:
        if value != int(value):
            raise SpecError(f"{field} must be a whole number; got {value!r}.", field=field)
        value = int(value)
    if value < minimum:
        raise SpecError(f"{field} must be at least {minimum:g}; got {value:g}.", field=field)
    if value > maximum:
        raise SpecError(f"{field} must be at most {maximum:,.0f}; got {value:,}.", field=field)
    return value


def _flag(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1, "true", "false", "0", "1"):
        return value in (1, "true", "1")
    raise SpecError(f"{field} must be true or false; got {value!r}.", field=field)


def _item(raw: Any, index: int) -> dict[str, Any]:
    where = f"items[{index}]"
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where} must be an object with kind and count.", field=where)
    unknown = sorted(set(raw) - {"kind", "model", "count", "minima"})
    if unknown:
        raise SpecError(f"{where} has unknown keys: {', '.join(unknown)}.", field=where)
    kind = raw.get("kind")
    if kind == "cxl_memory":
        raise SpecError(
            "CXL memory is asked for in GiB (memory_gib), not as devices.",
            field=f"{where}.kind",
        )
    if kind not in DEVICE_KINDS:
        raise SpecError(
            f"{where}.kind must be one of {', '.join(DEVICE_KINDS)}; got {kind!r}.",
            field=f"{where}.kind",
        )
    model = raw.get("model") or None
    if model is not None and (not isinstance(model, str) or len(model) > 100):
        raise SpecError(f"{where}.model must be a model name.", field=f"{where}.model")
    count = _number(
        raw.get("count", 1), f"{where}.count", whole=True, minimum=1, maximum=LIMITS["count"]
    )
    minima_raw = raw.get("minima") or {}
    if not isinstance(minima_raw, Mapping):
        raise SpecError(f"{where}.minima must map attributes to numbers.", field=f"{where}.minima")
    minima = {
        str(name): _number(value, f"{where}.minima.{name}", whole=False, maximum=LIMITS["minimum"])
        for name, value in minima_raw.items()
    }
    return {
        "kind": kind,
        "model": model.strip() if model else None,
        "count": count,
        "minima": minima,
    }


def spec_normalise(raw: Any) -> dict[str, Any]:
    """The spec with every key present, numbers as numbers; SpecError (with `field`) if bad."""
    if not isinstance(raw, Mapping):
        raise SpecError("The request must be an object.", field="spec")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise SpecError(f"Unknown fields: {', '.join(unknown)}.", field=unknown[0])
    items_raw = raw.get("items") or []
    if not isinstance(items_raw, list | tuple):
        raise SpecError("items must be a list of {kind, model, count}.", field="items")
    if len(items_raw) > MAX_ITEMS:
        raise SpecError(f"At most {MAX_ITEMS} device items.", field="items")
    spec: dict[str, Any] = {"items": [_item(item, i) for i, item in enumerate(items_raw)]}
    for name, whole in (
        ("memory_gib", True),
        ("storage_tb", False),
        ("cores", True),
        ("host_memory_gib", True),
    ):
        value = raw.get(name)
        spec[name] = (
            0 if value in (None, "") else _number(value, name, whole=whole, maximum=LIMITS[name])
        )
    latency = raw.get("max_latency_ns")
    spec["max_latency_ns"] = (
        None
        if latency in (None, "")
        else _number(
            latency, "max_latency_ns", whole=True, minimum=1, maximum=LIMITS["max_latency_ns"]
        )
    )
    host = raw.get("host")
    if host in (None, ""):
        spec["host"] = None
    elif isinstance(host, bool) or not isinstance(host, int | str):
        raise SpecError(f"host must be a host name or id; got {host!r}.", field="host")
    else:
        spec["host"] = host.strip() if isinstance(host, str) else host
    policy = raw.get("policy") or "none"
    if policy not in POLICIES:
        raise SpecError(
            f"policy must be one of {', '.join(POLICIES)}; got {policy!r}.", field="policy"
        )
    spec["policy"] = policy
    spec["same_switch"] = _flag(raw.get("same_switch", False), "same_switch")
    spec["critical"] = _flag(raw.get("critical", False), "critical")
    # Opt-in: when a device of the composition fails, a heal job replaces it from the same
    # pool under the same policy (composer.services.heal). Not a placement constraint.
    spec["self_heal"] = _flag(raw.get("self_heal", False), "self_heal")
    if (
        not (spec["items"] or spec["memory_gib"] or spec["storage_tb"] or spec["cores"])
        and not (spec["host_memory_gib"])
    ):
        raise SpecError(
            "The request asks for nothing: add devices, memory, storage or cores.", field="items"
        )
    return spec


def spec_to_request(
    spec: Mapping[str, Any], *, host: str | None, tenant: str | None
) -> PlacementRequest:
    """The placement engine's request for a normalised `spec`; `host` is the snapshot id
    ("host:<pk>") of the asked-for host, resolved by the caller."""
    return PlacementRequest(
        items=tuple(
            DeviceItem(
                kind=item["kind"],
                count=item["count"],
                model=item["model"],
                minima=dict(item["minima"]),
            )
            for item in spec["items"]
        ),
        memory_gib=spec["memory_gib"],
        storage_tb=spec["storage_tb"],
        cores=spec["cores"],
        host_memory_gib=spec["host_memory_gib"],
        host=host,
        max_latency_ns=spec["max_latency_ns"],
        policy=spec["policy"],
        same_switch=spec["same_switch"],
        critical=spec["critical"],
        tenant=tenant,
    )
