"""Checking a resize's input (rule 4), what it does to the composition's request, and its
quotas. Each failure raises a ComposerError subclass naming the field as the `add` and
`remove` lists were sent (`add[1].count`, `remove[0]`), before anything is written.

An entry of `add` is a device item as a request has it (`composer.specs`: kind, model,
count, minima; `share` for a share of one GPU), or an amount of a kind handed out in GiB
slices (CXL memory: `{"kind": "cxl_memory", "gib": 256}`). `remove` lists the ids of the
allocations (devices, slices, shares) the composition gives back.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from composer.errors import QuotaExceeded, SpecError
from composer.models import Allocation, Composition, Quota, Tenant
from composer.selectors.quotas import quota_usage
from composer.services.composition_checks import composition_check_fabric
from composer.services.resize.common import ResizeAsk
from composer.specs import LIMITS, MAX_DEVICES, MAX_ITEMS, spec_normalise
from fabric.kinds import all_kinds, find, shares_per_device

__all__ = [
    "ADD_KINDS",
    "resize_check_fabric",
    "resize_check_quotas",
    "resize_normalise",
    "resize_removals",
    "spec_resized",
]

# What `add` may name: the kinds asked for as devices, then those added as GiB.
ADD_KINDS = tuple(
    [k.name for k in all_kinds() if k.requestable] + [k.name for k in all_kinds() if k.sliced]
)
LARGEST_ID = 2**63 - 1
_ITEM = re.compile(r"^items\[(\d+)\]")


def _error(field: str, text: str, index: int | None = None) -> SpecError:
    """A SpecError about `field`: `text` beside the field, the message naming the entry."""
    message = text if index is None else f"Item {index + 1} to add: {text[0].lower()}{text[1:]}"
    return SpecError(message, field=field, field_message=text)


def _gib(value: Any, field: str, index: int) -> int:
    """A whole number of GiB, 1 to the largest a request may ask for (text allowed, as a
    form sends it)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(field, "GiB must be a whole number.", index)
    if not 1 <= value <= LIMITS["memory_gib"]:
        raise _error(field, f"GiB must be from 1 to {LIMITS['memory_gib']:,.0f}.", index)
    return value


def _moved(exc: SpecError, index: int) -> SpecError:
    """A spec error about item 1 of a one-item spec, as one about `add[index]`."""
    field = _ITEM.sub(f"add[{index}]", exc.field or "") if exc.field else f"add[{index}]"
    if not field.startswith("add["):
        field = f"add[{index}]"
    message = exc.message.replace("Device item 1", f"Item {index + 1} to add", 1)
    return SpecError(message, field=field, field_message=exc.field_message)


def _additions(add: Any) -> tuple[list[dict[str, Any]], list[int], int, int | None]:
    if add in (None, ""):
        return [], [], 0, None
    if not isinstance(add, list | tuple):
        raise _error("add", 'What to add is a list such as [{"kind": "gpu", "count": 1}].')
    if len(add) > MAX_ITEMS:
        raise _error("add", f"At most {MAX_ITEMS} things to add at once.")
    items: list[dict[str, Any]] = []
    at: list[int] = []
    gib, memory_at = 0, None
    for index, raw in enumerate(add):
        where = f"add[{index}]"
        if not isinstance(raw, Mapping):
            raise _error(where, 'Each thing to add is an object such as {"kind": "gpu"}.', index)
        kind = raw.get("kind")
        declared = find(kind) if isinstance(kind, str) else None
        if declared is None or kind not in ADD_KINDS:
            text = (
                "Choose the kind of device."
                if kind in (None, "")
                else f"Kind must be one of {', '.join(ADD_KINDS)}."
            )
            raise _error(f"{where}.kind", text, index)
        if declared.sliced:
            unknown = sorted(map(str, set(raw) - {"kind", "gib"}))
            if unknown:
                raise _error(
                    where,
                    f"{declared.label} is added as an amount: kind and gib, not "
                    f"{', '.join(unknown)}.",
                    index,
                )
            gib += _gib(raw.get("gib"), f"{where}.gib", index)
            memory_at = index if memory_at is None else memory_at
            continue
        if raw.get("gib") not in (None, ""):
            raise _error(
                f"{where}.gib",
                f"GiB is for CXL memory; {declared.plural} are added with count.",
                index,
            )
        try:
            clean = spec_normalise({"items": [{k: v for k, v in raw.items() if k != "gib"}]})
        except SpecError as exc:
            raise _moved(exc, index) from None
        items.append(clean["items"][0])
        at.append(index)
    if gib > LIMITS["memory_gib"]:
        raise _error(f"add[{memory_at}].gib", f"At most {LIMITS['memory_gib']:,.0f} GiB at once.")
    return items, at, gib, memory_at


