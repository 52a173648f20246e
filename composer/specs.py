"""The shape of a composition request ("spec"): parsed, checked and normalised. Pure Python.

A spec is the JSON a tenant sends (form, API, template):

    {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 2,
                "minima": {"memory_gib": 80}},
               {"kind": "gpu", "share": 250}],
     "memory_gib": 1024, "storage_tb": 4, "cores": 32, "host_memory_gib": 256,
     "devices": [{"device": "gpu-03"}, {"device": 41, "gib": 256}],
     "host": null, "max_latency_ns": 600, "policy": "switch",
     "same_switch": false, "critical": false, "self_heal": false}

An item with `share` asks for a share of ONE device of a kind that splits into shares
(`fabric.kinds`: a GPU, in thousandths, 1 to 999), held beside other compositions on the
host the device is bound to; its `count` is 1, its model and minima apply as to whole
devices; more shares are more items. The console's form calls it "GPU share".

`devices` names devices exactly (a "specific composition"), by name or id (a number is an
id; a string a name, else an id when it is digits and no device has that name): whole devices,
or a `gib` slice of a CXL memory device (without `gib`, all of its free GiB when placed).
They come in addition to, or instead of, `items` and `memory_gib`.

`spec_normalise()` checks the shape only (types, ranges, known device kinds and policies)
and raises `SpecError` with `field` set to the part at fault (`items[0].count`,
`memory_gib`...), a `field_message` in the form's words for next to that field ("Count must
be at least 1.") and a `message` that stands alone ("Device item 1: count must be at least
1 (got -1)."). What needs the
database (does the model exist, is the host real, does the fabric have that many GPUs) is
checked by `composer.services.compositions`. Templates store a normalised spec too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import composer.placement.policies as policies
from composer.errors import SpecError
from composer.placement.request import DeviceItem, PinnedDevice, PlacementRequest
from fabric.kinds import find, plural, requestable, shares_per_device

__all__ = [
    "DEVICE_KINDS",
    "LIMITS",
    "MAX_DEVICES",
    "MAX_SHARE",
    "spec_normalise",
    "spec_to_request",
]

# The device kinds a request may name as items (`fabric.kinds`; CXL memory goes by GiB), as
# the API schema and the form list them.
DEVICE_KINDS = requestable()
MAX_ITEMS = 16
# The largest share an item may ask for (a GPU: 999 of its 1000 parts), as the API schema says.
MAX_SHARE = max((shares_per_device(name) for name in DEVICE_KINDS), default=1) - 1
MAX_DEVICES = 64  # devices one request may name
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
    "devices",
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


# How the console names each field in a message (the form's labels).
LABELS: dict[str, str] = {
    "items": "Devices",
    "memory_gib": "CXL memory",
    "storage_tb": "NVMe storage",
    "cores": "Host cores",
    "host_memory_gib": "Host memory",
    "host": "Host",
    "max_latency_ns": "Latency ceiling",
    "policy": "Failure-domain policy",
    "same_switch": "Same switch",
    "critical": "Critical",
    "self_heal": "Self-heal",
    "kind": "Kind",
    "model": "Model",
    "count": "Count",
    "minima": "Minimums",
    "devices": "Named devices",
    "device": "Device",
    "gib": "GiB",
    "share": "Share",
}
_ITEM = re.compile(r"^(items|devices)\[(\d+)\]")
_NOTHING = object()


def _label(field: str) -> str:
    """The words for `field`: "Count" for items[0].count, "Minimum memory (GiB)" for a
    minimum on memory_gib."""
    last = field.rsplit(".", 1)[-1]
    if ".minima." in field:
        return "Minimum memory (GiB)" if last == "memory_gib" else f"Minimum {last}"
    return LABELS.get(last, last)


def _error(field: str, text: str, got: Any = _NOTHING) -> SpecError:
    """A SpecError about `field`. `text` is what a form shows next to the field ("Count must
    be at least 1."); the message, for the API and logs, also names the device item and
    what was given ("Device item 1: count must be at least 1 (got -1).")."""
    message = text
    item = _ITEM.match(field)
    if item:
        what = "Device item" if item.group(1) == "items" else "Named device"
        message = f"{what} {int(item.group(2)) + 1}: {text[0].lower()}{text[1:]}"
    if got is not _NOTHING:
        shown = (
            f"{got:g}" if isinstance(got, int | float) and not isinstance(got, bool) else repr(got)
        )
        message = f"{message.rstrip('.')} (got {shown})."
    return SpecError(message, field=field, field_message=text)


def _number(value: Any, field: str, *, whole: bool, maximum: float, minimum: float = 0) -> Any:
    """`value` as an int (`whole`) or float within [minimum, maximum], else SpecError."""
    label = _label(field)
    kind = "a whole number" if whole else "a number"
    if isinstance(value, bool) or value is None:
        raise _error(field, f"{label} must be {kind}.", value)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if whole and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise _error(field, f"{label} must be {kind}.", value) from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise _error(field, f"{label} must be {kind}.", value)
    if whole:
        if value != int(value):
            raise _error(field, f"{label} must be a whole number.", value)
        value = int(value)
    if value < minimum:
        raise _error(field, f"{label} must be at least {minimum:g}.", value)
    if value > maximum:
        raise _error(field, f"{label} must be at most {maximum:,.0f}.", value)
    return value


def _flag(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1, "true", "false", "0", "1"):
        return value in (1, "true", "1")
    raise _error(field, f"{_label(field)} must be true or false.", value)


def _item(raw: Any, index: int) -> dict[str, Any]:
    where = f"items[{index}]"
    if not isinstance(raw, Mapping):
        raise _error(where, "A device item is an object with a kind and a count.")
    unknown = sorted(set(raw) - {"kind", "model", "count", "minima", "share"})
    if unknown:
        raise _error(
            where,
            f"Unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: a device item "
            "has kind, model, count, minima and share.",
        )
    kind = raw.get("kind")
    declared = find(kind) if isinstance(kind, str) else None
    if declared is not None and not declared.requestable:
        raise _error(
            f"{where}.kind", f"{declared.label} is asked for in GiB (memory_gib), not as devices."
        )
    if kind in (None, ""):
        raise _error(f"{where}.kind", "Choose the kind of device.")
    if kind not in requestable():
        kinds = requestable()
        raise _error(f"{where}.kind", f"Kind must be one of {', '.join(kinds)}.", kind)
    model = raw.get("model") or None
    if model is not None and (not isinstance(model, str) or len(model) > 100):
        raise _error(f"{where}.model", "Model must be a model name of at most 100 characters.")
    count = _number(
        raw.get("count", 1), f"{where}.count", whole=True, minimum=1, maximum=LIMITS["count"]
    )
    minima_raw = raw.get("minima") or {}
    if not isinstance(minima_raw, Mapping):
        raise _error(f"{where}.minima", "Minimums map attribute names to numbers.")
    minima = {
        str(name): _number(value, f"{where}.minima.{name}", whole=False, maximum=LIMITS["minimum"])
        for name, value in minima_raw.items()
    }
    item: dict[str, Any] = {
        "kind": kind,
        "model": model.strip() if model else None,
        "count": count,
        "minima": minima,
    }
    share = raw.get("share")
    if share not in (None, ""):
        item["share"] = _share(share, kind, count, where)
    return item


def _share(raw: Any, kind: str, count: int, where: str) -> int:
    """A device item's `share`: 1 to the kind's shares less one, of ONE device."""
    whole = shares_per_device(kind)
    declared = find(kind)
    if not whole or declared is None:
        shared = ", ".join(plural(name) for name in requestable() if shares_per_device(name))
        raise _error(
            f"{where}.share",
            f"Shares are of {shared or 'no kind'} only; {plural(kind)} are taken whole: ask "
            "for them with count.",
        )
    share = _number(raw, f"{where}.share", whole=True, minimum=1, maximum=LIMITS["count"] * whole)
    if share >= whole:
        raise _error(
            f"{where}.share",
            f"A share is 1 to {whole - 1} thousandths of one {declared.label}; {whole} or more "
            f"is whole {declared.plural}: ask for them with count.",
            share,
        )
    if count != 1:
        raise _error(
            f"{where}.count",
            f"Count must be 1 with a share: a share is part of one {declared.label}; ask for "
            "more shares as more items.",
            count,
        )
    return int(share)


def _pin(raw: Any, index: int) -> dict[str, Any]:
    """One named device: {"device": name or id, "gib": GiB of a memory device or None}."""
    where = f"devices[{index}]"
    if not isinstance(raw, Mapping):
        raise _error(where, 'A named device is an object such as {"device": "gpu-03"}.')
    unknown = sorted(set(raw) - {"device", "gib"})
    if unknown:
        raise _error(
            where,
            f"Unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))}: a "
            "named device has device and gib.",
        )
    device = raw.get("device")
    if isinstance(device, str):
        device = device.strip()
    if device in (None, "") or isinstance(device, bool) or not isinstance(device, int | str):
        raise _error(f"{where}.device", "Device must be a device name or id.", device)
    if isinstance(device, str) and len(device) > 200:
        raise _error(f"{where}.device", "Device must be a name of at most 200 characters.")
    if isinstance(device, int) and not 1 <= device < 2**63:
        raise _error(f"{where}.device", "A device id is a whole number from 1.", device)
    gib = raw.get("gib")
    if gib not in (None, ""):
        gib = _number(gib, f"{where}.gib", whole=True, minimum=1, maximum=LIMITS["memory_gib"])
    return {"device": device, "gib": gib if gib not in (None, "") else None}


def _pins(raw: Any) -> list[dict[str, Any]]:
    """The named devices, each once."""
    if raw in (None, ""):
        return []
    if not isinstance(raw, list | tuple):
        raise _error("devices", 'Named devices are a list such as [{"device": "gpu-03"}].')
    if len(raw) > MAX_DEVICES:
        raise _error("devices", f"At most {MAX_DEVICES} named devices.", len(raw))
    pins = [_pin(item, i) for i, item in enumerate(raw)]
    seen: set[str] = set()
    for index, pin in enumerate(pins):
        key = str(pin["device"])
        if key in seen:
            raise _error(f"devices[{index}].device", f"Device {key} is named twice.")
        seen.add(key)
    return pins


def spec_normalise(raw: Any) -> dict[str, Any]:
    """The spec with every key present, numbers as numbers; SpecError (with `field`) if bad."""
    if not isinstance(raw, Mapping):
        raise SpecError("The request must be an object.", field="spec")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise SpecError(
            f"Unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))}; "
            f"a request has {', '.join(KEYS)}.",
            field=str(unknown[0]),
        )
    items_raw = raw.get("items") or []
    if not isinstance(items_raw, list | tuple):
        raise _error("items", "Devices are a list of items, each with a kind and a count.")
    if len(items_raw) > MAX_ITEMS:
        raise _error("items", f"At most {MAX_ITEMS} device items.", len(items_raw))
    spec: dict[str, Any] = {"items": [_item(item, i) for i, item in enumerate(items_raw)]}
    spec["devices"] = _pins(raw.get("devices"))
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
        raise _error("host", "Host must be a host name or id.", host)
    else:
        spec["host"] = host.strip() if isinstance(host, str) else host
    policy = raw.get("policy") or "none"
    if policy not in policies.NAMES:
        raise _error(
            "policy", f"Failure-domain policy must be one of {', '.join(policies.NAMES)}.", policy
        )
    spec["policy"] = policy
    spec["same_switch"] = _flag(raw.get("same_switch", False), "same_switch")
    same = policies.SAME_SWITCH
    chosen = policies.named(policy)
    counts = [i["count"] for i in spec["items"]]
    if spec["same_switch"] and same.clashing_item(chosen, counts) is not None:
        # One switch for all, one switch per device: no plan can meet both.
        raise _error("policy", same.conflict_words(chosen))
    spec["critical"] = _flag(raw.get("critical", False), "critical")
    # Opt-in: when a device of the composition fails, a heal job replaces it from the same
    # pool under the same policy (composer.services.heal). Not a placement constraint.
    spec["self_heal"] = _flag(raw.get("self_heal", False), "self_heal")
    if (
        not (spec["items"] or spec["devices"] or spec["memory_gib"] or spec["storage_tb"])
        and not spec["cores"]
        and not (spec["host_memory_gib"])
    ):
        raise SpecError(
            "The request asks for nothing: add devices, memory, storage or cores.", field="items"
        )
    return spec


def spec_to_request(
    spec: Mapping[str, Any],
    *,
    host: str | None,
    tenant: str | None,
    tenant_hosts: frozenset[str] = frozenset(),
    pinned: tuple[PinnedDevice, ...] = (),
) -> PlacementRequest:
    """The placement engine's request for a normalised `spec`; `host` is the snapshot id
    ("host:<pk>") of the asked-for host, resolved by the caller; `tenant_hosts` those the
    tenant's live compositions are on (a spreading request goes elsewhere first); `pinned`
    the spec's named devices, resolved by the caller."""
    return PlacementRequest(
        items=tuple(
            DeviceItem(
                kind=item["kind"],
                count=item["count"],
                model=item["model"],
                minima=dict(item["minima"]),
                share=item.get("share"),
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
        tenant_hosts=tenant_hosts,
        pinned=pinned,
    )