def _removals(remove: Any) -> list[int]:
    if remove in (None, ""):
        return []
    if not isinstance(remove, list | tuple):
        raise SpecError(
            "What to remove is a list of allocation ids such as [12, 13].", field="remove"
        )
    if len(remove) > MAX_DEVICES:
        raise SpecError(f"At most {MAX_DEVICES} devices to remove at once.", field="remove")
    ids: list[int] = []
    for index, value in enumerate(remove):
        where = f"remove[{index}]"
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LARGEST_ID:
            raise SpecError(
                f"Device {index + 1} to remove: give the id of its allocation, a whole number "
                f"from 1 (got {value!r}).",
                field=where,
                field_message="An allocation id is a whole number from 1.",
            )
        if value in ids:
            raise SpecError(f"Allocation {value} is named twice.", field=where)
        ids.append(value)
    return ids


def resize_normalise(*, add: Any, remove: Any) -> ResizeAsk:
    """`add` and `remove` with their shape checked (types, ranges, known kinds, each
    allocation once); SpecError naming the entry at fault. What needs the database (does
    the composition hold that allocation, does the fabric have that model) is checked by
    `resize_removals` and `resize_check_fabric`."""
    items, at, gib, memory_at = _additions(add)
    ids = _removals(remove)
    if not items and not gib and not ids:
        raise SpecError(
            "The resize changes nothing: add devices or memory, or choose devices to remove.",
            field="add",
        )
    return ResizeAsk(tuple(items), tuple(at), gib, memory_at, tuple(ids))


def resize_removals(composition: Composition, ask: ResizeAsk) -> list[Allocation]:
    """The allocations `ask` removes, each one `composition` holds now (with its device);
    SpecError naming the entry that is not, and when nothing would be left (that is a
    decompose)."""
    held = {
        a.pk: a
        for a in Allocation.objects.select_related("device", "device__pool").filter(
            composition=composition, released_at__isnull=True
        )
    }
    for index, pk in enumerate(ask.remove):
        if pk not in held:
            raise SpecError(
                f"{composition.name} holds nothing as allocation {pk} now.",
                field=f"remove[{index}]",
                field_message="Not a device this composition holds now.",
            )
    if held and len(ask.remove) == len(held) and not ask.adds:
        raise SpecError(
            f"That removes every device {composition.name} holds: decompose it instead.",
            field="remove",
        )
    return [held[pk] for pk in ask.remove]


def _fabric_field(field: str | None, ask: ResizeAsk) -> str:
    match = _ITEM.match(field or "")
    if match:
        return _ITEM.sub(f"add[{ask.item_at[int(match.group(1))]}]", field or "")
    if field == "memory_gib" and ask.memory_at is not None:
        return f"add[{ask.memory_at}].gib"
    return "add"


def resize_check_fabric(ask: ResizeAsk) -> None:
    """SpecError for additions the fabric can never satisfy (an unknown model, more than
    it holds), naming the entry (`composer.services.composition_checks`)."""
    if not ask.adds:
        return
    try:
        composition_check_fabric(
            spec=spec_normalise({"items": list(ask.items), "memory_gib": ask.memory_gib})
        )
    except SpecError as exc:
        raise SpecError(
            exc.message, field=_fabric_field(exc.field, ask), field_message=exc.field_message
        ) from None


# --- the request after the resize -------------------------------------------------------------


def _pin_of(pins: list[dict[str, Any]], allocation: Allocation) -> dict[str, Any] | None:
    """The spec's named device that `allocation` was placed for, if any."""
    device = allocation.device
    for pin in pins:
        named = pin.get("device")
        same = named == device.name or named == device.pk or str(named) == str(device.pk)
        if same and (allocation.gib is None or pin.get("gib") in (None, allocation.gib)):
            return pin
    return None


def _drop_share(items: list[dict[str, Any]], allocation: Allocation) -> None:
    """Take the share items `allocation` held out of `items` (two share items may have
    landed on one GPU: the allocation holds their sum)."""
    kind = allocation.device.kind
    exact = next(
        (i for i in items if i["kind"] == kind and i.get("share") == allocation.share), None
    )
    if exact is not None:
        items.remove(exact)
        return
    left = allocation.share or 0
    for item in [i for i in items if i["kind"] == kind and i.get("share")]:
        if left <= 0:
            break
        items.remove(item)
        left -= item["share"]


def _drop_device(items: list[dict[str, Any]], allocation: Allocation) -> None:
    """One device fewer of the item `allocation`'s device was placed for (its model's item
    first, else one of any model); an item left with none goes."""
    device = allocation.device
    whole = [i for i in items if i["kind"] == device.kind and i.get("share") is None]
    item = next((i for i in whole if i["model"] == device.model), None) or next(
        (i for i in whole if i["model"] is None), None
    )
    if item is None:
        return
    item["count"] -= 1
    if item["count"] <= 0:
        items.remove(item)


def spec_resized(
    spec: Mapping[str, Any], ask: ResizeAsk, removed: Sequence[Allocation]
) -> dict[str, Any]:
    """The composition's request once resized (normalised): what is removed taken out of
    its items, named devices and memory, what is added put in (more of an item it has, or
    new items, more GiB). SpecError (field `add`, or `remove` when nothing is added) when
    the result is no valid request (too many items, a policy it breaks)."""
    new: dict[str, Any] = copy.deepcopy(dict(spec))
    items: list[dict[str, Any]] = list(new.get("items") or [])
    pins: list[dict[str, Any]] = list(new.get("devices") or [])
    memory = int(new.get("memory_gib") or 0)
    for allocation in removed:
        pin = _pin_of(pins, allocation)
        if pin is not None:
            pins.remove(pin)
        elif allocation.gib:
            memory = max(0, memory - allocation.gib)
        elif allocation.share:
            _drop_share(items, allocation)
        else:
            _drop_device(items, allocation)
    for item in ask.items:
        same = next(
            (
                i
                for i in items
                if item.get("share") is None
                and i.get("share") is None
                and (i["kind"], i["model"], i["minima"])
                == (item["kind"], item["model"], item["minima"])
            ),
            None,
        )
        if same is not None:
            same["count"] += item["count"]
        else:
            items.append(dict(item))
    new.update(items=items, devices=pins, memory_gib=memory + ask.memory_gib)
    try:
        return spec_normalise(new)
    except SpecError as exc:
        raise SpecError(
            f"After this resize the composition's request would not be valid: {exc.message}",
            field="add" if ask.adds else "remove",
        ) from None


# --- quotas ------------------------------------------------------------------------------------


def _fraction(kind: str, share: int | None, count: int) -> float:
    """What an item or allocation counts against a device quota: a share as its fraction."""
    return share / shares_per_device(kind) if share else count


def resize_check_quotas(*, tenant: Tenant, ask: ResizeAsk, removed: Sequence[Allocation]) -> None:
    """QuotaExceeded naming the quota, the excess and the entry of `add` at fault when what
    the resize adds, less what it gives back, takes `tenant` past a quota (the count every
    request is held to: `composer.selectors.quotas.quota_usage`). A resize that adds
    nothing a quota limits is never refused by it."""
    quotas = list(Quota.objects.filter(tenant=tenant))
    if not quotas or not ask.adds:
        return
    usage = quota_usage(quotas)
    for quota in quotas:
        used = usage[quota.pk]
        declared = find(quota.kind)
        limits = declared.quota if declared else ("count",)
        checks: list[tuple[float, float, float, float, str, str]] = []

        def counts(kind: str, model: str | None, quota: Quota = quota) -> bool:
            return kind == quota.kind and (not quota.model or model == quota.model)

        if quota.max_count is not None:
            asked: float = 0
            field = ""
            for index, item in enumerate(ask.items):
                if counts(item["kind"], item["model"]):
                    asked += _fraction(item["kind"], item.get("share"), item["count"])
                    part = "share" if item.get("share") else "count"
                    field = field or f"add[{ask.item_at[index]}].{part}"
            freed = sum(
                _fraction(a.device.kind, a.share, 1)
                for a in removed
                if a.gib is None and counts(a.device.kind, a.device.model)
            )
            checks.append((quota.max_count, used["count"], asked, freed, "", field))
        if quota.max_memory_gib is not None and "gib" in limits and ask.memory_at is not None:
            freed = sum(a.gib or 0 for a in removed if a.device.kind == quota.kind)
            field = f"add[{ask.memory_at}].gib"
            checks.append(
                (quota.max_memory_gib, used["memory_gib"], ask.memory_gib, freed, " GiB", field)
            )
        for limit, current, more, less, unit, field in checks:
            after = round(current + more - less, 3)
            if more and after > limit:
                back = f", {round(less, 3):g}{unit} given back" if less else ""
                raise QuotaExceeded(
                    f"Over the {quota.label} quota of {tenant.name} by "
                    f"{round(after - limit, 3):g}{unit}: {limit:g}{unit} allowed, "
                    f"{current:g}{unit} in use, {round(more, 3):g}{unit} asked{back}.",
                    field=field,
                )
